// The MachinePool controller's phases: bring the machines to the wanted number, made from the pool's
// current template (machine type, image, node labels, taints), through the rolling mechanism
// (rollout/plan.ts): failed machines are replaced, missing ones created and surplus ones removed at
// once; a changed template rolls the machines, new ones first, old ones drained and deleted within
// maxSurge/maxUnavailable. Machines are named `<pool>-<index>` with the lowest free indexes, so a create
// repeated after a crash (or from a stale cache) finds the machine already there instead of making a
// second one. Delete: delete every machine and wait until they are gone (each drains its node and
// terminates its instance first).
import type { ClusterObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { apiVersionOf } from "../../api/registry.ts";
import { isDeepStrictEqual } from "node:util";
import { FINALIZER_MACHINE, isMachineReady, machineKind, ROLE_WORKER } from "../../api/slipway/machine.ts";
import { createIfAbsent, deleteIfPresent } from "../../api/presence.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Phase, Scope } from "../../runtime/reconciler.ts";
import { controllerOf, controllerRef } from "../contract.ts";
import { CONDITION_CONTROL_PLANE_INITIALIZED, LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { LABEL_TEMPLATE_HASH, machinePoolKind, poolMachineLabels } from "../../api/slipway/machinepool.ts";
import { names } from "../../api/slipway/names.ts";
import { isFailedForGood, REASONS } from "../machine/status.ts";
import { planRollout, type RolloutPlan } from "../rollout/plan.ts";
import { decideRemediation, recordReplacement, REMEDIATION_ALLOWED, REASON_TOO_MANY_UNHEALTHY, type RemediationDecision } from "../rollout/remediation.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { getCondition, setCondition } from "../../runtime/conditions.ts";
import { availability, countedMachines, desiredReplicas, isAvailable, isDeleting, providerIDList } from "./status.ts";
import { machineTemplateHash, poolTemplate, type PoolTemplate } from "./template.ts";
import type { ScaleSetSurroundings } from "./scaleset.ts";

export interface MachinePoolTimings {
  /** Delay between checks while machines are being deleted. */
  pollMs: number;
}

export interface MachinePoolScope extends Scope<MachinePoolObject> {
  timings: MachinePoolTimings;
  /** From the informer cache (undefined: not there). */
  cluster?: ClusterObject;
  /** The pool's machines (those it is the controller of), as the cache or the API last showed them. */
  machines: MachineObject[];
  /** Reads the pool's machines from the API itself (not the cache). */
  listMachines: () => Promise<MachineObject[]>;
  /** Names of machines this reconcile deleted. */
  deleted: Set<string>;
  /** Set when the pool waits for its cluster: why (naming spec.clusterName), for its status. */
  waitingForCluster?: string;
  /** Whether the cluster's infrastructure in the pool's connection is Ready (from the cache). */
  infrastructureReady?: boolean;
  /** A pool on a scale set (spec.template): its template's objects and the scale set (scaleset.ts). */
  scaleSet?: ScaleSetSurroundings;
}

/** The index in a pool machine's name, or undefined when the name is not `<pool>-<index>`. */
export function machineIndex(pool: string, machine: string): number | undefined {
  const prefix = `${pool}-`;
  if (!machine.startsWith(prefix)) return undefined;
  const rest = machine.slice(prefix.length);
  return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
}

/** The `count` lowest indexes not taken. */
export function lowestFreeIndexes(taken: ReadonlySet<number>, count: number): number[] {
  const free: number[] = [];
  for (let i = 0; free.length < count; i++) if (!taken.has(i)) free.push(i);
  return free;
}

/** The order in which machines go, among equals (the rollout takes unavailable ones first): highest index first. */
export function deletionPreference(pool: string, machines: readonly MachineObject[]): MachineObject[] {
  const index = (m: MachineObject) => machineIndex(pool, m.metadata.name ?? "") ?? Number.MAX_SAFE_INTEGER;
  return [...machines].sort((a, b) => index(b) - index(a) || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
}

/**
 * Which machines a scale-down by `excess` removes, as the rollout picks them: failed ones first, then
 * those not Ready, then the highest index (for plans of a change, before it is made).
 */
export function scaleDownVictims(pool: string, machines: readonly MachineObject[], excess: number): MachineObject[] {
  if (excess <= 0) return [];
  const ordered = deletionPreference(pool, machines);
  const plan = planRollout({
    desired: machines.length - excess,
    templateHash: "current",
    machines: ordered.map((m) => ({ name: m.metadata.name!, templateHash: "current", available: isMachineReady(m), deleting: false, failed: isFailedForGood(m) })),
  });
  return plan.delete.slice(0, excess).map((name) => ordered.find((m) => m.metadata.name === name)!);
}

/**
 * A worker Machine of the pool named `name`: labelled as the pool's with the hash of the template it is
 * made from, owned by the pool, in the pool's cluster and connection, with the machine and `spec` given.
 */
export function poolWorkerMachine(
  pool: MachinePoolObject,
  name: string,
  templateHash: string,
  { machineType, image, ...spec }: Omit<MachineObject["spec"], "clusterName" | "role" | "connection" | "pool" | "image"> & { image: string | undefined },
): MachineObject {
  return {
    apiVersion: apiVersionOf(machineKind),
    kind: machineKind.kind,
    metadata: {
      name,
      namespace: pool.metadata.namespace,
      labels: { ...poolMachineLabels(pool), [LABEL_TEMPLATE_HASH]: templateHash },
      ownerReferences: [controllerRef(pool)],
      // The machine controller's finalizer from the start: it need not write the machine to add it.
      finalizers: [FINALIZER_MACHINE],
    },
    spec: { clusterName: pool.spec.clusterName, role: ROLE_WORKER, connection: pool.spec.connection, machineType, image, pool: pool.metadata.name!, ...spec },
  } as MachineObject;
}

/** The Machine a pool makes at an index, from its current template. */
export function poolMachine(pool: MachinePoolObject, index: number, template: PoolTemplate = poolTemplate(pool.spec)): MachineObject {
  return poolWorkerMachine(pool, names.poolMachine(pool.metadata.name!, index), template.hash, {
    machineType: template.machineType,
    image: template.image,
    ...(pool.spec.version ? { version: pool.spec.version } : {}),
  });
}

/** Machines of the pool that are not being deleted. */
function active(scope: MachinePoolScope): MachineObject[] {
  return scope.machines.filter((m) => !isDeleting(m, scope.deleted));
}

/**
 * The rollout's plan for the machines as the scope holds them at `nowMs`; failed machines are replaced
 * only when `replaceFailed`. As a Deployment's, a roll counts a machine available once its node has been
 * Ready for spec.minReadySeconds (awaitAvailability requeues the pool then); without `nowMs` every Ready
 * machine counts.
 */
export function planPool(scope: MachinePoolScope, replaceFailed = true, nowMs = Number.POSITIVE_INFINITY): RolloutPlan {
  const pool = scope.object;
  const template = poolTemplate(pool.spec);
  return planRollout({
    desired: desiredReplicas(pool),
    templateHash: template.hash,
    machines: deletionPreference(pool.metadata.name!, scope.machines).map((m) => ({
      name: m.metadata.name!,
      templateHash: machineTemplateHash(m, template),
      available: isAvailable(m, pool.spec.minReadySeconds ?? 0, nowMs),
      deleting: isDeleting(m, scope.deleted),
      failed: replaceFailed && isFailedForGood(m),
    })),
    strategy: pool.spec.strategy,
  });
}

/** Deletes machines (already gone is fine), in parallel; remembers them as deleted. */
export async function deleteMachines(ctx: ReconcileContext, scope: MachinePoolScope, victims: readonly MachineObject[]): Promise<void> {
  const machines = ctx.client.of(machineKind);
  const results = await Promise.allSettled(
    victims.map(async (m) => {
      await deleteIfPresent(() => machines.delete(m.metadata.namespace, m.metadata.name!, { preconditions: { uid: m.metadata.uid! } }));
      scope.deleted.add(m.metadata.name!);
    }),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}

/** Reads the machines from the API before acting, so no decision rests on a cache that lags behind. */
export const refreshMachines: Phase<MachinePoolScope> = async (ctx, scope) => {
  if (scope.object.spec.template) {
    scope.machines = await scope.listMachines();
    return;
  }
  const plan = planPool(scope, true, ctx.clock.now());
  if (plan.create > 0 || plan.delete.length > 0) scope.machines = await scope.listMachines();
};

function describeTemplate(template: PoolTemplate, version: string | undefined): string {
  return `machine type ${template.machineType}, image ${template.image}${version ? `, Kubernetes ${version}` : ""}`;
}

/**
 * Deletes what the rollout names — failed machines (replaced), surplus ones (a scale-down), and old ones
 * while rolling — then creates the new machines it asks for, all at once, at the lowest free indexes.
 */
export const rollOut: Phase<MachinePoolScope> = async (ctx, scope) => {
  const pool = scope.object;
  // A pool on a scale set has its instances made by the cloud (followScaleSet).
  if (pool.spec.template) return;
  const remediation = await remediate(ctx, scope);
  const plan = planPool(scope, remediation.action === "replace", ctx.clock.now());
  const template = poolTemplate(pool.spec);
  const victims = scope.machines.filter((m) => plan.delete.includes(m.metadata.name!));
  if (plan.complete && pool.status?.remediation) delete pool.status.remediation;
  if (victims.length > 0) {
    await deleteMachines(ctx, scope, victims);
    if (victims.some(isFailedForGood)) (pool.status ??= {}).remediation = recordReplacement(pool.status?.remediation, nowTimestamp(new Date(ctx.clock.now())));
    for (const m of victims.filter(isFailedForGood)) {
      await ctx.event(pool, "Warning", "ReplacingMachine", `replacing machine ${m.metadata.name}: ${m.status?.failureReason}: ${m.status?.failureMessage ?? ""}`.trimEnd());
    }
    const healthy = victims.filter((m) => !isFailedForGood(m));
    const outdated = healthy.filter((m) => machineTemplateHash(m, template) !== template.hash);
    const surplus = healthy.filter((m) => !outdated.includes(m));
    if (outdated.length > 0) {
      await ctx.event(pool, "Normal", "RollingMachines", `rolling to template ${template.hash} (${describeTemplate(template, pool.spec.version)}): ${plan.updatedAvailable} of ${desiredReplicas(pool)} machines updated; deleting ${outdated.map((m) => m.metadata.name).join(", ")}`);
    }
    if (surplus.length > 0) await ctx.event(pool, "Normal", "ScalingDown", `scaling down to ${desiredReplicas(pool)}: deleting ${surplus.map((m) => m.metadata.name).join(", ")}`);
  }
  const backOff = remediation.action === "wait" ? { halt: true, requeueAfterMs: remediation.afterMs } : undefined;
  if (plan.create === 0) return backOff;
  // No new machines for a cluster that does not exist (yet) or is going away.
  const cluster = scope.cluster;
  if (!cluster || cluster.metadata.deletionTimestamp) return backOff;
  const poolName = pool.metadata.name!;
  // Names of machines still being deleted stay taken until they are gone.
  const taken = new Set(scope.machines.map((m) => machineIndex(poolName, m.metadata.name ?? "")).filter((i): i is number => i !== undefined));
  const wanted = lowestFreeIndexes(taken, plan.create).map((i) => poolMachine(pool, i, template));
  const machines = ctx.client.of(machineKind);
  const results = await Promise.allSettled(
    wanted.map((machine) => createIfAbsent(() => machines.create(machine))),
  );
  const created = results.flatMap((r) => (r.status === "fulfilled" && r.value ? [r.value] : []));
  scope.machines.push(...created);
  if (created.length > 0) {
    const rolling = plan.outdated > 0;
    await ctx.event(
      pool,
      "Normal",
      rolling ? "RollingMachines" : "ScalingUp",
      rolling
        ? `rolling to template ${template.hash} (${describeTemplate(template, pool.spec.version)}): creating ${created.map((m) => m.metadata.name).join(", ")}`
        : `scaling up to ${desiredReplicas(pool)}: created ${created.map((m) => m.metadata.name).join(", ")}`,
    );
  }
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return backOff;
};

/**
 * A pool is its cluster's: one made on its own (naming the cluster in spec.clusterName, without an
 * owner) is adopted — the Cluster becomes its controlling owner and it gets the cluster's label, so the
 * cluster counts it and deletes it with itself. Until then it stays Pending and makes nothing; a pool
 * naming a cluster that does not exist says so in its status.
 */
export const adoptByCluster: Phase<MachinePoolScope> = async (ctx, scope) => {
  const pool = scope.object;
  const cluster = scope.cluster;
  const owner = controllerOf(pool);
  if (!cluster) {
    scope.waitingForCluster = `spec.clusterName: Cluster "${pool.spec.clusterName}" does not exist in namespace "${pool.metadata.namespace}"; the pool makes no machines until it does`;
    return { halt: true };
  }
  if (owner?.kind === cluster.kind && owner.uid === cluster.metadata.uid) return;
  if (owner) {
    scope.waitingForCluster = `the pool is controlled by ${owner.kind} ${owner.name}, not by Cluster ${pool.spec.clusterName} (spec.clusterName)`;
    return { halt: true };
  }
  if (cluster.metadata.deletionTimestamp) {
    scope.waitingForCluster = `spec.clusterName: Cluster "${pool.spec.clusterName}" is being deleted`;
    return { halt: true };
  }
  const written = await ctx.client.of<MachinePoolObject>(machinePoolKind).patch(pool.metadata.namespace, pool.metadata.name!, "merge", {
    metadata: {
      resourceVersion: pool.metadata.resourceVersion,
      labels: { [LABEL_CLUSTER]: cluster.metadata.name! },
      ownerReferences: [...(pool.metadata.ownerReferences ?? []), controllerRef(cluster)],
    },
  });
  scope.object.metadata = written.metadata;
  await ctx.event(pool, "Normal", "AdoptedByCluster", `Cluster ${cluster.metadata.name} adopted the pool: it is now owned by the cluster and deleted with it`);
  return { halt: true };
};

/** When the cluster's control plane was initialised, as it is now (ms since the epoch), or undefined while it is not. */
export function controlPlaneInitializedAt(cluster: ClusterObject | undefined): number | undefined {
  const initialized = getCondition(cluster?.status?.conditions, CONDITION_CONTROL_PLANE_INITIALIZED);
  return initialized?.status === "True" && initialized.lastTransitionTime ? Date.parse(initialized.lastTransitionTime) : undefined;
}

/**
 * Failed machines whose failure was the control plane's: made before it was initialised, they failed to
 * join (kubeadm's discovery gave up while there was no API server to find, e.g. while a failed first
 * control-plane machine was replaced). They are replaced however many they are: not a sign of something
 * wrong beyond them, and a join never runs again on its own.
 */
function failedBeforeControlPlane(machines: readonly MachineObject[], cluster: ClusterObject | undefined): string[] {
  const initializedAt = controlPlaneInitializedAt(cluster);
  if (initializedAt === undefined) return [];
  return machines
    .filter((m) => m.status?.failureReason === REASONS.joinWorkerFailed && Date.parse(m.metadata.creationTimestamp ?? "") < initializedAt)
    .map((m) => m.metadata.name!);
}

/** Whether the pool's failed machines are replaced now (rollout/remediation.ts), said on its RemediationAllowed condition. */
export async function remediate(ctx: ReconcileContext, scope: MachinePoolScope): Promise<RemediationDecision> {
  const pool = scope.object;
  const failedMachines = scope.machines.filter((m) => isFailedForGood(m) && !isDeleting(m, scope.deleted));
  const failed = failedMachines.map((m) => m.metadata.name!);
  const excused = failedBeforeControlPlane(failedMachines, scope.cluster);
  const decision = decideRemediation({ failed, excused, desired: desiredReplicas(pool), maxUnhealthy: pool.spec.maxUnhealthy, record: pool.status?.remediation, nowMs: ctx.clock.now() });
  const now = nowTimestamp(new Date(ctx.clock.now()));
  if (decision.action === "paused") {
    if (getCondition(pool.status?.conditions, REMEDIATION_ALLOWED)?.reason !== REASON_TOO_MANY_UNHEALTHY) {
      await ctx.event(pool, "Warning", REASON_TOO_MANY_UNHEALTHY, decision.message);
    }
    setCondition((pool.status ??= {}), { type: REMEDIATION_ALLOWED, status: "False", reason: REASON_TOO_MANY_UNHEALTHY, message: decision.message }, now);
  } else if (decision.action === "wait") {
    setCondition((pool.status ??= {}), { type: REMEDIATION_ALLOWED, status: "False", reason: "BackingOff", message: decision.message }, now);
  } else if (getCondition(pool.status?.conditions, REMEDIATION_ALLOWED)) {
    setCondition((pool.status ??= {}), { type: REMEDIATION_ALLOWED, status: "True", reason: "Allowed" }, now);
  }
  return decision;
}

/**
 * Keeps spec.providerIDList the provider IDs of the pool's machines, as Cluster API copies it from the
 * pool's infrastructure; written only when it changed. The list is computed from the machines, not
 * from the pool, so a merge patch of it alone needs no precondition.
 */
export const recordProviderIDs: Phase<MachinePoolScope> = async (ctx, scope) => {
  const pool = scope.object;
  const ids = providerIDList(countedMachines(pool, { machines: scope.machines, deleted: scope.deleted }));
  if (isDeepStrictEqual(ids, pool.spec.providerIDList ?? [])) return;
  const written = await ctx.client.of<MachinePoolObject>(machinePoolKind).patch(pool.metadata.namespace, pool.metadata.name!, "merge", { spec: { providerIDList: ids } });
  pool.metadata = written.metadata;
  pool.spec.providerIDList = written.spec.providerIDList;
};

/**
 * Looks at the pool again the moment its next Ready machine has been Ready for spec.minReadySeconds,
 * so availableReplicas is counted then: nothing else changes at that moment to requeue it.
 */
export const awaitAvailability: Phase<MachinePoolScope> = (ctx, scope) => {
  const pool = scope.object;
  const { nextInMs } = availability(countedMachines(pool, { machines: scope.machines, deleted: scope.deleted }), pool.spec.minReadySeconds ?? 0, ctx.clock.now());
  return nextInMs === undefined ? undefined : { requeueAfterMs: nextInMs };
};


/** Deletes every machine of the pool and waits until they are gone. */
export const deleteAllMachines: Phase<MachinePoolScope> = async (ctx, scope) => {
  scope.machines = await scope.listMachines();
  if (scope.machines.length === 0) return;
  const remaining = active(scope);
  if (remaining.length > 0) {
    await deleteMachines(ctx, scope, remaining);
    await ctx.event(scope.object, "Normal", "DeletingMachines", `deleting ${remaining.length} machine(s)`);
  }
  // Each machine's deletion requeues the pool (controller.ts): the poll is only a safety net, slow and
  // behind every other key of the pool controller (10,000 pools polled every 30 s were ~330 reconciles
  // a second, on the CPU the machines' deletion needed).
  return { halt: true, requeueAfterMs: 120 * scope.timings.pollMs, idle: true };
};

export const machinePoolDeletePhases: readonly Phase<MachinePoolScope>[] = [deleteAllMachines];

/** Keeps only the machines whose managing owner is the pool. */
export function ownedBy(pool: MachinePoolObject, machines: readonly MachineObject[]): MachineObject[] {
  return machines.filter((m) => controllerOf(m)?.uid === pool.metadata.uid);
}
