// What a Machine's status says: one condition per stage of its life (bootstrap data, instance, load
// balancer target, node joined, node Ready), the phase they add up to, and the failure that ends it.
// Kept free of I/O so every rule can be read and tested in one place.
import type { MachineObject, MachineStatus } from "../../api/kinds.ts";
import { type MachinePhase, ANNOTATION_BOOTSTRAP, ROLE_CONTROL_PLANE } from "../../api/slipway/machine.ts";
import { READY, getCondition, isTrue, setCondition, summarize, type ConditionInput } from "../../runtime/conditions.ts";
import { InternalReconcileError } from "../../runtime/failures.ts";
import { BOOTSTRAP_FETCH_COMMAND } from "../../bootstrap/cloudinit.ts";

/** The bootstrap data Secret exists (and what it needs did: infrastructure, endpoint, cluster secrets). */
export const BOOTSTRAP_READY = "BootstrapReady";
/** The cloud instance is running. */
export const INSTANCE_READY = "InstanceReady";
/**
 * The instance is a target of the control-plane load balancer and the cloud reports it healthy
 * (control-plane machines only); False with the cloud's verdict while it is registered but not healthy.
 */
export const LOAD_BALANCER_TARGET = "LoadBalancerTarget";
/** kubeadm init or join completed: the Node exists in the workload cluster. */
export const NODE_JOINED = "NodeJoined";
/** The Node reports Ready. */
export const NODE_READY = "NodeReady";
/**
 * Delete path: the node was cordoned and its pods evicted (or that was skipped or timed out, with the
 * reason); False while evictions are refused by a disruption budget or the cluster's API does not answer.
 */
export const NODE_DRAINED = "NodeDrained";

export const REASONS = {
  waitingForCluster: "WaitingForCluster",
  waitingForConnection: "WaitingForConnection",
  waitingForInfrastructure: "WaitingForInfrastructure",
  waitingForControlPlaneEndpoint: "WaitingForControlPlaneEndpoint",
  waitingForClusterSecrets: "WaitingForClusterSecrets",
  waitingForJoinToken: "WaitingForJoinToken",
  waitingForPoolTemplate: "WaitingForPoolTemplate",
  bootstrapDataReady: "BootstrapDataReady",
  instanceProvisioning: "InstanceProvisioning",
  instanceRunning: "InstanceRunning",
  createMachineFailed: "CreateMachineFailed",
  quotaExceeded: "QuotaExceeded",
  registered: "Registered",
  targetHealthy: "Healthy",
  healthChecksPending: "HealthChecksPending",
  targetUnhealthy: "TargetUnhealthy",
  waitingForInstance: "WaitingForInstance",
  waitingForNode: "WaitingForNode",
  waitingForControlPlane: "WaitingForControlPlane",
  nodeJoined: "NodeJoined",
  nodeNotReady: "NodeNotReady",
  nodeReady: "NodeReady",
  nodeGone: "NodeGone",
  instanceGone: "InstanceGone",
  instanceFailed: "InstanceFailed",
  deadlineExceeded: "DeadlineExceeded",
  controlPlaneInitFailed: "ControlPlaneInitFailed",
  joinControlPlaneFailed: "JoinControlPlaneFailed",
  joinWorkerFailed: "JoinWorkerFailed",
  drained: "Drained",
  drainSkipped: "DrainSkipped",
  drainTimedOut: "DrainTimedOut",
  evictionBlocked: "EvictionBlocked",
  /** The machine's bootstrap secret was deleted once its node joined: nothing secret is left in the cloud. */
  bootstrapSecretDeleted: "BootstrapSecretDeleted",
  /** The machine could not read its bootstrap secret at boot (expired, deleted, refused): it never ran kubeadm. */
  bootstrapSecretUnavailable: "BootstrapSecretUnavailable",
} as const;

/** Reasons of a create the cloud refused for a cause that can be fixed (quota, spec): retried in place. */
const CREATE_FAILURES: ReadonlySet<string> = new Set([REASONS.createMachineFailed, REASONS.quotaExceeded]);

export function isInitMachine(machine: MachineObject): boolean {
  return machine.metadata.annotations?.[ANNOTATION_BOOTSTRAP] === "init";
}

export function isControlPlane(machine: MachineObject): boolean {
  return machine.spec.role === ROLE_CONTROL_PLANE;
}

/** The reason a failed `kubeadm init|join` is reported under, by what the machine was doing. */
export function bootstrapFailureReason(machine: MachineObject): string {
  if (isInitMachine(machine)) return REASONS.controlPlaneInitFailed;
  return isControlPlane(machine) ? REASONS.joinControlPlaneFailed : REASONS.joinWorkerFailed;
}

/** True once the machine failed in a way it never recovers from: its owner replaces it. */
export function isFailedForGood(machine: MachineObject): boolean {
  return machine.status?.failureReason !== undefined;
}

/** The create failure the machine is retrying, if any (quota, a spec the cloud refuses). */
export function createFailure(machine: MachineObject): { reason: string; message: string } | undefined {
  const instance = getCondition(machine.status?.conditions, INSTANCE_READY);
  if (machine.status?.instanceId || !instance || instance.status !== "False" || !CREATE_FAILURES.has(instance.reason ?? "")) return undefined;
  return { reason: instance.reason!, message: instance.message ?? "" };
}

/** Records a failure for good: the phase becomes Failed and stays so until the machine is deleted. */
export function setFailure(status: MachineStatus, reason: string, message: string): void {
  status.failureReason = reason;
  status.failureMessage = message;
}

/** An RFC 3339 timestamp at the start of a boot-log line (the cloud stamps each line it keeps). */
const STAMP = /^\d{4}-\d{2}-\d{2}T[0-9:.]+Z /;
const KUBEADM_ERROR = /^error execution phase /;

/** The shell's line when a command of the user data is not installed ("…/runcmd: 14: kubeadm: not found"). */
const KUBEADM_MISSING = /: kubeadm: (not found|command not found)$/;

/**
 * The failure kubeadm printed on the console, if any: its first line ("error execution phase …") with
 * the indented lines that follow it (the individual preflight errors) — or, when kubeadm never ran
 * because nothing installed it, the shell's line with the package errors before it.
 */
/** What a machine printed when it could not read its bootstrap secret at boot, if it did. */
export function bootstrapSecretFailure(consoleLines: readonly string[]): string | undefined {
  const prefix = `${BOOTSTRAP_FETCH_COMMAND}: error: `;
  const line = consoleLines.map((l) => l.replace(STAMP, "")).find((l) => l.startsWith(prefix));
  return line?.slice(prefix.length).trim();
}

export function kubeadmFailure(consoleLines: readonly string[]): string | undefined {
  const lines = consoleLines.map((line) => line.replace(STAMP, ""));
  const first = lines.findIndex((line) => KUBEADM_ERROR.test(line));
  const missing = lines.find((line) => KUBEADM_MISSING.test(line));
  if (first < 0 && missing) {
    const packages = lines.filter((line) => line.startsWith("E: "));
    return [`kubeadm is not installed on the machine: ${missing.trim()}`, ...packages].join(" ");
  }
  if (first < 0) return undefined;
  const details: string[] = [];
  for (const line of lines.slice(first + 1)) {
    if (!/^\s/.test(line)) break;
    details.push(line.trim());
  }
  return [lines[first]!.trim(), ...details].join(" ");
}

/** What kubeadm join last said it retries while it cannot reach the control-plane endpoint, if it does. */
export function kubeadmRetrying(consoleLines: readonly string[]): string | undefined {
  for (let i = consoleLines.length - 1; i >= 0; i--) {
    const retry = /\[discovery\] Failed to request cluster-info, will try again: (.*)$/.exec(consoleLines[i]!);
    if (retry) return `kubeadm cannot reach the control-plane endpoint: ${retry[1]!.trim()}`;
  }
  return undefined;
}

/** The phase the status adds up to. */
export function machinePhase(machine: MachineObject): MachinePhase {
  const status = machine.status ?? {};
  if (machine.metadata.deletionTimestamp) return "Deleting";
  if (status.failureReason !== undefined || createFailure(machine)) return "Failed";
  if (status.nodeReady) return "Running";
  if (status.bootstrapped) return "Provisioned";
  if (status.instanceId) return "Provisioning";
  return "Pending";
}

/** The conditions Ready summarises, in the order their failures matter. */
export function readinessConditions(machine: MachineObject): string[] {
  return [BOOTSTRAP_READY, INSTANCE_READY, ...(isControlPlane(machine) ? [LOAD_BALANCER_TARGET] : []), NODE_JOINED, NODE_READY];
}

/**
 * Sets phase and Ready from the other conditions and the failure, if any. A step that failed with an
 * unexpected error (`error`) shows on Ready; it does not fail the machine for good (replacing it would
 * meet the same defect).
 */
export function summarizeMachine(machine: MachineObject, now: string, error?: unknown): void {
  const status: MachineStatus = (machine.status ??= {});
  let ready: ConditionInput;
  if (error instanceof InternalReconcileError) {
    ready = { type: READY, status: "False", reason: error.reason, message: error.message };
  } else if (status.failureReason !== undefined) {
    ready = { type: READY, status: "False", reason: status.failureReason, message: status.failureMessage ?? "" };
  } else if (machine.metadata.deletionTimestamp) {
    ready = { type: READY, status: "False", reason: "Deleting", message: "the machine is being deleted" };
  } else {
    ready = summarize(status.conditions, readinessConditions(machine));
  }
  setCondition(status, ready, now);
  status.phase = machinePhase(machine);
}

/** Whether the machine's instance was registered with the control-plane load balancer (healthy or not yet). */
export function isRegisteredTarget(machine: MachineObject): boolean {
  const reason = getCondition(machine.status?.conditions, LOAD_BALANCER_TARGET)?.reason;
  return reason === REASONS.registered || reason === REASONS.targetHealthy || reason === REASONS.healthChecksPending || reason === REASONS.targetUnhealthy;
}

/** True when the condition is True on the machine. */
export function has(machine: MachineObject, type: string): boolean {
  return isTrue(machine.status?.conditions, type);
}

/** When the condition last changed status, in ms since the epoch (undefined: never set). */
export function since(machine: MachineObject, type: string): number | undefined {
  const at = getCondition(machine.status?.conditions, type)?.lastTransitionTime;
  return at === undefined ? undefined : Date.parse(at);
}
