// What a cluster is made of, made by its controller: the cluster's Secrets (PKI, bootstrap token), one
// Infrastructure per connection, the control plane (made at once, joining one at a time), the network plugin once the
// first node exists, and one MachinePool per worker pool. Each phase is idempotent: objects are made
// under fixed names (names.ts), so a retry, a restart or another replica finds what was made.
import { isDeepStrictEqual } from "node:util";
import type { BootstrapConfigObject, ClusterObject, InfrastructureObject, MachineObject, MachinePoolObject, SimMachinePoolObject } from "../../api/kinds.ts";
import { bootstrapConfigKind } from "../../api/slipway/bootstrapconfig.ts";
import { FINALIZER_SIM_MACHINE_POOL, simMachinePoolKind } from "../../api/slipway/simmachinepool.ts";
import type { MachinePoolTemplate } from "../../api/slipway/machinepool.ts";
import type { Client } from "../../runtime/client.ts";
import { cidrsOverlap, formatCidr, parseCidr } from "../../api/cidr.ts";
import { createIfAbsent, deleteIfPresent } from "../../api/presence.ts";
import { apiVisibilityOf, CONDITION_CONTROL_PLANE_INITIALIZED, CONDITION_NETWORK_PLUGIN_INSTALLED, DEFAULT_KUBERNETES_VERSION, LABEL_CLUSTER, desiredWorkers, machineTypeOf } from "../../api/slipway/cluster.ts";
import { oldestVersion, sameVersion } from "../../api/slipway/versions.ts";
import { LABEL_CONNECTION } from "../../api/slipway/connection.ts";
import { SLIPWAY_API_VERSION } from "../../api/slipway/group.ts";
import { FINALIZER_INFRASTRUCTURE, infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { ANNOTATION_BOOTSTRAP, FINALIZER_MACHINE, isMachineReady, LABEL_ROLE, machineKind, ROLE_CONTROL_PLANE, ROLE_WORKER } from "../../api/slipway/machine.ts";
import { ANNOTATION_DECLARED_REPLICAS, ANNOTATION_REPLICAS_MANAGED_BY, FINALIZER_MACHINE_POOL, LABEL_POOL, machinePoolKind } from "../../api/slipway/machinepool.ts";
import { names } from "../../api/slipway/names.ts";
import { DEFAULT_IMAGE } from "../../api/slipway/nodes.ts";
import { renderCniManifest } from "../../bootstrap/cni.ts";
import { Applier, KubeUnreachableError } from "../../kubeclient/index.ts";
import { getCondition, isTrue, setCondition } from "../../runtime/conditions.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { ConnectionUnusableError } from "../providers.ts";
import { poolTemplate } from "../machinepool/template.ts";
import { INFRASTRUCTURE_READY } from "../machinepool/status.ts";
import { controllerRef } from "../contract.ts";
import { ETCD_MEMBER_REMOVED } from "../machine/etcd.ts";
import { isInitMachine, isRegisteredTarget } from "../machine/status.ts";
import { readyForMachines } from "../infrastructure/status.ts";
import { ensureBootstrapToken, ensureClusterPki } from "../pki.ts";
import { decideRemediation, recordReplacement } from "../rollout/remediation.ts";
import { networkPluginCondition, pluginPodsReady, pluginTrouble, readPluginDaemonSet } from "./networkplugin.ts";
import { clusterConnections } from "./preflight.ts";
import { childMeta, clusterStatus, controlPlaneInfrastructure, now, type ClusterScope } from "./scope.ts";

// ---- secrets and infrastructure ----

export const ensureSecrets: Phase<ClusterScope> = async (ctx, scope) => {
  const what = `${scope.object.metadata.uid}/secrets`;
  if (scope.memory.checks.recent(what, ctx.clock.now())) return;
  await Promise.all([ensureClusterPki(ctx.client, scope.object, scope.deps.pki), ensureBootstrapToken(ctx.client, scope.object)]);
  scope.memory.checks.mark(what, ctx.clock.now());
};

/** A slice of the node range per connection (16 of them), kept once given. */
/** Every slice of the cluster's node range is given to a connection already. */
export class NodeRangeExhaustedError extends Error {
  override readonly name = "NodeRangeExhaustedError";
}

function nodeCidrFor(cluster: ClusterObject, taken: string[]): string {
  const base = parseCidr(cluster.spec.network?.nodeCIDR ?? "10.0.0.0/16");
  const prefix = Math.min(base.prefix + 4, 28);
  const size = 2 ** (32 - prefix);
  for (let i = 0; i < 2 ** (prefix - base.prefix); i++) {
    const candidate = formatCidr({ ...base, base: base.first + i * size, prefix, first: base.first + i * size, last: base.first + (i + 1) * size - 1 });
    if (!taken.some((t) => cidrsOverlap(t, candidate))) return candidate;
  }
  throw new NodeRangeExhaustedError(`no free slice of ${formatCidr(base)} is left for another connection`);
}

export const ensureInfrastructures: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const wanted = clusterConnections(cluster.spec);
  const infras = ctx.client.of<InfrastructureObject>(infrastructureKind);
  const taken = scope.infrastructures.map((i) => i.spec.nodeCIDR);
  const machineTypes = (c: string) => [...new Set([cluster.spec.controlPlane, ...(cluster.spec.workers ?? [])].filter((g) => g.connection === c).map((g) => g.machineType))];
  const images = (c: string) => [...new Set([cluster.spec.controlPlane, ...(cluster.spec.workers ?? [])].filter((g) => g.connection === c).map((g) => g.image ?? DEFAULT_IMAGE))];
  for (const name of wanted) {
    const connection = scope.connections.get(name)!;
    const existing = scope.infrastructures.find((i) => i.spec.connection === name);
    if (existing) {
      const types = machineTypes(name);
      const imgs = images(name);
      if (JSON.stringify(existing.spec.machineTypes) !== JSON.stringify(types) || JSON.stringify(existing.spec.images) !== JSON.stringify(imgs)) {
        await infras.patch(existing.metadata.namespace, existing.metadata.name!, "merge", { spec: { machineTypes: types, images: imgs } });
        scope.changedChildren.add(existing.metadata.name!);
      }
      continue;
    }
    const nodeCIDR = nodeCidrFor(cluster, taken);
    taken.push(nodeCIDR);
    // Children carry their controller's finalizer from the start: the controller need not write them to add it.
    const created = await createIfAbsent(() =>
      infras.create({
        apiVersion: SLIPWAY_API_VERSION,
        kind: "Infrastructure",
        metadata: { ...childMeta(cluster, names.infrastructure(cluster.metadata.name!, name), { [LABEL_CONNECTION]: name }), finalizers: [FINALIZER_INFRASTRUCTURE] },
        spec: {
          clusterName: cluster.metadata.name!,
          connection: name,
          region: connection.spec.region,
          nodeCIDR,
          controlPlane: name === cluster.spec.controlPlane.connection,
          ...(name === cluster.spec.controlPlane.connection && apiVisibilityOf(cluster.spec) === "private" ? { apiVisibility: "private" } : {}),
          machineTypes: machineTypes(name),
          images: images(name),
        },
      } as InfrastructureObject),
    );
    // Said once, by the reconcile that made it (a later one may not see it in the cache yet).
    if (created) await ctx.event(cluster, "Normal", "CreatingInfrastructure", `building network, security group, key pair${name === cluster.spec.controlPlane.connection ? " and API load balancer" : ""} in connection ${name} (${nodeCIDR})`);
  }
  // A connection no longer used keeps its infrastructure until its machines are gone.
  for (const infra of scope.infrastructures) {
    if (wanted.includes(infra.spec.connection) || infra.metadata.deletionTimestamp) continue;
    if (scope.machines.some((m) => m.spec.connection === infra.spec.connection)) continue;
    await deleteIfPresent(() => infras.delete(infra.metadata.namespace, infra.metadata.name!));
  }
};

// ---- control plane ----

function controlPlaneMachine(cluster: ClusterObject, index: number, init: boolean, version: string): MachineObject {
  const cp = cluster.spec.controlPlane;
  return {
    apiVersion: SLIPWAY_API_VERSION,
    kind: "Machine",
    metadata: {
      ...childMeta(cluster, names.controlPlaneMachine(cluster.metadata.name!, index), { [LABEL_ROLE]: ROLE_CONTROL_PLANE }),
      finalizers: [FINALIZER_MACHINE],
      ...(init ? { annotations: { [ANNOTATION_BOOTSTRAP]: "init" } } : {}),
    },
    spec: { clusterName: cluster.metadata.name!, role: ROLE_CONTROL_PLANE, connection: cp.connection, machineType: cp.machineType, image: cp.image, version },
  } as MachineObject;
}

function indexOf(machine: MachineObject): number {
  return Number(machine.metadata.name!.split("-").pop());
}

function byIndex(a: MachineObject, b: MachineObject): number {
  return indexOf(a) - indexOf(b);
}

/** The Kubernetes version the cluster asks for. */
export function targetVersion(cluster: ClusterObject): string {
  return cluster.spec.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION;
}

/** The version a machine was made to run (or, made before machines recorded one, the one its node reports). */
export function versionOfMachine(machine: MachineObject): string | undefined {
  return machine.spec.version ?? machine.status?.kubeletVersion;
}

/** The machine runs (or is made to run) another version than `target`. */
export function isOutdated(machine: MachineObject, target: string): boolean {
  const version = versionOfMachine(machine);
  return version !== undefined && !sameVersion(version, target);
}

/** A control-plane machine being deleted whose etcd member is removed and which left the load balancer. */
function leftControlPlane(machine: MachineObject): boolean {
  return isTrue(machine.status?.conditions, ETCD_MEMBER_REMOVED) && !isRegisteredTarget(machine);
}

/** Control-plane machines neither being deleted nor failed. */
function liveControlPlane(scope: ClusterScope): MachineObject[] {
  return scope.controlPlane.filter((m) => !m.metadata.deletionTimestamp && m.status?.phase !== "Failed");
}

/** Every wanted control-plane machine runs the cluster's version, Ready, and no other is left. */
export function controlPlaneUpgraded(scope: ClusterScope): boolean {
  const target = targetVersion(scope.object);
  const desired = scope.object.spec.controlPlane.replicas ?? 1;
  const settled = scope.controlPlane.every((m) => !m.metadata.deletionTimestamp && m.status?.phase === "Running");
  return settled && scope.controlPlane.length === desired && scope.controlPlane.every((m) => !isOutdated(m, target));
}

/**
 * The control plane. Where its machines are booted instances, every missing machine is made at once —
 * the first initialises, the others boot meanwhile and take turns to join on their hosts (JOIN_TURN_COMMAND
 * in bootstrap/cloudinit.ts: etcd takes one new member at a time) — unless a member is leaving. Other
 * steps (and every step on hosts reached over SSH) go one machine at a time, each only once every
 * machine runs (etcd changes by one member at a time, and never while a member is down or leaving). The first machine initialises the
 * cluster — only when no machine of it runs: a machine made for a cluster already initialised joins it,
 * whatever its name. Missing machines join; surplus ones go (those of an older version first, else the
 * highest index), each removing its etcd member on its way out (machine/etcd.ts); an upgrade adds one
 * machine at the new version, then removes one at the old, until none is left. A machine on its way out
 * holds the next step until it has left etcd and the load balancer, not until its instance is gone. A failed machine is
 * deleted, and replaced once it is gone.
 */
export const ensureControlPlane: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const machines = ctx.client.of<MachineObject>(machineKind);
  const infra = controlPlaneInfrastructure(scope);
  // The first machine boots while the load balancer is provisioned: its init waits for it to route.
  if (!infra?.status?.loadBalancer || !readyForMachines(infra)) {
    scope.waitingOn = `the infrastructure of connection ${cluster.spec.controlPlane.connection}`;
    return;
  }
  const desired = cluster.spec.controlPlane.replicas ?? 1;
  // Failed machines are replaced with backoff, and not at all past maxUnhealthy (rollout/remediation.ts);
  // until then they hold the next step, as any machine not Running does.
  const failedMachines = scope.controlPlane.filter((m) => m.status?.phase === "Failed" && !m.metadata.deletionTimestamp);
  const remediation = decideRemediation({ failed: failedMachines.map((m) => m.metadata.name!), desired, maxUnhealthy: cluster.spec.controlPlane.maxUnhealthy, record: cluster.status?.controlPlane?.remediation, nowMs: ctx.clock.now() });
  if (remediation.action === "wait" || remediation.action === "paused") {
    scope.waitingOn = `the control plane: ${remediation.message}`;
    return remediation.action === "wait" ? { requeueAfterMs: remediation.afterMs } : undefined;
  }
  for (const failed of failedMachines) {
    await ctx.event(cluster, "Warning", "ReplacingMachine", `${failed.metadata.name} failed (${failed.status?.failureReason}: ${failed.status?.failureMessage}); replacing it`);
    await deleteIfPresent(() => machines.delete(failed.metadata.namespace, failed.metadata.name!));
  }
  if (failedMachines.length > 0) {
    const st = clusterStatus(scope);
    st.controlPlane = { desired, ready: 0, ...st.controlPlane, remediation: recordReplacement(st.controlPlane?.remediation, now(ctx)) };
  }
  const target = targetVersion(cluster);
  const live = liveControlPlane(scope).sort(byIndex);
  const outdated = live.filter((m) => isOutdated(m, target));
  // A machine on its way out no longer holds the next step once it left etcd and the load balancer:
  // its instance may take a minute to terminate, which etcd need not wait for.
  const inFlux = scope.controlPlane.filter((m) => (m.metadata.deletionTimestamp ? !leftControlPlane(m) : m.status?.phase !== "Running"));
  const taken = new Set(scope.controlPlane.map(indexOf));
  let next = 0;
  while (taken.has(next)) next++;
  let name = names.controlPlaneMachine(cluster.metadata.name!, next);
  const create = async (init: boolean, reason: string, message: string) => {
    const created = await createIfAbsent(() => machines.create(controlPlaneMachine(cluster, next, init, target)));
    if (created) await ctx.event(cluster, "Normal", reason, message);
    taken.add(next);
    while (taken.has(next)) next++;
    name = names.controlPlaneMachine(cluster.metadata.name!, next);
  };
  // Booted instances take turns to join on their host (JOIN_TURN_COMMAND): every missing machine is made
  // at once, and boots while the ones before it join. Nothing is added while a member is leaving.
  const leaving = inFlux.filter((m) => m.metadata.deletionTimestamp || m.status?.phase === "Failed");
  if (live.length < desired && leaving.length === 0 && (await joinsTakeTurns(scope))) {
    // The machine that was to initialise may have failed before it did: the others would wait for ever.
    const initNeeded = live.length === 0 || (!live.some(isInitMachine) && !isTrue(cluster.status?.conditions, CONDITION_CONTROL_PLANE_INITIALIZED) && !scope.controlPlane.some((m) => m.status?.bootstrapped));
    if (initNeeded) await create(true, "InitializingControlPlane", `created control-plane machine ${name}`);
    const upgrading = outdated.length > 0 ? `upgrading to ${target}: ` : "";
    for (let k = live.length + (initNeeded ? 1 : 0); k < desired; k++) await create(false, "JoiningControlPlane", `${upgrading}created control-plane machine ${name}; it joins once the machines before it joined`);
    scope.waitingOn = controlPlaneProgress(scope, target, inFlux);
    return;
  }
  if (inFlux.length > 0) {
    scope.waitingOn = controlPlaneProgress(scope, target, inFlux);
    return;
  }
  if (live.length === 0) {
    await create(true, "InitializingControlPlane", `created control-plane machine ${name}`);
    return;
  }
  const upgrading = outdated.length > 0 ? `upgrading to ${target}: ` : "";
  if (live.length < desired) {
    await create(false, "JoiningControlPlane", `${upgrading}created control-plane machine ${name}`);
  } else if (live.length > desired) {
    // An old machine first; else the highest index.
    const victim = outdated[0] ?? live[live.length - 1]!;
    const why = outdated.length > 0 ? `upgrading to ${target}: removing ${victim.metadata.name} (${versionOfMachine(victim)})` : `scaling down to ${desired}: removing ${victim.metadata.name}`;
    await ctx.event(cluster, "Normal", outdated.length > 0 ? "UpgradingControlPlane" : "ScalingDownControlPlane", `${why}; it is drained, leaves etcd and the load balancer, then goes`);
    await deleteIfPresent(() => machines.delete(victim.metadata.namespace, victim.metadata.name!, { preconditions: { uid: victim.metadata.uid! } }));
  } else if (outdated.length > 0) {
    await create(false, "UpgradingControlPlane", `${upgrading}created control-plane machine ${name} at ${target} to replace ${outdated[0]!.metadata.name} (${versionOfMachine(outdated[0]!)})`);
  }
  if (live.length !== desired || outdated.length > 0) scope.waitingOn = controlPlaneProgress(scope, target, inFlux);
};

/** The control plane's machines are instances booted with user data that waits for its turn to join (not hosts reached over SSH). */
async function joinsTakeTurns(scope: ClusterScope): Promise<boolean> {
  const connection = scope.connections.get(scope.object.spec.controlPlane.connection);
  if (!connection) return false;
  try {
    return (await scope.deps.providers.open(connection)).capabilities.clusterInfrastructure !== undefined;
  } catch (error) {
    if (error instanceof ConnectionUnusableError) return false;
    throw error;
  }
}

/** What the control plane is doing, for the cluster's message: e.g. "upgrade to v1.31.2: 1 of 3 control-plane machines at v1.31.2; waiting for cp-3". */
function controlPlaneProgress(scope: ClusterScope, target: string, inFlux: readonly MachineObject[]): string {
  const desired = scope.object.spec.controlPlane.replicas ?? 1;
  const live = liveControlPlane(scope);
  const current = live.filter((m) => !isOutdated(m, target) && m.status?.phase === "Running").length;
  const waiting = inFlux.map((m) => `${m.metadata.name} ${m.metadata.deletionTimestamp ? "leaving" : "joining"}`).join(", ");
  const what = live.some((m) => isOutdated(m, target)) ? `the control plane's upgrade to ${target}: ${current} of ${desired} machines upgraded` : `the control plane: ${current} of ${desired} machines Running`;
  return waiting ? `${what}; ${waiting}` : what;
}

/**
 * The network plugin, applied through the cluster's own API once its first node exists (again if its
 * DaemonSet went); installed only once that DaemonSet reports every desired pod ready. Until then the
 * cluster looks again at the poll pace: nothing in Slipway's own API changes when the pods start.
 */
export const ensureNetworkPlugin: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const st = clusterStatus(scope);
  const initialized = scope.controlPlane.some((m) => m.status?.bootstrapped);
  if (!initialized) return;
  const api = await scope.deps.workloads.forCluster(cluster.metadata.namespace!, cluster.metadata.name!);
  if (!api) return;
  const cni = cluster.spec.network?.cni ?? "calico";
  const poll = { requeueAfterMs: scope.timing.pollMs };
  let ds;
  try {
    ds = await readPluginDaemonSet(api, cni);
    if (!ds) {
      const manifest = renderCniManifest(cni, { podCIDR: cluster.spec.network?.podCIDR ?? "10.244.0.0/16" });
      await new Applier(api, { fieldManager: "slipway-cluster-controller" }).applyAll(manifest, { failFast: true });
      setCondition(st, { type: CONDITION_NETWORK_PLUGIN_INSTALLED, status: "False", reason: "Applied", message: `${cni} manifest applied; waiting for its pods` }, now(ctx));
      await ctx.event(cluster, "Normal", "NetworkPluginApplied", `${cni} manifest applied to the cluster`);
      return poll;
    }
  } catch (error) {
    // The cluster's API not answering says nothing about the plugin: the condition stays as it was.
    if (error instanceof KubeUnreachableError) return poll;
    throw error;
  }
  const wasInstalled = isTrue(st.conditions, CONDITION_NETWORK_PLUGIN_INSTALLED);
  const trouble = pluginPodsReady(ds) ? undefined : await pluginTrouble(api, cni, ds).catch(() => undefined);
  const condition = networkPluginCondition(cni, ds, trouble);
  setCondition(st, condition, now(ctx));
  if (condition.status === "True" && !wasInstalled) await ctx.event(cluster, "Normal", "NetworkPluginInstalled", `${cni} runs on every node: ${condition.message}`);
  return condition.status === "True" ? undefined : poll;
};

// ---- workers ----

/** The MachinePool spec a worker pool of the cluster asks for (at `version`, when given). */
export function poolSpec(cluster: ClusterObject, pool: NonNullable<ClusterObject["spec"]["workers"]>[number], version?: string): MachinePoolObject["spec"] {
  return {
    ...(version ? { version } : {}),
    clusterName: cluster.metadata.name!,
    connection: pool.connection,
    machineType: machineTypeOf(pool),
    image: pool.image ?? DEFAULT_IMAGE,
    replicas: pool.replicas ?? 1,
    ...(pool.labels ? { labels: pool.labels } : {}),
    ...(pool.taints ? { taints: pool.taints } : {}),
    ...(pool.strategy ? { strategy: pool.strategy } : {}),
    ...(pool.maxUnhealthy !== undefined ? { maxUnhealthy: pool.maxUnhealthy } : {}),
  };
}

/** The pool's fields the cluster decides; a field the cluster no longer sets is removed from the pool. */
const MANAGED_POOL_FIELDS = ["machineType", "image", "replicas", "labels", "taints", "strategy", "maxUnhealthy", "version"] as const;

/** JSON-patch operations that make the pool's managed fields exactly the wanted ones (maps replaced, not merged). */
export function poolSpecPatch(existing: MachinePoolObject["spec"], wanted: MachinePoolObject["spec"]): { op: "add" | "remove"; path: string; value?: unknown }[] {
  const ops: { op: "add" | "remove"; path: string; value?: unknown }[] = [];
  for (const field of MANAGED_POOL_FIELDS) {
    const now = existing[field];
    const next = wanted[field];
    if (isDeepStrictEqual(now, next)) continue;
    if (next === undefined) ops.push({ op: "remove", path: `/spec/${field}` });
    else ops.push({ op: "add", path: `/spec/${field}`, value: next });
  }
  return ops;
}

/** JSON-patch operations recording on a declared pool the replicas the cluster sets (ANNOTATION_DECLARED_REPLICAS). */
export function declaredReplicasPatch(annotations: Record<string, string>, replicas: number): { op: "add"; path: string; value: unknown }[] {
  const value = String(replicas);
  if (annotations[ANNOTATION_DECLARED_REPLICAS] === value) return [];
  if (Object.keys(annotations).length === 0) return [{ op: "add", path: "/metadata/annotations", value: { [ANNOTATION_DECLARED_REPLICAS]: value } }];
  return [{ op: "add", path: `/metadata/annotations/${ANNOTATION_DECLARED_REPLICAS.replace(/~/g, "~0").replace(/\//g, "~1")}`, value }];
}

/**
 * The version a pool's machines run: the cluster's once the whole control plane runs it (kubelets are
 * never newer than the API servers), until then the one the pool has — or, for a new pool, the oldest
 * the control plane runs.
 */
export function workerVersion(scope: ClusterScope, pool: MachinePoolObject | undefined): string {
  const target = targetVersion(scope.object);
  if (controlPlaneUpgraded(scope)) return target;
  return pool?.spec.version ?? oldestVersion(liveControlPlane(scope).map(versionOfMachine)) ?? target;
}

/**
 * The cluster made the pool for one of its worker pools: it carries the worker pool's name under
 * LABEL_POOL and is named after it. A pool created on its own and adopted by the cluster is not.
 */
export function isDeclaredPool(cluster: ClusterObject, pool: MachinePoolObject): boolean {
  const worker = pool.metadata.labels?.[LABEL_POOL];
  return worker !== undefined && pool.metadata.name === names.machinePool(cluster.metadata.name!, worker);
}

/** The template of a worker pool on a scale set: a BootstrapConfig and a SimMachinePool named after the pool. */
function scaleSetTemplate(name: string): MachinePoolTemplate {
  return {
    infrastructureRef: { apiVersion: SLIPWAY_API_VERSION, kind: "SimMachinePool", name },
    bootstrap: { configRef: { apiVersion: SLIPWAY_API_VERSION, kind: "BootstrapConfig", name } },
  };
}

/**
 * The BootstrapConfig and SimMachinePool of a declared pool on a scale set, made once the pool exists
 * and already controlled by it: the pool finds nothing to adopt (no write, no event), as it would for
 * objects created on their own.
 */
async function ensureScaleSetObjects(client: Client, cluster: ClusterObject, pool: MachinePoolObject, limits: { minSize?: number; maxSize?: number }): Promise<void> {
  const metadata = { name: pool.metadata.name!, namespace: cluster.metadata.namespace, labels: { [LABEL_CLUSTER]: cluster.metadata.name! }, ownerReferences: [controllerRef(pool)] };
  await createIfAbsent(() => client.of<BootstrapConfigObject>(bootstrapConfigKind).create({ apiVersion: SLIPWAY_API_VERSION, kind: "BootstrapConfig", metadata, spec: {} }));
  await createIfAbsent(() => client.of<SimMachinePoolObject>(simMachinePoolKind).create({ apiVersion: SLIPWAY_API_VERSION, kind: "SimMachinePool", metadata: { ...metadata, finalizers: [FINALIZER_SIM_MACHINE_POOL] }, spec: { ...limits } }));
}

/** The pool says an object its template names is missing (made before the cluster could make it, or deleted). */
function missesTemplateObject(pool: MachinePoolObject): boolean {
  return getCondition(pool.status?.conditions, INFRASTRUCTURE_READY)?.reason === "TemplateObjectMissing";
}

/** One MachinePool per worker pool, made at once: its machines wait for what they need themselves. */
export const ensureWorkerPools: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const pools = ctx.client.of<MachinePoolObject>(machinePoolKind);
  const wanted = cluster.spec.workers ?? [];
  for (const worker of wanted) {
    const name = names.machinePool(cluster.metadata.name!, worker.name);
    const existing = scope.pools.find((p) => p.metadata.name === name);
    const spec = poolSpec(cluster, worker, workerVersion(scope, existing));
    if (!existing) {
      if (worker.scaleSet) spec.template = scaleSetTemplate(name);
      const metadata = { ...childMeta(cluster, name, { [LABEL_POOL]: worker.name, [LABEL_ROLE]: ROLE_WORKER }), annotations: { [ANNOTATION_DECLARED_REPLICAS]: String(spec.replicas) }, finalizers: [FINALIZER_MACHINE_POOL] };
      const created = await createIfAbsent(() => pools.create({ apiVersion: SLIPWAY_API_VERSION, kind: "MachinePool", metadata, spec } as MachinePoolObject));
      if (worker.scaleSet) await ensureScaleSetObjects(ctx.client, cluster, created ?? (await pools.get(cluster.metadata.namespace, name)), worker.scaleSet);
      if (created) await ctx.event(cluster, "Normal", "CreatingWorkerPool", `pool ${worker.name}: ${spec.replicas} × ${spec.machineType} in connection ${spec.connection}`);
      continue;
    }
    if (worker.scaleSet && existing.spec.template && missesTemplateObject(existing)) await ensureScaleSetObjects(ctx.client, cluster, existing, worker.scaleSet);
    const annotations = existing.metadata.annotations ?? {};
    const externallyScaled = annotations[ANNOTATION_REPLICAS_MANAGED_BY] !== undefined;
    if (externallyScaled) spec.replicas = existing.spec.replicas;
    const ops = [...poolSpecPatch(existing.spec, spec), ...(externallyScaled ? [] : declaredReplicasPatch(annotations, spec.replicas!))];
    if (ops.length === 0) continue;
    await pools.patch(existing.metadata.namespace, name, "json", ops);
    scope.changedChildren.add(name);
    // The cluster's spec did not change the pool's replicas: someone edited the pool itself.
    if (existing.spec.replicas !== spec.replicas && annotations[ANNOTATION_DECLARED_REPLICAS] === String(spec.replicas)) {
      await ctx.event(
        existing,
        "Warning",
        "ReplicasReverted",
        `spec.replicas ${existing.spec.replicas} reverted to ${spec.replicas}: the pool is declared in Cluster ${cluster.metadata.name} (spec.workers ${worker.name}), which sets its replicas; scale it there, or annotate the pool ${ANNOTATION_REPLICAS_MANAGED_BY} to scale it from outside`,
      );
    }
    if (existing.spec.version !== undefined && existing.spec.version !== spec.version) {
      await ctx.event(cluster, "Normal", "UpgradingWorkerPool", `pool ${worker.name}: ${existing.spec.version} → ${spec.version}; the control plane runs ${spec.version}`);
    }
    if (existing.spec.replicas !== spec.replicas) {
      await ctx.event(cluster, "Normal", "ScalingWorkerPool", `pool ${worker.name}: ${existing.spec.replicas} → ${spec.replicas} machines`);
    }
    const before = poolTemplate(existing.spec);
    const after = poolTemplate(spec);
    if (before.hash !== after.hash) {
      const changed = (["machineType", "image", "labels", "taints"] as const).filter((f) => !isDeepStrictEqual(before[f], after[f]));
      await ctx.event(cluster, "Normal", "RollingWorkerPool", `pool ${worker.name}: ${changed.join(", ")} changed; rolling its machines to template ${after.hash}`);
    }
  }
  const target = targetVersion(cluster);
  const workers = scope.machines.filter((m) => m.spec.role === ROLE_WORKER && !m.metadata.deletionTimestamp);
  if (workers.some((m) => isOutdated(m, target))) {
    const upgraded = workers.filter((m) => !isOutdated(m, target) && isMachineReady(m)).length;
    scope.waitingOn ??= `the worker pools' upgrade to ${target}: ${upgraded} of ${desiredWorkers(cluster.spec)} machines upgraded`;
  }
  // Only pools the cluster made go with their declaration: a pool created on its own and adopted is the
  // user's, whatever spec.workers says.
  for (const pool of scope.pools) {
    if (!isDeclaredPool(cluster, pool)) continue;
    if (wanted.some((w) => names.machinePool(cluster.metadata.name!, w.name) === pool.metadata.name) || pool.metadata.deletionTimestamp) continue;
    await ctx.event(cluster, "Normal", "DeletingWorkerPool", `pool ${pool.metadata.name} is no longer declared`);
    await deleteIfPresent(() => pools.delete(pool.metadata.namespace, pool.metadata.name!));
  }
};
