// What a MachinePool's status says, from its machines (those its spec.selector chooses): replica counts
// as Cluster API reports them (ready, available after spec.minReadySeconds, updated), the nodes and
// provider IDs they became, the phase (as Cluster API's MachinePool phases), whether its machines are
// healthy (a failing machine's reason is shown on the pool), whether they are made from its current
// template, and Ready. Kept free of I/O so every rule can be read and tested in one place.
import type { MachineObject, MachinePoolObject, MachinePoolStatus } from "../../api/kinds.ts";
import { isMachineReady } from "../../api/slipway/machine.ts";
import { ANNOTATION_REPLICAS_MANAGED_BY, poolSelector, poolSelectorString, type MachinePoolPhase } from "../../api/slipway/machinepool.ts";
import { selectorMatches } from "../../api/selector.ts";
import { READY, getCondition, isTrue, setCondition, summarize } from "../../runtime/conditions.ts";
import { InternalReconcileError } from "../../runtime/failures.ts";
import { BOOTSTRAP_READY, NODE_READY, createFailure, isFailedForGood } from "../machine/status.ts";
import { isCurrent, poolTemplate, type PoolTemplate } from "./template.ts";

/** False while one of the pool's machines is failing (its reason and message shown). */
export const MACHINES_HEALTHY = "MachinesHealthy";
/** True when exactly the wanted number of machines exists and each has a Ready node. */
export const REPLICAS_READY = "ReplicasReady";
/** True once the pool's cluster (spec.clusterName) exists and owns it; False, with why, until then. */
export const CLUSTER_OWNED = "ClusterOwned";
/** True when every machine is made from the pool's current template; False while they are rolled. */
export const MACHINES_UP_TO_DATE = "MachinesUpToDate";

export function desiredReplicas(pool: MachinePoolObject): number {
  return pool.spec.replicas ?? 1;
}

/** The machines of the pool as this reconcile leaves them: `deleted` names those it just deleted. */
export interface PoolMachines {
  machines: readonly MachineObject[];
  deleted: ReadonlySet<string>;
}

export function isDeleting(machine: MachineObject, deleted: ReadonlySet<string>): boolean {
  return machine.metadata.deletionTimestamp !== undefined || deleted.has(machine.metadata.name ?? "");
}

/** The pool's machines its spec.selector chooses. */
export function selectedMachines(pool: MachinePoolObject, machines: readonly MachineObject[]): MachineObject[] {
  const selector = poolSelector(pool);
  return machines.filter((m) => selectorMatches(selector, m.metadata.labels));
}

/** When the machine's node turned Ready (its NodeReady condition), in ms; 0 when not recorded; undefined while not Ready. */
export function readySince(machine: MachineObject): number | undefined {
  if (!isMachineReady(machine)) return undefined;
  const at = Date.parse(getCondition(machine.status?.conditions, NODE_READY)?.lastTransitionTime ?? "");
  return Number.isNaN(at) ? 0 : at;
}

/** Whether the machine's node has been Ready for at least `minReadySeconds` at `nowMs`. */
export function isAvailable(machine: MachineObject, minReadySeconds: number, nowMs: number): boolean {
  const since = readySince(machine);
  return since !== undefined && since + minReadySeconds * 1000 <= nowMs;
}

/**
 * Available machines — Ready for at least `minReadySeconds` at `nowMs` — and in how many ms the next
 * Ready one becomes available (undefined when none is waiting), so the pool is looked at just then.
 */
export function availability(machines: readonly MachineObject[], minReadySeconds: number, nowMs: number): { available: number; nextInMs?: number } {
  let available = 0;
  let nextInMs: number | undefined;
  for (const machine of machines) {
    const since = readySince(machine);
    if (since === undefined) continue;
    const wait = since + minReadySeconds * 1000 - nowMs;
    if (wait <= 0) available++;
    else nextInMs = Math.min(nextInMs ?? wait, wait);
  }
  return nextInMs === undefined ? { available } : { available, nextInMs };
}

/** The provider IDs of the machines (those that have an instance), sorted: the pool's spec.providerIDList. */
export function providerIDList(machines: readonly MachineObject[]): string[] {
  return machines.flatMap((m) => {
    const id = m.spec.providerID ?? m.status?.providerID;
    return id ? [id] : [];
  }).sort();
}

/** The nodes the machines became (those whose node joined), by name. */
export function nodeRefs(machines: readonly MachineObject[]): NonNullable<MachinePoolStatus["nodeRefs"]> {
  return machines
    .flatMap((m) => {
      const name = m.status?.bootstrapped ? m.status.nodeName : undefined;
      return name ? [{ apiVersion: "v1", kind: "Node", name, ...(m.status?.nodeUID ? { uid: m.status.nodeUID } : {}) }] : [];
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The pool's machines it counts: chosen by its selector and not being deleted. */
export function countedMachines(pool: MachinePoolObject, { machines, deleted }: PoolMachines): MachineObject[] {
  return selectedMachines(pool, machines).filter((m) => !isDeleting(m, deleted));
}

export interface PoolCounts {
  desired: number;
  /** Machines that exist and are not being deleted. */
  replicas: number;
  ready: number;
  /** Ready for at least spec.minReadySeconds. */
  available: number;
  /** Machines made from the current template. */
  updated: number;
  /** Of those, the Ready ones. */
  updatedReady: number;
  /** Machines made from another template: being rolled. */
  outdated: number;
  /** Machines with an instance. */
  provisioned: number;
  /** Machines whose node joined. */
  joined: number;
  /** Machines being deleted other than failed ones being replaced: a scale-down in progress. */
  leaving: number;
  /** Machines of the current template whose create the cloud refuses (quota, spec): replacing them would not help. */
  refused: number;
}

/** The counts at `nowMs` (without it, every Ready machine counts as available). */
export function countMachines(pool: MachinePoolObject, state: PoolMachines, template: PoolTemplate = poolTemplate(pool.spec), nowMs = Number.POSITIVE_INFINITY): PoolCounts {
  const machines = selectedMachines(pool, state.machines);
  const { deleted } = state;
  const active = countedMachines(pool, state);
  const current = active.filter((m) => isCurrent(m, template));
  return {
    desired: desiredReplicas(pool),
    replicas: active.length,
    ready: active.filter(isMachineReady).length,
    available: availability(active, pool.spec.minReadySeconds ?? 0, nowMs).available,
    updated: current.length,
    updatedReady: current.filter(isMachineReady).length,
    outdated: active.length - current.length,
    provisioned: active.filter((m) => m.status?.instanceId !== undefined).length,
    joined: active.filter((m) => m.status?.bootstrapped === true).length,
    leaving: machines.filter((m) => isDeleting(m, deleted) && !isFailedForGood(m)).length,
    refused: current.filter((m) => createFailure(m) !== undefined).length,
  };
}

const STARTING: ReadonlySet<string | undefined> = new Set([undefined, "Pending", "Provisioning", "Provisioned"]);

/**
 * The phase: Deleting; Failed while a machine of the current template cannot be created; while rolling
 * to a new template, ScalingUp until enough new machines are Ready, then ScalingDown as old ones go;
 * ScalingDown while machines beyond the wanted number exist or are leaving; Running with every wanted
 * machine up to date and available (Ready for spec.minReadySeconds); before the pool first ran,
 * Pending → Provisioning → Provisioned as its machines get instances and nodes; afterwards (more
 * replicas wanted, a failed machine replaced) ScalingUp. A pool scaled from outside (an autoscaler's
 * annotation) is Scaling instead of ScalingUp or ScalingDown, as Cluster API has it.
 */
export function poolPhase(pool: MachinePoolObject, counts: PoolCounts, previous: MachinePoolPhase | undefined): MachinePoolPhase {
  const phase = ownPhase(pool, counts, previous);
  const external = pool.metadata.annotations?.[ANNOTATION_REPLICAS_MANAGED_BY] !== undefined;
  return external && (phase === "ScalingUp" || phase === "ScalingDown") ? "Scaling" : phase;
}

function ownPhase(pool: MachinePoolObject, counts: PoolCounts, previous: MachinePoolPhase | undefined): MachinePoolPhase {
  if (pool.metadata.deletionTimestamp) return "Deleting";
  if (counts.refused > 0) return "Failed";
  if (counts.outdated > 0) return counts.updatedReady < counts.desired ? "ScalingUp" : "ScalingDown";
  if (counts.replicas > counts.desired || counts.leaving > 0) return "ScalingDown";
  if (counts.updatedReady === counts.desired && counts.replicas === counts.desired && counts.available === counts.desired) return "Running";
  if (STARTING.has(previous)) {
    if (counts.provisioned === 0) return "Pending";
    return counts.joined === counts.replicas && counts.replicas === counts.desired ? "Provisioned" : "Provisioning";
  }
  return "ScalingUp";
}

/**
 * The failure to show on the pool: a machine's that failed for good, or one whose create is refused —
 * of the current template first: what an older template's machines met is replaced by the roll.
 */
export function poolFailure(machines: readonly MachineObject[], template?: PoolTemplate): { reason: string; message: string } | undefined {
  const ordered = template ? [...machines].sort((a, b) => Number(isCurrent(b, template)) - Number(isCurrent(a, template))) : machines;
  for (const machine of ordered) {
    const status = machine.status;
    if (status?.failureReason !== undefined) {
      return { reason: status.failureReason, message: `Machine ${machine.metadata.name}: ${status.failureMessage ?? status.failureReason}` };
    }
    const refused = createFailure(machine);
    if (refused) return { reason: refused.reason, message: `Machine ${machine.metadata.name}: ${refused.message}` };
  }
  return undefined;
}

/** What the pool controller learnt besides the machines, for the status. */
export interface PoolSurroundings {
  /** Set when the pool waits for its cluster: why (naming spec.clusterName). */
  waitingForCluster?: string;
  /** Whether the cluster's infrastructure in the pool's connection is Ready (a pool on a scale set: its infrastructure object's). */
  infrastructureReady?: boolean;
  /** A pool on a scale set: whether its BootstrapConfig has its data (instead of counting machines). */
  bootstrapReady?: boolean;
  /**
   * A pool on a scale set: what its template's objects or the cloud say is in the way (a missing or
   * foreign object, replicas beyond the scale set's limits, quota or capacity), for InfrastructureReady.
   */
  infrastructureProblem?: { reason: string; message: string };
  /** A pool on a scale set: a roll that cannot go on (no room to surge, none may be unavailable), for MachinesUpToDate. */
  rollBlocked?: { reason: string; message: string };
}

/** A pool on a scale set: False while its bootstrap or infrastructure object, or the cloud, holds it back. */
export const INFRASTRUCTURE_READY = "InfrastructureReady";

/** Whether the machine has its bootstrap data (or no longer needs it: its node joined). */
function hasBootstrapData(machine: MachineObject): boolean {
  return machine.status?.bootstrapped === true || isTrue(machine.status?.conditions, BOOTSTRAP_READY);
}

/**
 * Writes counts, conditions, reason/message and phase into the pool's status; a step that failed with an
 * unexpected error (`error`) fails the pool with reason InternalError.
 */
export function summarizePool(pool: MachinePoolObject, state: PoolMachines, now: string, error?: unknown, surroundings: PoolSurroundings = {}): void {
  const { waitingForCluster } = surroundings;
  const previous = pool.status?.phase;
  const status: MachinePoolStatus = (pool.status ??= {});
  const template = poolTemplate(pool.spec);
  const counts = countMachines(pool, state, template, Date.parse(now));
  const counted = countedMachines(pool, state);
  status.replicas = counts.replicas;
  status.readyReplicas = counts.ready;
  status.updatedReplicas = counts.updated;
  status.availableReplicas = counts.available;
  status.unavailableReplicas = Math.max(0, counts.desired - counts.available);
  status.nodeRefs = nodeRefs(counted);
  status.bootstrapReady = surroundings.bootstrapReady ?? (!waitingForCluster && counted.every(hasBootstrapData));
  status.infrastructureReady = surroundings.infrastructureReady === true;

  const blocked = surroundings.rollBlocked;
  if (counts.outdated > 0 && blocked) {
    setCondition(status, { type: MACHINES_UP_TO_DATE, status: "False", reason: blocked.reason, message: blocked.message }, now);
  } else if (counts.outdated > 0) {
    const message = `${counts.updatedReady} of ${counts.desired} machines Ready from the current template (${template.hash}: machine type ${template.machineType}, image ${template.image}); ${counts.outdated} of an older template to replace`;
    setCondition(status, { type: MACHINES_UP_TO_DATE, status: "False", reason: "Rolling", message }, now);
  } else {
    setCondition(status, { type: MACHINES_UP_TO_DATE, status: "True", reason: "UpToDate", message: `every machine is made from template ${template.hash}` }, now);
  }
  const failure = error instanceof InternalReconcileError ? { reason: error.reason, message: error.message } : poolFailure(state.machines, template);
  if (failure) {
    setCondition(status, { type: MACHINES_HEALTHY, status: "False", reason: failure.reason, message: failure.message }, now);
    status.reason = failure.reason;
    status.message = failure.message;
  } else {
    setCondition(status, { type: MACHINES_HEALTHY, status: "True", reason: "Healthy" }, now);
    delete status.reason;
    delete status.message;
  }
  const phase = poolPhase(pool, counts, previous);
  const replicasMessage = `${counts.ready} of ${counts.desired} machines ready, ${counts.replicas} exist`;
  const replicasReady = !pool.metadata.deletionTimestamp && counts.ready === counts.desired && counts.replicas === counts.desired && counts.leaving === 0;
  if (replicasReady) {
    setCondition(status, { type: REPLICAS_READY, status: "True", reason: "AllReady", message: replicasMessage }, now);
  } else {
    const reason = phase === "ScalingDown" || phase === "ScalingUp" || phase === "Scaling" || phase === "Deleting" ? phase : "WaitingForMachines";
    setCondition(status, { type: REPLICAS_READY, status: "False", reason, message: replicasMessage }, now);
  }
  if (waitingForCluster) {
    setCondition(status, { type: CLUSTER_OWNED, status: "False", reason: "WaitingForCluster", message: waitingForCluster }, now);
    status.reason = "WaitingForCluster";
    status.message = waitingForCluster;
  } else {
    setCondition(status, { type: CLUSTER_OWNED, status: "True", reason: "Owned", message: `owned by Cluster ${pool.spec.clusterName}` }, now);
  }
  const onScaleSet = pool.spec.template !== undefined;
  const problem = surroundings.infrastructureProblem;
  if (onScaleSet && problem) {
    setCondition(status, { type: INFRASTRUCTURE_READY, status: "False", reason: problem.reason, message: problem.message }, now);
    status.reason ??= problem.reason;
    status.message ??= problem.message;
  } else if (onScaleSet) {
    setCondition(status, { type: INFRASTRUCTURE_READY, status: "True", reason: "ScaleSetReady", message: `${pool.spec.template!.infrastructureRef.kind} ${pool.spec.template!.infrastructureRef.name} is ready` }, now);
  }
  if (counts.outdated > 0 && blocked) {
    status.reason ??= blocked.reason;
    status.message ??= blocked.message;
  }
  setCondition(status, summarize(status.conditions, [CLUSTER_OWNED, ...(onScaleSet ? [INFRASTRUCTURE_READY] : []), MACHINES_HEALTHY, REPLICAS_READY, MACHINES_UP_TO_DATE], READY), now);
  status.selector = poolSelectorString(pool);
  if (waitingForCluster && !pool.metadata.deletionTimestamp) status.phase = "Pending";
  else status.phase = error instanceof InternalReconcileError && !pool.metadata.deletionTimestamp ? "Failed" : phase;
}
