// The identity controllers (after azimuth's identity operator and its cluster operator's part):
// - realm: makes the realm's keys and publishes its issuer URL;
// - oidcclient: registers the client in its realm (status.clientId, status.issuerUrl, the issuer's CA);
// - platform: names the platform's root group and binds it (and the realm's admin group) to cluster-admin
//   in the workload cluster, with a ClusterRoleBinding Slipway keeps there;
// - cluster-identity: a Cluster naming a realm gets an OIDCClient and a Platform of its name, made or
//   adopted (owned by the cluster, so they go with it). Its machines wait for the client (machine/bootstrap).
import type { ClusterObject } from "../../api/kinds.ts";
import type { KubeObject } from "../../api/meta.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import {
  OIDC_PREFIX,
  oidcClientKind,
  platformKind,
  platformRootGroup,
  realmKind,
  type OIDCClientObject,
  type PlatformObject,
  type RealmObject,
} from "../../api/slipway/realm.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { Applier } from "../../kubeclient/apply.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler, type Phase, type Scope } from "../../runtime/reconciler.ts";
import type { KindClient } from "../../runtime/client.ts";
import { ensureRealmKeys } from "../../realms/keys.ts";
import { oidcClientId, realmIssuerUrl } from "../../realms/issuer.ts";
import { controllerRef } from "../contract.ts";
import { workloadProblem, type WorkloadClients } from "../workload.ts";

export const REALM_COMPONENT = "slipway.dev/realm-controller";
/** The ClusterRoleBinding a platform keeps in its cluster. */
export const PLATFORM_BINDING = "slipway:platform-admins";

export interface RealmDeps {
  /** The control plane's URL, under which realms are served. */
  baseUrl: () => string;
  /** PEM of the CA the control plane's serving certificate is signed by. */
  caPem: string;
  workloads: WorkloadClients;
  pollMs?: number;
}

interface Status {
  phase?: "Pending" | "Ready" | "Failed";
  message?: string;
  conditions?: [];
}

/** Sets phase, message and the Ready condition of an identity object's status. */
function ready(ctx: ReconcileContext, object: KubeObject, phase: "Pending" | "Ready", reason: string, message: string): void {
  const status = (object.status ??= {}) as Status;
  status.phase = phase;
  if (phase === "Ready") delete status.message;
  else status.message = message;
  setCondition(status, { type: "Ready", status: phase === "Ready" ? "True" : "False", reason, message }, nowTimestamp(new Date(ctx.clock.now())));
}

function phaseEvents<T extends KubeObject>(what: string) {
  return async (ctx: ReconcileContext, _scope: Scope<T>, previous: T, written: T) => {
    const before = (previous.status as Status | undefined)?.phase;
    const after = (written.status as Status | undefined)?.phase;
    if (before !== after && after === "Ready") await ctx.event(written, "Normal", `${what}Ready`, `${what} is ready`);
  };
}

/** The keys of a kind's objects in the realm (to reconcile them when it changes). */
function inRealm<T extends KubeObject & { spec: { realm: string } }>(cache: { list(): readonly T[] }): (realm: RealmObject) => string[] {
  return (realm) =>
    cache
      .list()
      .filter((o) => o.spec.realm === realm.metadata.name)
      .map((o) => keyFor(o.metadata.namespace, o.metadata.name!));
}

export function registerRealmControllers(manager: ControllerManager, deps: RealmDeps): void {
  const pollMs = deps.pollMs ?? 1000;
  const realms = manager.informer(realmKind);
  const clients = manager.informer(oidcClientKind);
  const platforms = manager.informer(platformKind);
  const clusters = manager.informer(clusterKind);

  const realmPhase: Phase<Scope<RealmObject>> = async (ctx, scope) => {
    await ensureRealmKeys(ctx.client, scope.object);
    const status = (scope.object.status ??= {});
    status.issuerUrl = realmIssuerUrl(deps.baseUrl(), scope.object.metadata.name!);
    ready(ctx, scope.object, "Ready", "Serving", `issuer ${status.issuerUrl}`);
    // The keys are looked at again now and then (a Secret deleted by hand is made again).
    return { requeueAfterMs: 60_000, idle: true };
  };
  manager.add<RealmObject>({
    name: "realm",
    component: REALM_COMPONENT,
    informer: realms,
    reconcile: objectReconciler<RealmObject>({ kind: realmKind, cache: realms.cache, observedGeneration: true, phases: [realmPhase], afterStatusWrite: phaseEvents("Realm") }),
  });

  const clientPhase: Phase<Scope<OIDCClientObject>> = (ctx, scope) => {
    const client = scope.object;
    const realm = realms.cache.get(keyFor(undefined, client.spec.realm));
    if (!realm?.status?.issuerUrl) {
      ready(ctx, client, "Pending", "RealmNotReady", realm ? `realm ${client.spec.realm} is not ready yet` : `no Realm named ${client.spec.realm}`);
      return { requeueAfterMs: pollMs * 5 };
    }
    const status = (client.status ??= {});
    status.clientId = oidcClientId(client);
    status.issuerUrl = realm.status.issuerUrl;
    status.issuerCertificateAuthority = deps.caPem;
    ready(ctx, client, "Ready", "Registered", `client ${status.clientId} in realm ${client.spec.realm}`);
  };
  const clientController = manager.add<OIDCClientObject>({
    name: "oidcclient",
    component: REALM_COMPONENT,
    informer: clients,
    reconcile: objectReconciler<OIDCClientObject>({ kind: oidcClientKind, cache: clients.cache, observedGeneration: true, phases: [clientPhase], afterStatusWrite: phaseEvents("OIDCClient") }),
  });
  clientController.watch(realms, inRealm(clients.cache));

  const platformPhase: Phase<Scope<PlatformObject>> = async (ctx, scope) => {
    const platform = scope.object;
    const namespace = platform.metadata.namespace!;
    const realm = realms.cache.get(keyFor(undefined, platform.spec.realm));
    if (!realm) {
      ready(ctx, platform, "Pending", "RealmNotFound", `no Realm named ${platform.spec.realm}`);
      return { requeueAfterMs: pollMs * 5 };
    }
    const status = (platform.status ??= {});
    status.rootGroup = platformRootGroup(namespace, platform.spec.clusterName);
    const cluster = clusters.cache.get(keyFor(namespace, platform.spec.clusterName));
    if (!cluster || cluster.status?.phase !== "Running") {
      ready(ctx, platform, "Pending", "ClusterNotRunning", `cluster ${platform.spec.clusterName} is not running yet`);
      return { requeueAfterMs: pollMs * 2 };
    }
    const groups = [status.rootGroup, ...(realm.spec?.adminGroup ? [realm.spec.adminGroup] : [])];
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: PLATFORM_BINDING, labels: { "app.kubernetes.io/managed-by": "slipway" } },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: groups.map((g) => ({ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: `${OIDC_PREFIX}${g}` })),
    } as unknown as KubeObject;
    try {
      const workload = await deps.workloads.forClusterObject(cluster);
      if (!workload) {
        ready(ctx, platform, "Pending", "NoKubeconfig", `cluster ${platform.spec.clusterName} has no kubeconfig yet`);
        return { requeueAfterMs: pollMs * 2 };
      }
      await new Applier(workload, { fieldManager: "slipway-platform" }).apply(binding);
    } catch (error) {
      const why = workloadProblem(error);
      if (why === undefined) throw error;
      ready(ctx, platform, "Pending", "ClusterUnreachable", `binding the root group: ${why}`);
      return { requeueAfterMs: pollMs * 5 };
    }
    ready(ctx, platform, "Ready", "Bound", `members of ${groups.join(" and ")} are cluster-admin on cluster ${platform.spec.clusterName}`);
    // The binding is put back if someone removes it from the cluster.
    return { requeueAfterMs: 60_000, idle: true };
  };
  const platformController = manager.add<PlatformObject>({
    name: "platform",
    component: REALM_COMPONENT,
    informer: platforms,
    reconcile: objectReconciler<PlatformObject>({ kind: platformKind, cache: platforms.cache, observedGeneration: true, phases: [platformPhase], afterStatusWrite: phaseEvents("Platform") }),
  });
  platformController.watch(realms, inRealm(platforms.cache));
  platformController.watch(clusters, (cluster) =>
    platforms.cache
      .list()
      .filter((p) => p.metadata.namespace === cluster.metadata.namespace && p.spec.clusterName === cluster.metadata.name)
      .map((p) => keyFor(p.metadata.namespace, p.metadata.name!)),
  );

  const identityController = manager.add<ClusterObject>({
    name: "cluster-identity",
    component: REALM_COMPONENT,
    informer: clusters,
    reconcile: async (ctx) => {
      const cluster = clusters.cache.get(ctx.key);
      const realm = cluster?.spec.realmName;
      if (!cluster || !realm || cluster.metadata.deletionTimestamp) return {};
      const namespace = cluster.metadata.namespace!;
      const name = cluster.metadata.name!;
      await ensureOwned(ctx, cluster, ctx.client.of<OIDCClientObject>(oidcClientKind), { apiVersion: cluster.apiVersion, kind: "OIDCClient", metadata: { name, namespace }, spec: { realm } } as OIDCClientObject);
      await ensureOwned(ctx, cluster, ctx.client.of<PlatformObject>(platformKind), {
        apiVersion: cluster.apiVersion,
        kind: "Platform",
        metadata: { name, namespace },
        spec: { realm, clusterName: name },
      } as PlatformObject);
      return {};
    },
    // Nothing to look at again unasked: the cluster and what it is given (watched below) are all it reads.
    resyncs: () => false,
  });
  // An OIDCClient or Platform of a cluster deleted by hand is made again.
  const ownerKey = (o: KubeObject) => (o.metadata.ownerReferences ?? []).filter((r) => r.kind === "Cluster").map((r) => keyFor(o.metadata.namespace, r.name));
  identityController.watch(clients, ownerKey);
  identityController.watch(platforms, ownerKey);
}

/**
 * Makes the cluster's object of that kind, or adopts one of its name that no one controls (azimuth's
 * "ensure and adopt"); one controlled by something else is left alone, with a Warning on the cluster.
 */
async function ensureOwned<T extends KubeObject & { spec: { realm: string } }>(ctx: ReconcileContext, cluster: ClusterObject, kinds: KindClient<T>, desired: T): Promise<void> {
  const namespace = cluster.metadata.namespace!;
  const existing = await kinds.tryGet(namespace, desired.metadata.name!);
  const ref = controllerRef(cluster);
  if (!existing) {
    desired.metadata.ownerReferences = [ref];
    await kinds.create(desired);
    await ctx.event(cluster, "Normal", `${desired.kind}Created`, `${desired.kind} ${desired.metadata.name} registered in realm ${desired.spec.realm}`);
    return;
  }
  const controller = existing.metadata.ownerReferences?.find((r) => r.controller);
  if (controller?.uid === cluster.metadata.uid) return;
  if (controller) {
    await ctx.event(cluster, "Warning", "IdentityConflict", `${desired.kind} ${desired.metadata.name} is controlled by ${controller.kind} ${controller.name}: not adopted`);
    return;
  }
  if (existing.spec.realm !== desired.spec.realm) {
    await ctx.event(cluster, "Warning", "IdentityConflict", `${desired.kind} ${desired.metadata.name} is in realm ${existing.spec.realm}, the cluster names ${desired.spec.realm}: not adopted`);
    return;
  }
  await kinds.update({ ...existing, metadata: { ...existing.metadata, ownerReferences: [...(existing.metadata.ownerReferences ?? []), ref] } });
  await ctx.event(cluster, "Normal", `${desired.kind}Adopted`, `${desired.kind} ${desired.metadata.name} adopted`);
}
