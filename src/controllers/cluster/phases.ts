// The cluster controller's phases: validate, then make what the cluster is made of — secrets,
// infrastructure per connection, the control plane one machine at a time, the network plugin, the
// worker pools — each phase idempotent, so a restart or another replica picks up where work stopped.
import type { ClusterObject, ConnectionObject, InfrastructureObject, MachineObject, MachinePoolObject, SecretObject } from "../../api/kinds.ts";
import { type CapabilityName, type QuotaResources, isProviderError } from "../../providers/provider.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { machineKind, ANNOTATION_BOOTSTRAP, LABEL_ROLE, ROLE_CONTROL_PLANE, ROLE_WORKER } from "../../api/slipway/machine.ts";
import { machinePoolKind, LABEL_POOL } from "../../api/slipway/machinepool.ts";
import { secretKind } from "../../api/core.ts";
import { formatCidr, parseCidr, cidrsOverlap } from "../../api/cidr.ts";
import { AlreadyExistsError, NotFoundError } from "../../apiserver/errors.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { inThreadPki, type CertificateMaker } from "../../bootstrap/pki-workers.ts";
import { renderKubeconfig, parseKubeconfig } from "../../bootstrap/kubeconfig.ts";
import { renderCniManifest } from "../../bootstrap/cni.ts";
import { isTrue, setCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Phase, Scope } from "../../runtime/reconciler.ts";
import { controllerRef } from "../contract.ts";
import { CONDITION_NETWORK_PLUGIN_INSTALLED, LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { LABEL_CONNECTION } from "../../api/slipway/connection.ts";
import { names } from "../../api/slipway/names.ts";
import { ensureBootstrapToken, ensureClusterPki, readClusterPki } from "../pki.ts";
import { ConnectionUnusableError, type ProviderResolver } from "../providers.ts";
import type { WorkloadClients } from "../workload.ts";
import { clusterConnections, preflight, preflightMessage, preflightReason, type ConnectionFacts } from "./preflight.ts";

export interface ClusterDeps {
  providers: ProviderResolver;
  workloads: WorkloadClients;
  /** Where certificates are made (default: on this thread). */
  pki?: CertificateMaker;
}

export interface ClusterTiming {
  /** Requeue delay while waiting on children (default 1000 ms). */
  pollMs: number;
  /**
   * Requeue delay of a cluster that is not Ready yet or is being deleted (default 120 × pollMs), as an
   * idle check. Every change of a child requeues the cluster anyway; this only catches what no watch
   * reports. It is slow because idle checks are idle only within one controller's queue: with 10,000
   * clusters waiting, one every 30 s was a quarter of all reconciles, on the same CPU as the work.
   */
  recheckMs: number;
  /** Requeue delay after a failed validation, to notice a raised quota (default 30 s). */
  revalidateMs: number;
}

export interface ClusterScope extends Scope<ClusterObject> {
  deps: ClusterDeps;
  timing: ClusterTiming;
  connections: Map<string, ConnectionObject | undefined>;
  infrastructures: InfrastructureObject[];
  pools: MachinePoolObject[];
  controlPlane: MachineObject[];
  /** Every machine of the cluster, control plane and pools. */
  machines: MachineObject[];
  /** Set by a phase that learned something the summary should say (e.g. validation problems). */
  problem?: { reason: string; message: string };
  /** Waiting is normal while provisioning; this says on what. */
  waitingOn?: string;
}

function now(ctx: ReconcileContext): string {
  return nowTimestamp(new Date(ctx.clock.now()));
}

function status(scope: ClusterScope): NonNullable<ClusterObject["status"]> {
  scope.object.status ??= {};
  return scope.object.status;
}

function meta(cluster: ClusterObject, name: string, labels: Record<string, string> = {}) {
  return {
    name,
    namespace: cluster.metadata.namespace,
    labels: { [LABEL_CLUSTER]: cluster.metadata.name!, ...labels },
    ownerReferences: [controllerRef(cluster)],
  };
}

async function createIgnoringExists(work: Promise<unknown>): Promise<void> {
  try {
    await work;
  } catch (e) {
    if (!(e instanceof AlreadyExistsError)) throw e;
  }
}

async function deleteIgnoringMissing(work: Promise<unknown>): Promise<void> {
  try {
    await work;
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e;
  }
}

// ---- validation ----

/** What a cluster needs of the provider of each connection it uses. */
const CLUSTER_NEEDS: CapabilityName[] = ["catalogue", "clusterInfrastructure", "machines"];

/** What the cluster already holds in a connection, so a re-validation does not count it twice. */
function ownUsage(scope: ClusterScope, connection: string): QuotaResources {
  const machines = scope.machines.filter((m) => m.spec.connection === connection && m.status?.instanceId && m.status.phase !== "Failed");
  const infra = scope.infrastructures.find((i) => i.spec.connection === connection);
  const vcpus = machines.reduce((sum, m) => sum + (infra?.status?.machineTypes?.[m.spec.machineType]?.vcpu ?? 0), 0);
  return {
    vcpus,
    instances: machines.length,
    networks: infra?.status?.networkId ? 1 : 0,
    loadBalancers: infra?.status?.loadBalancer ? 1 : 0,
    publicIps: 0,
  };
}

/**
 * Dynamic validation: before anything is built, and again for every new generation. A failure is final
 * for this generation until something outside changes (quota raised, connection fixed), so it is
 * checked again after `revalidateMs`.
 */
export const validate: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const st = status(scope);
  const validated = st.conditions?.find((c) => c.type === "Validated");
  if (validated?.status === "True" && validated.observedGeneration === cluster.metadata.generation) return;
  if (!st.phase || st.phase === "Pending") st.phase = "Validating";
  const facts = new Map<string, ConnectionFacts>();
  await Promise.all(
    clusterConnections(cluster.spec).map(async (name) => {
      const connection = scope.connections.get(name);
      if (!connection) {
        facts.set(name, { unusable: `connection "${name}" does not exist in namespace ${cluster.metadata.namespace}` });
        return;
      }
      try {
        // Every connection of a cluster gets its infrastructure and machines.
        const provider = await scope.deps.providers.open(connection, CLUSTER_NEEDS);
        const catalogue = provider.capabilities.catalogue!;
        await catalogue.zones();
        const [machineTypes, images, quota] = await Promise.all([catalogue.machineTypes(), catalogue.images(), catalogue.quota()]);
        facts.set(name, { machineTypes, images, quota, ownUsage: ownUsage(scope, name) });
      } catch (e) {
        if (e instanceof ConnectionUnusableError || (isProviderError(e) && !e.retryable)) {
          facts.set(name, { unusable: `connection "${name}": ${(e as Error).message}` });
          return;
        }
        throw e;
      }
    }),
  );
  const problems = preflight(cluster.spec, facts);
  if (problems.length > 0) {
    const reason = preflightReason(problems);
    scope.problem = { reason, message: preflightMessage(problems) };
    setCondition(st, { type: "Validated", status: "False", reason, message: scope.problem.message, observedGeneration: cluster.metadata.generation }, now(ctx));
    return { halt: true, requeueAfterMs: scope.timing.revalidateMs };
  }
  setCondition(
    st,
    { type: "Validated", status: "True", reason: "Validated", message: "connections, machine types, images and quota checked", observedGeneration: cluster.metadata.generation },
    now(ctx),
  );
};

// ---- secrets and infrastructure ----

/**
 * What a cluster's reconciles found in place lately (its Secrets, its kubeconfig for an endpoint), by
 * cluster uid: not read again for `SECRETS_RECHECK_MS`. A cluster is reconciled dozens of times while it
 * is built, and each check read and decrypted a Secret; one deleted by hand is made again within the
 * period.
 */
const verified = new Map<string, number>();
const SECRETS_RECHECK_MS = 5 * 60_000;
const VERIFIED_KEPT = 65_536;

function recentlyVerified(ctx: ReconcileContext, what: string): boolean {
  const at = verified.get(what);
  return at !== undefined && ctx.clock.now() - at < SECRETS_RECHECK_MS;
}

function markVerified(ctx: ReconcileContext, what: string): void {
  verified.delete(what);
  verified.set(what, ctx.clock.now());
  if (verified.size > VERIFIED_KEPT) verified.delete(verified.keys().next().value!);
}

export const ensureSecrets: Phase<ClusterScope> = async (ctx, scope) => {
  const what = `${scope.object.metadata.uid}/secrets`;
  if (recentlyVerified(ctx, what)) return;
  await Promise.all([ensureClusterPki(ctx.client, scope.object, scope.deps.pki), ensureBootstrapToken(ctx.client, scope.object)]);
  markVerified(ctx, what);
};

/** A slice of the node range per connection (16 of them), kept once given. */
function nodeCidrFor(cluster: ClusterObject, taken: string[]): string {
  const base = parseCidr(cluster.spec.network?.nodeCIDR ?? "10.0.0.0/16");
  const prefix = Math.min(base.prefix + 4, 28);
  const size = 2 ** (32 - prefix);
  for (let i = 0; i < 2 ** (prefix - base.prefix); i++) {
    const candidate = formatCidr({ ...base, base: base.first + i * size, prefix, first: base.first + i * size, last: base.first + (i + 1) * size - 1 });
    if (!taken.some((t) => cidrsOverlap(t, candidate))) return candidate;
  }
  throw new Error(`no free slice of ${formatCidr(base)} is left for another connection`);
}

export const ensureInfrastructures: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const wanted = clusterConnections(cluster.spec);
  const infras = ctx.client.of<InfrastructureObject>(infrastructureKind);
  const taken = scope.infrastructures.map((i) => i.spec.nodeCIDR);
  const machineTypes = (c: string) => [...new Set([cluster.spec.controlPlane, ...(cluster.spec.workers ?? [])].filter((g) => g.connection === c).map((g) => g.machineType))];
  const images = (c: string) => [...new Set([cluster.spec.controlPlane, ...(cluster.spec.workers ?? [])].filter((g) => g.connection === c).map((g) => g.image ?? "ubuntu-22.04"))];
  for (const name of wanted) {
    const connection = scope.connections.get(name)!;
    const existing = scope.infrastructures.find((i) => i.spec.connection === name);
    if (existing) {
      const types = machineTypes(name);
      const imgs = images(name);
      if (JSON.stringify(existing.spec.machineTypes) !== JSON.stringify(types) || JSON.stringify(existing.spec.images) !== JSON.stringify(imgs)) {
        await infras.patch(existing.metadata.namespace, existing.metadata.name!, "merge", { spec: { machineTypes: types, images: imgs } });
      }
      continue;
    }
    const nodeCIDR = nodeCidrFor(cluster, taken);
    taken.push(nodeCIDR);
    await createIgnoringExists(
      infras.create({
        apiVersion: "slipway.dev/v1alpha1",
        kind: "Infrastructure",
        metadata: meta(cluster, names.infrastructure(cluster.metadata.name!, name), { [LABEL_CONNECTION]: name }),
        spec: {
          clusterName: cluster.metadata.name!,
          connection: name,
          region: connection.spec.region,
          nodeCIDR,
          controlPlane: name === cluster.spec.controlPlane.connection,
          machineTypes: machineTypes(name),
          images: images(name),
        },
      } as InfrastructureObject),
    );
    await ctx.event(cluster, "Normal", "CreatingInfrastructure", `building network, security group, key pair${name === cluster.spec.controlPlane.connection ? " and API load balancer" : ""} in connection ${name} (${nodeCIDR})`);
  }
  // A connection no longer used keeps its infrastructure until its machines are gone.
  for (const infra of scope.infrastructures) {
    if (wanted.includes(infra.spec.connection) || infra.metadata.deletionTimestamp) continue;
    if (scope.machines.some((m) => m.spec.connection === infra.spec.connection)) continue;
    await deleteIgnoringMissing(infras.delete(infra.metadata.namespace, infra.metadata.name!));
  }
};

function controlPlaneInfrastructure(scope: ClusterScope): InfrastructureObject | undefined {
  return scope.infrastructures.find((i) => i.spec.controlPlane && i.spec.connection === scope.object.spec.controlPlane.connection);
}

/** Versions of kubeconfig Secrets already parsed (the check below runs on every reconcile of a cluster). */
const parsedKubeconfigs = new Map<string, { server: string; tlsServerName?: string }>();
const PARSED_KUBECONFIGS_KEPT = 16_384;

/** The server a kubeconfig Secret points at, parsed once per version of the Secret. */
function kubeconfigTarget(secret: SecretObject): { server: string; tlsServerName?: string } {
  const version = `${secret.metadata.uid}/${secret.metadata.resourceVersion}`;
  let target = parsedKubeconfigs.get(version);
  if (!target) {
    const parsed = parseKubeconfig(Buffer.from(secret.data!.value!, "base64").toString("utf8"));
    target = { server: parsed.server, tlsServerName: parsed.tlsServerName };
    if (parsedKubeconfigs.size >= PARSED_KUBECONFIGS_KEPT) parsedKubeconfigs.delete(parsedKubeconfigs.keys().next().value!);
    parsedKubeconfigs.set(version, target);
  }
  return target;
}

/**
 * Publishes the API endpoint as soon as the load balancer exists, and the admin kubeconfig once it is
 * active (a cloud may publish the endpoint's final URL only then: written earlier, it was written twice).
 */
export const publishEndpoint: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const infra = controlPlaneInfrastructure(scope);
  const lb = infra?.status?.loadBalancer;
  if (!lb) return;
  status(scope).controlPlaneEndpoint = { host: lb.host, port: lb.port };
  if (!isTrue(infra.status?.conditions, "LoadBalancerReady")) return;
  const url = lb.url ?? `https://${lb.host}:${lb.port}`;
  const secrets = ctx.client.of<SecretObject>(secretKind);
  const name = names.kubeconfigSecret(cluster.metadata.name!);
  const what = `${cluster.metadata.uid}/kubeconfig ${url} ${lb.host}`;
  if (recentlyVerified(ctx, what)) {
    status(scope).kubeconfigSecretName = name;
    return;
  }
  const existing = await secrets.tryGet(cluster.metadata.namespace, name);
  if (existing?.data?.value) {
    const current = kubeconfigTarget(existing);
    if (current.server === url && current.tlsServerName === lb.host) {
      status(scope).kubeconfigSecretName = name;
      markVerified(ctx, what);
      return;
    }
  }
  const pkiSecret = await secrets.get(cluster.metadata.namespace, names.pkiSecret(cluster.metadata.name!));
  const pki = readClusterPki(pkiSecret);
  const admin = await (scope.deps.pki ?? inThreadPki).issueCertificate(pki.ca, { commonName: "kubernetes-admin", organizations: ["system:masters"], usages: ["client"] });
  const kubeconfig = renderKubeconfig({
    clusterName: cluster.metadata.name!,
    server: url,
    caCertPem: pki.ca.certPem,
    user: "kubernetes-admin",
    clientCertPem: admin.certPem,
    clientKeyPem: admin.keyPem,
    tlsServerName: lb.host,
    context: `kubernetes-admin@${cluster.metadata.name}`,
  });
  const data = { value: Buffer.from(kubeconfig).toString("base64") };
  if (existing) await secrets.update({ ...existing, data } as SecretObject);
  else await createIgnoringExists(secrets.create({ apiVersion: "v1", kind: "Secret", metadata: meta(cluster, name), type: "Opaque", data } as SecretObject));
  status(scope).kubeconfigSecretName = name;
  markVerified(ctx, what);
  await ctx.event(cluster, "Normal", "KubeconfigWritten", `admin kubeconfig for ${url} in Secret ${name}`);
};

// ---- control plane ----

function controlPlaneMachine(cluster: ClusterObject, index: number): MachineObject {
  const cp = cluster.spec.controlPlane;
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: {
      ...meta(cluster, names.controlPlaneMachine(cluster.metadata.name!, index), { [LABEL_ROLE]: ROLE_CONTROL_PLANE }),
      ...(index === 0 ? { annotations: { [ANNOTATION_BOOTSTRAP]: "init" } } : {}),
    },
    spec: { clusterName: cluster.metadata.name!, role: ROLE_CONTROL_PLANE, connection: cp.connection, machineType: cp.machineType, image: cp.image },
  } as MachineObject;
}

function indexOf(machine: MachineObject): number {
  return Number(machine.metadata.name!.split("-").pop());
}

/**
 * The first control-plane machine initialises the cluster; the others join one at a time, each once
 * every earlier one runs (etcd grows one member at a time). A failed machine is replaced.
 */
export const ensureControlPlane: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const machines = ctx.client.of<MachineObject>(machineKind);
  const infra = controlPlaneInfrastructure(scope);
  if (!infra?.status?.loadBalancer || !isTrue(infra.status.conditions, "Ready")) {
    scope.waitingOn = `the infrastructure of connection ${cluster.spec.controlPlane.connection}`;
    return;
  }
  for (const failed of scope.controlPlane.filter((m) => m.status?.phase === "Failed" && !m.metadata.deletionTimestamp)) {
    await ctx.event(cluster, "Warning", "ReplacingMachine", `${failed.metadata.name} failed (${failed.status?.failureReason}: ${failed.status?.failureMessage}); replacing it`);
    await deleteIgnoringMissing(machines.delete(failed.metadata.namespace, failed.metadata.name!));
  }
  const desired = cluster.spec.controlPlane.replicas ?? 1;
  const present = new Set(scope.controlPlane.map(indexOf));
  const allRunning = scope.controlPlane.every((m) => m.status?.phase === "Running" && !m.metadata.deletionTimestamp);
  for (let index = 0; index < desired; index++) {
    if (present.has(index)) continue;
    // The init machine may always be (re)made; a joining one only when all others run.
    if (index > 0 && !(allRunning && present.has(0))) break;
    await createIgnoringExists(machines.create(controlPlaneMachine(cluster, index)));
    await ctx.event(cluster, "Normal", index === 0 ? "InitializingControlPlane" : "JoiningControlPlane", `created control-plane machine ${names.controlPlaneMachine(cluster.metadata.name!, index)}`);
    break;
  }
  // Scale down: the highest index first, one at a time, once all run.
  const extra = scope.controlPlane.filter((m) => indexOf(m) >= desired && !m.metadata.deletionTimestamp).sort((a, b) => indexOf(b) - indexOf(a));
  if (extra[0] && allRunning) await deleteIgnoringMissing(machines.delete(extra[0].metadata.namespace, extra[0].metadata.name!));
};

/** The network plugin, applied through the cluster's own API once its first node exists. */
export const ensureNetworkPlugin: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const st = status(scope);
  if (isTrue(st.conditions, CONDITION_NETWORK_PLUGIN_INSTALLED)) return;
  const initialized = scope.controlPlane.some((m) => m.status?.bootstrapped);
  if (!initialized) return;
  const api = await scope.deps.workloads.forCluster(cluster.metadata.namespace!, cluster.metadata.name!);
  if (!api) return;
  const cni = cluster.spec.network?.cni ?? "calico";
  for (const object of renderCniManifest(cni, { podCIDR: cluster.spec.network?.podCIDR ?? "10.244.0.0/16" })) await api.apply(object);
  setCondition(st, { type: CONDITION_NETWORK_PLUGIN_INSTALLED, status: "True", reason: "Applied", message: `${cni} applied` }, now(ctx));
  await ctx.event(cluster, "Normal", "NetworkPluginInstalled", `${cni} manifest applied to the cluster`);
};

// ---- workers ----

function poolSpec(cluster: ClusterObject, pool: NonNullable<ClusterObject["spec"]["workers"]>[number]): MachinePoolObject["spec"] {
  return {
    clusterName: cluster.metadata.name!,
    connection: pool.connection,
    machineType: pool.machineType,
    image: pool.image,
    replicas: pool.replicas ?? 1,
    ...(pool.labels ? { labels: pool.labels } : {}),
    ...(pool.taints ? { taints: pool.taints } : {}),
  };
}

/** One MachinePool per worker pool, made at once: its machines wait for what they need themselves. */
export const ensureWorkerPools: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const pools = ctx.client.of<MachinePoolObject>(machinePoolKind);
  const wanted = cluster.spec.workers ?? [];
  for (const worker of wanted) {
    const name = names.machinePool(cluster.metadata.name!, worker.name);
    const spec = poolSpec(cluster, worker);
    const existing = scope.pools.find((p) => p.metadata.name === name);
    if (!existing) {
      await createIgnoringExists(
        pools.create({ apiVersion: "slipway.dev/v1alpha1", kind: "MachinePool", metadata: meta(cluster, name, { [LABEL_POOL]: worker.name, [LABEL_ROLE]: ROLE_WORKER }), spec } as MachinePoolObject),
      );
      await ctx.event(cluster, "Normal", "CreatingWorkerPool", `pool ${worker.name}: ${spec.replicas} × ${spec.machineType} in connection ${spec.connection}`);
    } else if (JSON.stringify(existing.spec) !== JSON.stringify({ ...existing.spec, ...spec })) {
      await pools.patch(existing.metadata.namespace, name, "merge", { spec });
      if (existing.spec.replicas !== spec.replicas) {
        await ctx.event(cluster, "Normal", "ScalingWorkerPool", `pool ${worker.name}: ${existing.spec.replicas} → ${spec.replicas} machines`);
      }
    }
  }
  for (const pool of scope.pools) {
    if (wanted.some((w) => names.machinePool(cluster.metadata.name!, w.name) === pool.metadata.name) || pool.metadata.deletionTimestamp) continue;
    await ctx.event(cluster, "Normal", "DeletingWorkerPool", `pool ${pool.metadata.name} is no longer declared`);
    await deleteIgnoringMissing(pools.delete(pool.metadata.namespace, pool.metadata.name!));
  }
};

export const clusterPhases: readonly Phase<ClusterScope>[] = [
  validate,
  async (ctx, scope) => {
    // Secrets and infrastructure are independent: make them side by side.
    await Promise.all([ensureSecrets(ctx, scope), ensureInfrastructures(ctx, scope)]);
  },
  publishEndpoint,
  ensureControlPlane,
  ensureNetworkPlugin,
  ensureWorkerPools,
  // Not Ready yet: the children's changes requeue the cluster; this late, idle check catches the rest.
  (_ctx, scope) => (isTrue(scope.object.status?.conditions, "Ready") ? {} : { requeueAfterMs: scope.timing.recheckMs, idle: true }),
];

// ---- deletion ----

/** Machines and pools first (they drain and terminate), then the infrastructure; secrets go with the cluster. */
export const deleteChildren: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  status(scope).phase = "Deleting";
  const pools = ctx.client.of<MachinePoolObject>(machinePoolKind);
  const machines = ctx.client.of<MachineObject>(machineKind);
  const infras = ctx.client.of<InfrastructureObject>(infrastructureKind);
  for (const p of scope.pools) if (!p.metadata.deletionTimestamp) await deleteIgnoringMissing(pools.delete(p.metadata.namespace, p.metadata.name!));
  for (const m of scope.controlPlane) if (!m.metadata.deletionTimestamp) await deleteIgnoringMissing(machines.delete(m.metadata.namespace, m.metadata.name!));
  // The children's deletion requeues the cluster (controller.ts): the poll while it waits for them is only
  // a safety net, slow and behind every other key. Polling each second, 10,000 clusters being deleted
  // (and their pools) left the machine controller, which does the work, a small share of the process.
  const waitForChildren = { halt: true, requeueAfterMs: scope.timing.recheckMs, idle: true };
  if (scope.pools.length > 0 || scope.machines.length > 0) {
    scope.waitingOn = `${scope.machines.length} machine(s) to be deleted`;
    return waitForChildren;
  }
  for (const i of scope.infrastructures) if (!i.metadata.deletionTimestamp) await deleteIgnoringMissing(infras.delete(i.metadata.namespace, i.metadata.name!));
  if (scope.infrastructures.length > 0) {
    scope.waitingOn = `${scope.infrastructures.length} infrastructure(s) to be deleted`;
    return waitForChildren;
  }
  scope.deps.workloads.forget(cluster.metadata.namespace!, cluster.metadata.name!);
  await ctx.event(cluster, "Normal", "Deleted", "every machine and cloud resource of the cluster is gone");
};
