// What an Operation's status should say, given its target: the operation controller's judgement, kept
// free of I/O so that every rule can be read (and tested) in one place.
//
// Create and Update succeed only once the change they record is there: the target has applied their
// generation (status.observedGeneration, written only after a reconcile that ran to its end), is Ready
// and Running, and what the spec asks for is observed — every wanted machine exists, is Ready and is
// made from its current template, and no machine is left to remove. A target that failed for their
// generation fails them, with its reason as the error code. Until then they are InProgress, saying what
// the target is doing (and why it retries). A target that is gone, replaced (same name, another uid) or
// being deleted cancels them; an Update whose generation a later spec change superseded is Canceled in
// favour of that change's operation (a Create follows the cluster to its latest spec instead). Delete is
// InProgress while the target exists, and Succeeded once it is gone.
//
// Progress: a Create counts the finished steps of the target's journal against all the steps it will
// have (the journal grows as the cluster is built: see createProgress); an Update counts only the
// machines its change makes, replaces or removes: the most still to do seen at once (kept in
// status.machinesToChange) is the whole, what is done of it the part — so it starts at 0 %, not at the
// share of the cluster already built; an Upgrade touches every machine: those Ready at the new version
// over all wanted. A Create's or a Delete's percentage never goes back while it is in progress.
//
// An operation that ended keeps its phase, error and end time: a client that stopped polling was told
// the truth about that attempt. A Failed operation whose target later applies the same generation and is
// Ready (someone raised the quota, the cloud recovered) is not made Succeeded after the fact; it gains a
// recovery time and a message saying the change is applied after all.
import type { ConditionT, KubeObject } from "../../api/meta.ts";
import type { OperationObject, OperationStatus } from "../../api/kinds.ts";
import type { OperationPhase } from "../../api/slipway/operation.ts";
import type { EventType } from "../../runtime/events.ts";
import { STEP_NETWORK_PLUGIN, STEP_READY } from "../../api/slipway/cluster.ts";
import { names } from "../contract.ts";

/** Machine counts of one group of a target (a cluster's control plane, its workers; a pool). */
interface GroupCounts {
  desired: number;
  ready: number;
  updated?: number;
  replicas?: number;
}

/** What the controller reads of a target: the status convention Cluster and MachinePool follow. */
export interface TargetStatus {
  phase?: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  conditions?: readonly ConditionT[];
  steps?: readonly { name: string; outcome: string; target?: { kind: string; name: string } }[];
  // A Cluster's counts.
  controlPlane?: GroupCounts;
  workers?: GroupCounts;
  // A MachinePool's counts.
  replicas?: number;
  readyReplicas?: number;
  updatedReplicas?: number;
}

/** What the controller reads of a target's spec: the machines it asks for. */
export interface TargetSpec {
  replicas?: number;
  controlPlane?: { replicas?: number; connection?: string };
  workers?: readonly { replicas?: number; connection?: string }[];
}

export interface TargetObject extends KubeObject {
  spec?: TargetSpec;
  status?: TargetStatus;
}

export interface Verdict {
  phase: OperationPhase;
  percentComplete?: number;
  error?: { code: string; message: string };
  message: string;
  /** For a Failed operation: the target has since applied its generation and is Ready. */
  recovered?: boolean;
  /** For an Update: the machines its change makes, replaces or removes (what its percentage counts against). */
  machinesToChange?: number;
}

const TERMINAL: ReadonlySet<OperationPhase> = new Set(["Succeeded", "Failed", "Canceled"]);

export function isTerminal(phase: OperationPhase | undefined): boolean {
  return phase !== undefined && TERMINAL.has(phase);
}

/** A Failed operation that may still see its target recover (so it keeps following it). */
export function awaitsRecovery(status: OperationStatus | undefined): boolean {
  return status?.phase === "Failed" && status.recoveredTime === undefined;
}

function describeTarget(op: OperationObject): string {
  return `${op.spec.target.kind} ${op.spec.target.name}`;
}

/** Finished steps ÷ all steps, in percent; below 100 while the operation is in progress. */
export function progressOf(steps: TargetStatus["steps"]): number | undefined {
  if (!steps || steps.length === 0) return undefined;
  const finished = steps.filter((s) => s.outcome !== "Running").length;
  return Math.min(99, Math.floor((finished * 100) / steps.length));
}

/** The cloud resources every infrastructure's journal shows: network, subnet, security group, key pair (the control plane's adds its load balancer). */
const INFRASTRUCTURE_STEPS = 4;

/**
 * Of a Create: the finished steps of the cluster's journal over all the steps it will have. The journal
 * grows as the cluster is built — a machine's step appears when the machine is made —, so over its own
 * length a new cluster would show 99 % after its validation and then fall back. Counted in besides:
 * for each connection the spec names whose infrastructure is not journalled yet, its cloud resources (and
 * the load balancer, until one infrastructure is); one step per wanted machine not journalled yet; the
 * network plugin, and Ready.
 */
export function createProgress(target: TargetObject, groups: readonly Group[]): number | undefined {
  const steps = target.status?.steps;
  if (!steps || steps.length === 0) return undefined;
  const spec = target.spec ?? {};
  const connections = new Set([spec.controlPlane?.connection, ...(spec.workers ?? []).map((w) => w.connection)].filter((c) => c !== undefined));
  const journalled = (kind: string) => new Set(steps.filter((s) => s.target?.kind === kind).map((s) => s.target!.name)).size;
  const infrastructures = journalled("Infrastructure");
  const machines = wantedMachines(groups);
  const toCome =
    Math.max(0, connections.size - infrastructures) * INFRASTRUCTURE_STEPS +
    (infrastructures === 0 && connections.size > 0 ? 1 : 0) +
    Math.max(0, machines - journalled("Machine")) +
    (steps.some((s) => s.name === STEP_NETWORK_PLUGIN) ? 0 : 1) +
    (steps.some((s) => s.name === STEP_READY) ? 0 : 1);
  const finished = steps.filter((s) => s.outcome !== "Running").length;
  return Math.min(99, Math.floor((finished * 100) / (steps.length + toCome)));
}

/** A percentage that does not go back: the higher of the new one and the one reported before. */
function notBelow(reported: number | undefined, progress: number | undefined): number | undefined {
  if (progress === undefined) return reported;
  return reported === undefined ? progress : Math.max(reported, progress);
}

interface Group {
  name: string;
  desired: number;
  /** Wanted machines in place: Ready, from the current template. */
  inPlace: number;
  /** Machines still to make Ready or to remove. */
  remaining: number;
}

/** The machines the target's spec asks for, in all its groups. */
function wantedMachines(groups: readonly Group[]): number {
  return groups.reduce((sum, g) => sum + g.desired, 0);
}

/** The target's machine groups, what its spec asks of each and what its status observes. */
export function groupsOf(target: TargetObject): Group[] {
  const group = (name: string, desired: number, counts: GroupCounts | undefined): Group => {
    const ready = counts?.ready ?? 0;
    const updated = Math.min(counts?.updated ?? ready, ready);
    const replicas = counts?.replicas ?? ready;
    const inPlace = Math.min(updated, desired);
    return { name, desired, inPlace, remaining: desired - inPlace + Math.max(0, replicas - desired) };
  };
  const spec = target.spec ?? {};
  const status = target.status ?? {};
  if (target.kind === "MachinePool") {
    return [group("machines", spec.replicas ?? 1, { desired: spec.replicas ?? 1, ready: status.readyReplicas ?? 0, updated: status.updatedReplicas, replicas: status.replicas })];
  }
  if (target.kind === "Cluster") {
    const workers = (spec.workers ?? []).reduce((sum, w) => sum + (w.replicas ?? 1), 0);
    return [group("control-plane machines", spec.controlPlane?.replicas ?? 1, status.controlPlane), group("worker machines", workers, status.workers)];
  }
  return [];
}

/**
 * Of a change: the machines still to make Ready or remove, against the most seen at once (`size`, at
 * least `seenBefore`); undefined when nothing is left to do.
 */
export function changeProgress(groups: readonly Group[], seenBefore = 0): { percent: number; size: number } | undefined {
  const remaining = groups.reduce((sum, g) => sum + g.remaining, 0);
  if (remaining === 0) return undefined;
  const size = Math.max(seenBefore, remaining);
  return { percent: Math.min(99, Math.floor(((size - remaining) * 100) / size)), size };
}

/**
 * Of an upgrade, which touches every machine: the machines Ready at the new version over all wanted
 * machines (machines still leaving hold it below 100, not back: a surge machine adds nothing to do).
 */
export function upgradeProgress(groups: readonly Group[]): number | undefined {
  const desired = wantedMachines(groups);
  if (desired === 0) return undefined;
  const inPlace = groups.reduce((sum, g) => sum + g.inPlace, 0);
  return Math.min(99, Math.floor((inPlace * 100) / desired));
}

/** What is still missing, e.g. "worker machines: 1 of 3 in place, 2 to go". */
function missing(groups: readonly Group[]): string | undefined {
  const open = groups.filter((g) => g.remaining > 0);
  if (open.length === 0) return undefined;
  return open.map((g) => `${g.name}: ${g.inPlace} of ${g.desired} in place, ${g.remaining} to go`).join("; ");
}

function currentActivity(op: OperationObject, target: TargetObject, groups: readonly Group[]): string {
  const what = describeTarget(op);
  const status = target.status ?? {};
  if (status.reason) return `${what} is ${status.phase ?? "pending"}: ${status.reason}: ${status.message ?? ""}`.trimEnd();
  if (op.spec.type === "Create") {
    const steps = status.steps ?? [];
    for (let i = steps.length - 1; i >= 0; i--) {
      const step = steps[i]!;
      if (step.outcome === "Running") return `${what}: ${step.name}`;
    }
  }
  const left = missing(groups);
  if (!status.phase) return `waiting for ${what}`;
  return left ? `${what} is ${status.phase}: ${left}` : `${what} is ${status.phase}`;
}

function isReady(conditions: readonly ConditionT[] | undefined): boolean {
  return conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
}

export function judge(op: OperationObject, target: TargetObject | undefined): Verdict {
  const what = describeTarget(op);
  const deleteOp = op.spec.type === "Delete";
  if (!target || target.metadata.uid !== op.spec.target.uid) {
    const why = target ? `${what} was replaced by a new object of the same name` : `${what} was deleted`;
    return deleteOp ? { phase: "Succeeded", percentComplete: 100, message: why } : { phase: "Canceled", message: why };
  }
  const status = target.status ?? {};
  const groups = groupsOf(target);
  if (deleteOp) {
    const progress = notBelow(op.status?.percentComplete, progressOf(status.steps));
    return { phase: "InProgress", ...(progress !== undefined ? { percentComplete: progress } : {}), message: currentActivity(op, target, groups) };
  }
  if (target.metadata.deletionTimestamp) return { phase: "Canceled", message: `${what} is being deleted` };
  const generation = target.metadata.generation ?? 0;
  const asked = op.spec.generation ?? 0;
  if (op.spec.type === "Update" && generation > asked) {
    const next = op.spec.target.kind === "Cluster" ? ` (operation ${names.operation(op.spec.target.name, "Update", generation)})` : "";
    return { phase: "Canceled", message: `superseded by a later change of ${what}: generation ${generation}${next}` };
  }
  // A Create follows the target to its latest spec: the cluster is made when it is made as it is now wanted.
  const applied = (status.observedGeneration ?? 0) >= Math.max(asked, op.spec.type === "Create" ? generation : asked);
  const left = missing(groups);
  if (applied && status.phase === "Running" && isReady(status.conditions) && left === undefined) {
    return { phase: "Succeeded", percentComplete: 100, message: `${what} is Running: the change is applied and every node is Ready` };
  }
  if (applied && status.phase === "Failed") {
    return { phase: "Failed", error: { code: status.reason ?? "Failed", message: status.message ?? `${what} failed` }, message: `${what} failed` };
  }
  // Counts of a status that has not looked at the change yet say nothing of its progress.
  const seen = (status.observedGeneration ?? 0) >= asked;
  const message = currentActivity(op, target, groups);
  if (op.spec.type === "Update") {
    const change = seen ? changeProgress(groups, op.status?.machinesToChange) : undefined;
    return { phase: "InProgress", ...(change ? { percentComplete: change.percent, machinesToChange: change.size } : {}), message };
  }
  const progress = op.spec.type === "Create" ? notBelow(op.status?.percentComplete, createProgress(target, groups)) : seen ? upgradeProgress(groups) : undefined;
  return { phase: "InProgress", ...(progress !== undefined ? { percentComplete: progress } : {}), message };
}

/**
 * The verdict on a Failed operation: it stays Failed, and is marked recovered once its target has
 * applied the same generation and is Ready after all.
 */
export function judgeFailed(op: OperationObject, target: TargetObject | undefined): Verdict | undefined {
  if (!awaitsRecovery(op.status) || !target || target.metadata.uid !== op.spec.target.uid || op.spec.type === "Delete") return undefined;
  if ((target.metadata.generation ?? 0) !== (op.spec.generation ?? 0)) return undefined;
  const now = judge(op, target);
  if (now.phase !== "Succeeded") return undefined;
  const error = op.status?.error;
  return {
    phase: "Failed",
    recovered: true,
    message: `${describeTarget(op)} failed${error ? ` (${error.code})` : ""}, then recovered: the change is applied and every node is Ready`,
  };
}

/** The status after a verdict: start and end times set once, progress and error as judged. */
export function applyVerdict(status: OperationStatus | undefined, verdict: Verdict, now: string): OperationStatus {
  const next: OperationStatus = { ...status, phase: verdict.phase, startTime: status?.startTime ?? now, message: verdict.message };
  if (verdict.percentComplete !== undefined) next.percentComplete = verdict.percentComplete;
  if (isTerminal(verdict.phase)) next.endTime = status?.endTime ?? now;
  if (verdict.error) next.error = verdict.error;
  if (verdict.recovered) next.recoveredTime = status?.recoveredTime ?? now;
  if (verdict.machinesToChange !== undefined) next.machinesToChange = verdict.machinesToChange;
  return next;
}

/** The Event recorded when an operation enters a phase. */
export function phaseEvent(op: OperationObject, phase: OperationPhase): { type: EventType; reason: string; message: string } {
  const what = `${op.spec.type} of ${describeTarget(op)}`;
  switch (phase) {
    case "InProgress":
      return { type: "Normal", reason: "Started", message: `${what} started` };
    case "Succeeded":
      return { type: "Normal", reason: "Succeeded", message: `${what} succeeded` };
    case "Failed": {
      const error = op.status?.error;
      return { type: "Warning", reason: "Failed", message: `${what} failed${error ? `: ${error.code}: ${error.message}` : ""}` };
    }
    case "Canceled":
      return { type: "Normal", reason: "Canceled", message: `${what} was canceled: ${op.status?.message ?? ""}`.trimEnd() };
  }
}

/** The Event recorded when a Failed operation's target recovers. */
export function recoveryEvent(op: OperationObject): { type: EventType; reason: string; message: string } {
  return { type: "Normal", reason: "Recovered", message: `${op.spec.type} of ${describeTarget(op)} failed earlier; the change is now applied and every node is Ready` };
}
