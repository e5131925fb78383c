// Conditions, as Cluster API keeps them: one per aspect of an object's state, with a reason, a message
// and a lastTransitionTime that moves only when the status changes — so `describe` can say since when
// something has been wrong. Children's conditions are mirrored onto their parent and summarised into
// Ready.
import type { ConditionT, KubeObject } from "../api/meta.ts";

export type ConditionStatus = ConditionT["status"];

/** A condition as a controller states it; the transition time is the helpers' business. */
export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

/** Anything that holds a list of conditions, usually an object's status. */
export interface ConditionHolder {
  conditions?: ConditionT[];
}

export const READY = "Ready";

export function getCondition(conditions: readonly ConditionT[] | undefined, type: string): ConditionT | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isTrue(conditions: readonly ConditionT[] | undefined, type: string): boolean {
  return getCondition(conditions, type)?.status === "True";
}

/**
 * Sets a condition on the holder, in place. The lastTransitionTime is `now` when the condition is new or
 * its status changed, and stays as it was otherwise (even when reason or message change). Returns the
 * condition as stored.
 */
export function setCondition(holder: ConditionHolder, input: ConditionInput, now: string): ConditionT {
  const conditions = holder.conditions ?? [];
  const index = conditions.findIndex((c) => c.type === input.type);
  const previous = index >= 0 ? conditions[index] : undefined;
  const next: ConditionT = {
    type: input.type,
    status: input.status,
    ...(input.reason !== undefined ? { reason: input.reason } : {}),
    ...(input.message !== undefined ? { message: input.message } : {}),
    lastTransitionTime: previous && previous.status === input.status && previous.lastTransitionTime ? previous.lastTransitionTime : now,
    ...(input.observedGeneration !== undefined ? { observedGeneration: input.observedGeneration } : {}),
  };
  if (index >= 0) conditions[index] = next;
  else conditions.push(next);
  holder.conditions = conditions;
  return next;
}

export function removeCondition(holder: ConditionHolder, type: string): void {
  if (!holder.conditions) return;
  holder.conditions = holder.conditions.filter((c) => c.type !== type);
}

/**
 * The condition a parent shows for one of a child's: same status, reason and message (naming the
 * child), under the parent's condition type. A child that has not reported the condition yet reads as
 * Unknown.
 */
export function mirrorCondition(
  child: (KubeObject & { status?: unknown }) | undefined,
  childType: string,
  parentType: string,
): ConditionInput {
  const holder = child?.status as ConditionHolder | undefined;
  const found = getCondition(holder?.conditions, childType);
  const who = child ? `${child.kind} ${child.metadata.name ?? ""}` : "the child object";
  if (!child) return { type: parentType, status: "Unknown", reason: "NotFound", message: `${who} does not exist yet` };
  if (!found) return { type: parentType, status: "Unknown", reason: `${childType}NotReported`, message: `${who} has not reported ${childType} yet` };
  return {
    type: parentType,
    status: found.status,
    ...(found.reason !== undefined ? { reason: found.reason } : {}),
    message: found.message ? `${who}: ${found.message}` : `${who}: ${childType} is ${found.status}`,
  };
}

/**
 * Ready as a summary of other conditions: False if any is False, else Unknown if any is Unknown or
 * missing, else True. The reason is that of the first condition that is not True; the message lists
 * every condition that is not True, in the order given.
 */
export function summarize(conditions: readonly ConditionT[] | undefined, types: readonly string[], type = READY): ConditionInput {
  const notTrue: { type: string; status: ConditionStatus; reason: string; message?: string }[] = [];
  for (const wanted of types) {
    const found = getCondition(conditions, wanted);
    if (!found) notTrue.push({ type: wanted, status: "Unknown", reason: `${wanted}NotReported` });
    else if (found.status !== "True") notTrue.push({ type: wanted, status: found.status, reason: found.reason ?? wanted, message: found.message });
  }
  if (notTrue.length === 0) return { type, status: "True", reason: "AllTrue" };
  const worst = notTrue.find((c) => c.status === "False") ?? notTrue[0]!;
  const message = notTrue.map((c) => `${c.type} is ${c.status}${c.message ? `: ${c.message}` : ""}`).join("; ");
  return { type, status: worst.status, reason: worst.reason, message };
}
