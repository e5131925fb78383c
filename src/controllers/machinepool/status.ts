// What a MachinePool's status says, from its machines: replica counts, the phase (as Cluster API's
// MachinePool phases), whether its machines are healthy (a failing machine's reason is shown on the
// pool), and Ready. Kept free of I/O so every rule can be read and tested in one place.
import type { MachineObject, MachinePoolObject, MachinePoolStatus } from "../../api/kinds.ts";
import { isMachineReady } from "../../api/slipway/machine.ts";
import type { MachinePoolPhase } from "../../api/slipway/machinepool.ts";
import { READY, setCondition, summarize } from "../../runtime/conditions.ts";
import { createFailure, isFailedForGood } from "../machine/status.ts";

/** False while one of the pool's machines is failing (its reason and message shown). */
export const MACHINES_HEALTHY = "MachinesHealthy";
/** True when exactly the wanted number of machines exists and each has a Ready node. */
export const REPLICAS_READY = "ReplicasReady";

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

export interface PoolCounts {
  desired: number;
  /** Machines that exist and are not being deleted. */
  replicas: number;
  ready: number;
  /** Machines with an instance. */
  provisioned: number;
  /** Machines whose node joined. */
  joined: number;
  /** Machines being deleted other than failed ones being replaced: a scale-down in progress. */
  leaving: number;
  /** Machines whose create the cloud refuses (quota, spec): replacing them would not help. */
  refused: number;
}

export function countMachines(pool: MachinePoolObject, { machines, deleted }: PoolMachines): PoolCounts {
  const active = machines.filter((m) => !isDeleting(m, deleted));
  return {
    desired: desiredReplicas(pool),
    replicas: active.length,
    ready: active.filter(isMachineReady).length,
    provisioned: active.filter((m) => m.status?.instanceId !== undefined).length,
    joined: active.filter((m) => m.status?.bootstrapped === true).length,
    leaving: machines.filter((m) => isDeleting(m, deleted) && !isFailedForGood(m)).length,
    refused: active.filter((m) => createFailure(m) !== undefined).length,
  };
}

const STARTING: ReadonlySet<string | undefined> = new Set([undefined, "Pending", "Provisioning", "Provisioned"]);

/**
 * The phase: Deleting; Failed while a machine cannot be created; ScalingDown while machines beyond the
 * wanted number exist or are leaving; Running with every wanted machine Ready; before the pool first
 * ran, Pending → Provisioning → Provisioned as its machines get instances and nodes; afterwards
 * (more replicas wanted, a failed machine replaced) ScalingUp.
 */
export function poolPhase(pool: MachinePoolObject, counts: PoolCounts, previous: MachinePoolPhase | undefined): MachinePoolPhase {
  if (pool.metadata.deletionTimestamp) return "Deleting";
  if (counts.refused > 0) return "Failed";
  if (counts.replicas > counts.desired || counts.leaving > 0) return "ScalingDown";
  if (counts.ready === counts.desired && counts.replicas === counts.desired) return "Running";
  if (STARTING.has(previous)) {
    if (counts.provisioned === 0) return "Pending";
    return counts.joined === counts.replicas && counts.replicas === counts.desired ? "Provisioned" : "Provisioning";
  }
  return "ScalingUp";
}

/** The failure to show on the pool: a machine's that failed for good, or one whose create is refused. */
export function poolFailure(machines: readonly MachineObject[]): { reason: string; message: string } | undefined {
  for (const machine of machines) {
    const status = machine.status;
    if (status?.failureReason !== undefined) {
      return { reason: status.failureReason, message: `Machine ${machine.metadata.name}: ${status.failureMessage ?? status.failureReason}` };
    }
    const refused = createFailure(machine);
    if (refused) return { reason: refused.reason, message: `Machine ${machine.metadata.name}: ${refused.message}` };
  }
  return undefined;
}

/** Writes counts, conditions, reason/message and phase into the pool's status. */
export function summarizePool(pool: MachinePoolObject, state: PoolMachines, now: string): void {
  const previous = pool.status?.phase;
  const status: MachinePoolStatus = (pool.status ??= {});
  const counts = countMachines(pool, state);
  status.replicas = counts.replicas;
  status.readyReplicas = counts.ready;
  status.availableReplicas = counts.ready;
  status.unavailableReplicas = Math.max(0, counts.desired - counts.ready);

  const failure = poolFailure(state.machines);
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
  if (phase === "Running") {
    setCondition(status, { type: REPLICAS_READY, status: "True", reason: "AllReady", message: replicasMessage }, now);
  } else {
    const reason = phase === "ScalingDown" || phase === "ScalingUp" || phase === "Deleting" ? phase : "WaitingForMachines";
    setCondition(status, { type: REPLICAS_READY, status: "False", reason, message: replicasMessage }, now);
  }
  setCondition(status, summarize(status.conditions, [MACHINES_HEALTHY, REPLICAS_READY], READY), now);
  status.phase = phase;
}
