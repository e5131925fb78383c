// The lease's status summed up before every write: Failed with the cloud's reason when a phase found a
// final failure, and the Active condition following the phase.
import type { ReconcileContext } from "../../runtime/controller.ts";
import { setCondition } from "../../runtime/conditions.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { LeaseScope } from "./scope.ts";

export const CONDITION_ACTIVE = "Active";

export function summarizeLease(ctx: ReconcileContext, scope: LeaseScope, error: unknown): void {
  const lease = scope.object;
  const st = (lease.status ??= {});
  const at = nowTimestamp(new Date(ctx.clock.now()));
  if (scope.problem) {
    st.phase = "Failed";
    st.reason = scope.problem.reason;
    st.message = scope.problem.message;
  } else if (error !== undefined && st.phase !== "Expired") {
    st.reason = "Retrying";
    st.message = `retrying after: ${error instanceof Error ? error.message : String(error)}`;
  } else if (st.phase !== "Expired" && st.phase !== "Failed") {
    delete st.reason;
    delete st.message;
  }
  st.phase ??= "Pending";
  const active = st.phase === "Active";
  const why =
    st.phase === "Pending" ? `the reservations start at ${st.startTime ?? lease.spec.startTime ?? "once made"}` : st.phase === "Active" ? `the reservations hold until ${st.endTime ?? lease.spec.endTime}` : (st.message ?? st.phase);
  setCondition(st, { type: CONDITION_ACTIVE, status: active ? "True" : "False", reason: active ? "Active" : `Lease${st.phase}`, message: why }, at);
}
