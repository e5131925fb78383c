// What an Operation's status should say, given its target: the operation controller's judgement, kept
// free of I/O so that every rule can be read (and tested) in one place.
//
// Create and Update are InProgress until the target has observed the operation's generation
// (status.observedGeneration >= spec.generation) and reached phase Running (Succeeded) or Failed
// (Failed, with the target's reason as the error code). A target that is gone, replaced (same name,
// another uid) or being deleted cancels them. Delete is InProgress while the target exists, and
// Succeeded once it is gone. Progress is the share of the target's step journal that has finished.
// An operation that ended never changes again.
import type { KubeObject } from "../../api/meta.ts";
import type { OperationObject, OperationStatus } from "../../api/kinds.ts";
import type { OperationPhase } from "../../api/slipway/operation.ts";
import type { EventType } from "../../runtime/events.ts";

/** What the controller reads of a target: the status convention Cluster and MachinePool follow. */
export interface TargetStatus {
  phase?: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  steps?: readonly { name: string; outcome: string }[];
}

export interface TargetObject extends KubeObject {
  status?: TargetStatus;
}

export interface Verdict {
  phase: OperationPhase;
  percentComplete?: number;
  error?: { code: string; message: string };
  message: string;
}

const TERMINAL: ReadonlySet<OperationPhase> = new Set(["Succeeded", "Failed", "Canceled"]);

export function isTerminal(phase: OperationPhase | undefined): boolean {
  return phase !== undefined && TERMINAL.has(phase);
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

function currentActivity(op: OperationObject, target: TargetObject): string {
  const steps = target.status?.steps ?? [];
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i]!;
    if (step.outcome === "Running") return `${describeTarget(op)}: ${step.name}`;
  }
  const phase = target.status?.phase;
  return phase ? `${describeTarget(op)} is ${phase}` : `waiting for ${describeTarget(op)}`;
}

export function judge(op: OperationObject, target: TargetObject | undefined): Verdict {
  const what = describeTarget(op);
  const deleteOp = op.spec.type === "Delete";
  if (!target || target.metadata.uid !== op.spec.target.uid) {
    const why = target ? `${what} was replaced by a new object of the same name` : `${what} was deleted`;
    return deleteOp ? { phase: "Succeeded", percentComplete: 100, message: why } : { phase: "Canceled", message: why };
  }
  const status = target.status ?? {};
  const progress = progressOf(status.steps);
  const inProgress = (): Verdict => ({
    phase: "InProgress",
    ...(progress !== undefined ? { percentComplete: progress } : {}),
    message: currentActivity(op, target),
  });
  if (deleteOp) return inProgress();
  if (target.metadata.deletionTimestamp) return { phase: "Canceled", message: `${what} is being deleted` };
  const caughtUp = (status.observedGeneration ?? 0) >= (op.spec.generation ?? 0);
  if (caughtUp && status.phase === "Running") return { phase: "Succeeded", percentComplete: 100, message: `${what} is Running` };
  if (caughtUp && status.phase === "Failed") {
    return {
      phase: "Failed",
      error: { code: status.reason ?? "Failed", message: status.message ?? `${what} failed` },
      message: `${what} failed`,
    };
  }
  return inProgress();
}

/** The status after a verdict: start and end times set once, progress and error as judged. */
export function applyVerdict(status: OperationStatus | undefined, verdict: Verdict, now: string): OperationStatus {
  const next: OperationStatus = { ...status, phase: verdict.phase, startTime: status?.startTime ?? now, message: verdict.message };
  if (verdict.percentComplete !== undefined) next.percentComplete = verdict.percentComplete;
  if (isTerminal(verdict.phase)) next.endTime = status?.endTime ?? now;
  if (verdict.error) next.error = verdict.error;
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
