// The operation controller's phases: leave ended operations alone, start the clock, follow the target.
import type { OperationObject } from "../../api/kinds.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Phase, Scope } from "../../runtime/reconciler.ts";
import { applyVerdict, awaitsRecovery, isTerminal, judge, judgeFailed, type TargetObject } from "./status.ts";

export interface OperationScope extends Scope<OperationObject> {
  /** The target as the informer cache holds it (undefined: it does not exist). */
  target?: TargetObject;
  /** False when the controller does not follow objects of the target's kind. */
  followed: boolean;
}

function now(ctx: ReconcileContext): string {
  return nowTimestamp(new Date(ctx.clock.now()));
}

/**
 * An operation that ended is a record of the past: nothing changes it again — except that a Failed one
 * notes its target's recovery (status.ts).
 */
export const skipEnded: Phase<OperationScope> = (ctx, scope) => {
  const status = scope.object.status;
  if (!isTerminal(status?.phase)) return undefined;
  if (awaitsRecovery(status) && scope.followed) {
    const verdict = judgeFailed(scope.object, scope.target);
    if (verdict) scope.object.status = applyVerdict(status, verdict, now(ctx));
  }
  return { halt: true };
};

/** A new operation is InProgress from the moment the controller first sees it. */
export const startOperation: Phase<OperationScope> = (ctx, scope) => {
  const status = scope.object.status;
  if (status?.phase && status.startTime) return;
  scope.object.status = { ...status, phase: status?.phase ?? "InProgress", startTime: status?.startTime ?? now(ctx) };
};

/** Brings the operation's phase, progress and error in line with its target. */
export const followTarget: Phase<OperationScope> = (ctx, scope) => {
  const op = scope.object;
  if (!scope.followed) {
    op.status = { ...op.status, message: `the operation controller does not follow ${op.spec.target.kind} objects` };
    return { halt: true };
  }
  op.status = applyVerdict(op.status, judge(op, scope.target), now(ctx));
};

export const operationPhases: readonly Phase<OperationScope>[] = [skipEnded, startOperation, followTarget];
