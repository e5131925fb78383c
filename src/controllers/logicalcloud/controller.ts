// The logical cloud controller (EMCO's DCM: core, user, namespace and quota modules, CA controller): for
// each member cluster a ResourceSync `<logicalcloud>-<cluster>` (owned by the logical cloud) that delivers
// and keeps the namespace, quota, users' roles and shared trust there — the synchroniser applies, retries,
// corrects and prunes; this controller decides what and where. It also keeps the logical cloud's CA (an
// intermediate under the namespace's root, `slipway-mesh-root-ca`) and each user's kubeconfig Secret
// with a certificate signed by every member cluster. A cluster that leaves the members loses its
// ResourceSync (which prunes everything made there, the users' bindings with it) and its contexts in
// the kubeconfigs; deleting the logical cloud deletes every ResourceSync and waits for them to be gone.
import type { ClusterObject, SecretObject } from "../../api/kinds.ts";
import { secretKind } from "../../api/core.ts";
import type { KubeObject } from "../../api/meta.ts";
import { createIfAbsent, deleteIfPresent } from "../../api/presence.ts";
import { clusterKind, isRegistered } from "../../api/slipway/cluster.ts";
import { FINALIZER_LOGICALCLOUD, LABEL_LOGICALCLOUD, logicalCloudKind, userKubeconfigSecret, type LogicalCloudObject, type LogicalCloudStatus, type MemberStatus } from "../../api/slipway/logicalcloud.ts";
import { names } from "../../api/slipway/names.ts";
import { SLIPWAY_API_VERSION } from "../../api/slipway/group.ts";
import { resourceSyncKind, type ResourceSyncObject } from "../../api/slipway/resourcesync.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { KubeconfigError, parseKubeconfig } from "../../bootstrap/kubeconfig.ts";
import { createCertificateAuthority, createIntermediateCertificateAuthority, type KeyPairPem } from "../../bootstrap/pki.ts";
import type { ObjectCache } from "../../runtime/cache.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { Controller, ReconcileContext } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler, type Phase, type Scope } from "../../runtime/reconciler.ts";
import { stringify } from "yaml";
import { controllerRef } from "../contract.ts";
import { clusterTargets, type ClusterTarget } from "../targets.ts";
import { workloadProblem, type WorkloadClients } from "../workload.ts";
import { CertificateNotIssuedError, issueThroughCluster, readCredentials, stillGood, userKubeconfig, type ClusterAddress, type IssuedCredential } from "./credentials.ts";
import { meshCaManifest, memberManifests, type MeshCa } from "./manifests.ts";

export const LOGICALCLOUD_COMPONENT = "slipway.dev/logicalcloud-controller";
export const ROOT_CA_SECRET = "slipway-mesh-root-ca";
const LABEL_USER = "slipway.dev/logicalcloud-user";

export interface LogicalCloudDeps {
  workloads: WorkloadClients;
}

interface CloudScope extends Scope<LogicalCloudObject> {
  clusters: ObjectCache<ClusterObject>;
  syncs: ObjectCache<ResourceSyncObject>;
}

const secretsOf = (ctx: ReconcileContext) => ctx.client.of<SecretObject>(secretKind);
const syncsOf = (ctx: ReconcileContext) => ctx.client.of<ResourceSyncObject>(resourceSyncKind);
const b64 = (text: string) => Buffer.from(text).toString("base64");
const unb64 = (text: string | undefined) => Buffer.from(text ?? "", "base64").toString("utf8");

export function memberSyncName(cloud: LogicalCloudObject, cluster: string): string {
  return `${cloud.metadata.name}-${cluster}`;
}

function labelsOf(cloud: LogicalCloudObject, extra: Record<string, string> = {}): Record<string, string> {
  return { [LABEL_LOGICALCLOUD]: cloud.metadata.name!, ...extra };
}

/** A Secret of the CA kind (tls.crt, tls.key), made once. */
async function caSecret(ctx: ReconcileContext, namespace: string, name: string, make: () => Promise<KeyPairPem>, meta: Partial<KubeObject["metadata"]>): Promise<KeyPairPem> {
  const existing = await secretsOf(ctx).tryGet(namespace, name);
  if (existing?.data?.["tls.crt"] && existing.data["tls.key"]) return { certPem: unb64(existing.data["tls.crt"]), keyPem: unb64(existing.data["tls.key"]) };
  const pair = await make();
  const secret = { apiVersion: "v1", kind: "Secret", metadata: { name, namespace, ...meta }, type: "kubernetes.io/tls", data: { "tls.crt": b64(pair.certPem), "tls.key": b64(pair.keyPem) } } as SecretObject;
  const created = await createIfAbsent(() => secretsOf(ctx).create(secret));
  if (created) return pair;
  // Another reconcile made it first: use theirs.
  const theirs = await secretsOf(ctx).get(namespace, name);
  return { certPem: unb64(theirs.data?.["tls.crt"]), keyPem: unb64(theirs.data?.["tls.key"]) };
}

/** The logical cloud's intermediate CA under the namespace's root (both made on first use). */
async function meshCa(ctx: ReconcileContext, cloud: LogicalCloudObject): Promise<MeshCa> {
  const namespace = cloud.metadata.namespace!;
  const root = await caSecret(ctx, namespace, ROOT_CA_SECRET, () => createCertificateAuthority({ commonName: `slipway-mesh-root-${namespace}`, organization: "slipway" }), {
    labels: { "app.kubernetes.io/managed-by": "slipway" },
  });
  const intermediate = await caSecret(
    ctx,
    namespace,
    `${cloud.metadata.name}-mesh-ca`,
    () => createIntermediateCertificateAuthority(root, { commonName: `${cloud.metadata.name}.logicalcloud.local`, organization: "slipway" }),
    { labels: labelsOf(cloud), ownerReferences: [controllerRef(cloud)] },
  );
  return { intermediate, rootCertPem: root.certPem };
}

/** Creates or updates a Secret of the logical cloud's (owned by it) with this data. */
async function putSecret(ctx: ReconcileContext, cloud: LogicalCloudObject, name: string, data: Record<string, string>, labels: Record<string, string>): Promise<boolean> {
  const secrets = secretsOf(ctx);
  const existing = await secrets.tryGet(cloud.metadata.namespace, name);
  if (existing && JSON.stringify(existing.data ?? {}) === JSON.stringify(data)) return false;
  if (existing) await secrets.update({ ...existing, data } as SecretObject);
  else {
    const secret = { apiVersion: "v1", kind: "Secret", metadata: { name, namespace: cloud.metadata.namespace, labels: { ...labelsOf(cloud), ...labels }, ownerReferences: [controllerRef(cloud)] }, type: "Opaque", data } as SecretObject;
    await createIfAbsent(() => secrets.create(secret));
  }
  return true;
}

/** The address and CA of a member, from its admin kubeconfig (or its registration's); undefined while there is none. */
async function addressOf(ctx: ReconcileContext, cluster: ClusterObject): Promise<ClusterAddress | undefined> {
  const ref = cluster.spec.registration?.kubeconfigSecretRef;
  const secret = await secretsOf(ctx).tryGet(cluster.metadata.namespace, ref ? ref.name : names.kubeconfigSecret(cluster.metadata.name!));
  const text = secret?.data?.[ref ? (ref.key ?? "value") : "value"];
  if (!text) return undefined;
  const c = parseKubeconfig(unb64(text));
  return { server: c.server, caCertPem: c.caCertPem, ...(c.tlsServerName ? { tlsServerName: c.tlsServerName } : {}) };
}

/** Whether the member's ResourceSync holds the current set there. */
function syncState(sync: ResourceSyncObject | undefined, cluster: string): { applied: boolean; message?: string; resources: NonNullable<MemberStatus["resources"]> } {
  const entry = sync?.status?.clusters?.find((c) => c.name === cluster);
  const resources = (entry?.resources ?? []).map((r) => ({ kind: r.kind, ...(r.namespace ? { namespace: r.namespace } : {}), name: r.name, state: r.state, ...(r.message ? { message: r.message } : {}) }));
  const current = sync !== undefined && sync.status?.observedGeneration === sync.metadata.generation && entry?.appliedGeneration === sync.metadata.generation;
  const applied = current && (entry?.state === "Applied" || entry?.state === "Drifted");
  return { applied, ...(entry?.message ? { message: entry.message } : entry ? {} : { message: "waiting for the synchroniser" }), resources };
}

class LogicalClouds {
  constructor(private readonly deps: LogicalCloudDeps) {}

  readonly instantiate: Phase<CloudScope> = async (ctx, scope) => {
    const cloud = scope.object;
    const status: LogicalCloudStatus = (cloud.status ??= {});
    const namespace = cloud.metadata.namespace!;
    const at = nowTimestamp(new Date(ctx.clock.now()));
    const targets = clusterTargets(namespace, cloud.spec, scope.clusters.list());
    const ca = await meshCa(ctx, cloud);
    status.caSecret = `${cloud.metadata.name}-mesh-ca`;
    const meshSource = `${cloud.metadata.name}-mesh-manifests`;
    await putSecret(ctx, cloud, meshSource, { "cacerts.yaml": b64(stringify(meshCaManifest(cloud, ca))) }, {});

    // Where each member answers: its kubeconfig's address (the hosts are the DNS forwarders of the others).
    const addresses = new Map<string, ClusterAddress>();
    const problems = new Map<string, string>();
    for (const target of targets) {
      if (!target.cluster) {
        problems.set(target.name, `${target.field}: cluster ${target.name} does not exist in namespace ${namespace}`);
        continue;
      }
      try {
        const address = await addressOf(ctx, target.cluster);
        if (address) addresses.set(target.name, address);
        else problems.set(target.name, isRegistered(target.cluster) ? "the registered cluster's kubeconfig Secret does not exist" : "waiting for the cluster's API (no kubeconfig yet)");
      } catch (error) {
        if (!(error instanceof KubeconfigError)) throw error;
        problems.set(target.name, `the cluster's kubeconfig cannot be read: ${error.message}`);
      }
    }
    const hostOf = (address: ClusterAddress) => address.tlsServerName ?? new URL(address.server).hostname;

    // One ResourceSync per member; those of clusters no longer members go (and prune).
    const owned = scope.syncs.list().filter((s) => s.metadata.namespace === namespace && s.metadata.labels?.[LABEL_LOGICALCLOUD] === cloud.metadata.name);
    const members = targets.filter((t): t is ClusterTarget & { cluster: ClusterObject } => t.cluster !== undefined);
    for (const member of members) {
      const others = members.filter((m) => m.name !== member.name && addresses.has(m.name)).map((m) => hostOf(addresses.get(m.name)!));
      const spec: ResourceSyncObject["spec"] = {
        clusters: [{ name: member.name }],
        resources: memberManifests(cloud, ca, others) as unknown as NonNullable<ResourceSyncObject["spec"]["resources"]>,
        resourcesFrom: [{ kind: "Secret", name: meshSource }],
      };
      const name = memberSyncName(cloud, member.name);
      const existing = owned.find((s) => s.metadata.name === name);
      if (!existing) {
        const sync = { apiVersion: SLIPWAY_API_VERSION, kind: "ResourceSync", metadata: { name, namespace, labels: labelsOf(cloud), ownerReferences: [controllerRef(cloud)] }, spec } as ResourceSyncObject;
        await createIfAbsent(() => syncsOf(ctx).create(sync));
      } else if (JSON.stringify(existing.spec) !== JSON.stringify({ ...existing.spec, ...spec })) {
        await syncsOf(ctx).update({ ...existing, spec: { ...existing.spec, ...spec } } as ResourceSyncObject);
      }
    }
    const memberNames = new Set(members.map((m) => m.name));
    for (const sync of owned) {
      const cluster = sync.spec.clusters?.[0]?.name;
      if (cluster && !memberNames.has(cluster) && !sync.metadata.deletionTimestamp) await deleteIfPresent(() => syncsOf(ctx).delete(namespace, sync.metadata.name!));
    }

    // Each user: a certificate from every member that has an address, in one kubeconfig.
    const issued = new Map<string, Set<string>>();
    for (const user of cloud.spec.users ?? []) {
      const secretName = userKubeconfigSecret(cloud.metadata.name!, user.name);
      const existing = await secretsOf(ctx).tryGet(namespace, secretName);
      const previous = readCredentials(existing?.data?.value ? unb64(existing.data.value) : undefined, members.map((m) => m.name));
      const credentials: IssuedCredential[] = [];
      for (const member of members) {
        const address = addresses.get(member.name);
        if (!address) continue;
        const kept = previous.get(member.name);
        if (kept && stillGood(kept, address, ctx.clock.now())) {
          credentials.push(kept);
          continue;
        }
        try {
          const client = await this.deps.workloads.forClusterObject(member.cluster);
          if (!client) continue;
          const pair = await issueThroughCluster(client, `slipway-${cloud.metadata.name}-${user.name}`, user.name, [`slipway:logicalcloud:${cloud.metadata.name}`]);
          credentials.push({ cluster: member.name, address, ...pair });
          await ctx.event(cloud, "Normal", "CertificateIssued", `user ${user.name}: cluster ${member.name} signed a client certificate`);
        } catch (error) {
          const why = error instanceof CertificateNotIssuedError ? error.message : workloadProblem(error);
          if (why === undefined) throw error;
          problems.set(member.name, `issuing user ${user.name}'s certificate: ${why}`);
        }
      }
      issued.set(user.name, new Set(credentials.map((c) => c.cluster)));
      const changed = await putSecret(ctx, cloud, secretName, { value: b64(userKubeconfig(user.name, cloud.spec.namespace, credentials)) }, { [LABEL_USER]: user.name });
      if (changed && existing) await ctx.event(cloud, "Normal", "KubeconfigUpdated", `user ${user.name}: kubeconfig in Secret ${secretName} has contexts for ${[...issued.get(user.name)!].join(", ") || "no cluster yet"}`);
    }
    // Users removed from the spec lose their kubeconfig (their bindings go with the ResourceSyncs' pruning).
    const users = new Set((cloud.spec.users ?? []).map((u) => u.name));
    const userSecrets = (await secretsOf(ctx).list(namespace, { labelSelector: `${LABEL_LOGICALCLOUD}=${cloud.metadata.name},${LABEL_USER}` })).items;
    for (const secret of userSecrets) {
      if (!users.has(secret.metadata.labels?.[LABEL_USER] ?? "")) await deleteIfPresent(() => secretsOf(ctx).delete(namespace, secret.metadata.name!));
    }

    // Status: per member what the synchroniser says and whose certificates it has.
    const memberStatus: MemberStatus[] = targets.map((target) => {
      const sync = scope.syncs.get(keyFor(namespace, memberSyncName(cloud, target.name)));
      const state = syncState(sync, target.name);
      const missing = [...users].filter((u) => !issued.get(u)?.has(target.name));
      const problem = problems.get(target.name);
      if (problem && !target.cluster) return { name: target.name, state: "Failed", message: problem };
      if (state.applied && missing.length === 0 && !problem) return { name: target.name, state: "Ready", resources: state.resources };
      const message = problem ?? state.message ?? (missing.length > 0 ? `no certificate yet for ${missing.join(", ")}` : "applying");
      const failed = problem !== undefined || sync?.status?.clusters?.find((c) => c.name === target.name)?.state === "Failed";
      return { name: target.name, state: failed ? "Failed" : "Pending", message, resources: state.resources };
    });
    for (const sync of owned) {
      const cluster = sync.spec.clusters?.[0]?.name;
      if (cluster && !memberNames.has(cluster)) memberStatus.push({ name: cluster, state: "Removing", message: "pruning what the logical cloud made there" });
    }
    status.clusters = memberStatus;
    status.totalClusters = targets.length;
    status.readyClusters = memberStatus.filter((m) => m.state === "Ready").length;
    status.users = (cloud.spec.users ?? []).map((u) => ({ name: u.name, kubeconfigSecret: userKubeconfigSecret(cloud.metadata.name!, u.name), clusters: [...(issued.get(u.name) ?? [])].sort() }));
    const failed = memberStatus.filter((m) => m.state === "Failed");
    const removing = memberStatus.some((m) => m.state === "Removing");
    if (targets.length === 0) {
      status.phase = "Pending";
      status.message = "no member cluster";
    } else if (status.readyClusters === targets.length && !removing) {
      status.phase = "Ready";
      delete status.message;
    } else {
      status.phase = failed.length > 0 ? "Degraded" : "Instantiating";
      status.message = failed.length > 0 ? failed.map((m) => `${m.name}: ${m.message}`).join("; ") : `${status.readyClusters} of ${targets.length} cluster(s) ready`;
    }
    setCondition(status, { type: "Ready", status: status.phase === "Ready" ? "True" : "False", reason: status.phase, message: status.message ?? `ready on ${targets.length} cluster(s)` }, at);
    return { requeueAfterMs: status.phase === "Ready" ? 60_000 : 2_000 };
  };

  readonly terminate: Phase<CloudScope> = async (ctx, scope) => {
    const cloud = scope.object;
    const status: LogicalCloudStatus = (cloud.status ??= {});
    status.phase = "Terminating";
    const namespace = cloud.metadata.namespace!;
    const owned = scope.syncs.list().filter((s) => s.metadata.namespace === namespace && s.metadata.labels?.[LABEL_LOGICALCLOUD] === cloud.metadata.name);
    for (const sync of owned) if (!sync.metadata.deletionTimestamp) await deleteIfPresent(() => syncsOf(ctx).delete(namespace, sync.metadata.name!));
    if (owned.length === 0) return;
    status.message = `removing what it made from ${owned.length} cluster(s)`;
    status.clusters = owned.map((s) => ({ name: s.spec.clusters?.[0]?.name ?? s.metadata.name!, state: "Removing", ...(s.status?.clusters?.[0]?.message ? { message: s.status.clusters[0].message } : {}) }));
    return { halt: true, requeueAfterMs: 2_000 };
  };
}

export function registerLogicalCloudController(manager: ControllerManager, deps: LogicalCloudDeps): Controller<LogicalCloudObject> {
  const clouds = manager.informer(logicalCloudKind);
  const clusters = manager.informer(clusterKind);
  const syncs = manager.informer(resourceSyncKind);
  const logic = new LogicalClouds(deps);
  const reconcile = objectReconciler<LogicalCloudObject, CloudScope>({
    kind: logicalCloudKind,
    cache: clouds.cache,
    finalizer: FINALIZER_LOGICALCLOUD,
    observedGeneration: true,
    scope: (_ctx, base) => ({ ...base, clusters: clusters.cache, syncs: syncs.cache }),
    phases: [logic.instantiate],
    deletePhases: [logic.terminate],
    afterStatusWrite: async (ctx, _scope, previous, written) => {
      const phase = written.status?.phase;
      if (phase === previous.status?.phase) return;
      if (phase === "Ready") await ctx.event(written, "Normal", "Instantiated", `ready on ${written.status?.totalClusters} cluster(s)`);
      if (phase === "Degraded") await ctx.event(written, "Warning", "Degraded", written.status?.message ?? "");
    },
  });
  const controller = manager.add<LogicalCloudObject>({ name: "logicalcloud", component: LOGICALCLOUD_COMPONENT, informer: clouds, reconcile, concurrency: 4 });
  controller.watch(syncs, (s) => {
    const cloud = s.metadata.labels?.[LABEL_LOGICALCLOUD];
    return cloud ? [keyFor(s.metadata.namespace, cloud)] : [];
  });
  const clusterView = (c: ClusterObject) => JSON.stringify([c.metadata.labels, c.metadata.deletionTimestamp, c.status?.phase, c.status?.kubeconfigSecretName]);
  controller.watch(
    clusters,
    (cluster) => clouds.cache.list().filter((c) => c.metadata.namespace === cluster.metadata.namespace).map((c) => keyFor(c.metadata.namespace, c.metadata.name!)),
    (previous, cluster) => clusterView(previous) !== clusterView(cluster),
  );
  return controller;
}
