// The Infrastructure's status: one condition per resource (whose lastTransitionTime to True says when the
// resource became ready — the cluster's step journal is drawn from them), per-step deadlines measured
// from when a step started, and the phase, reason and message summed up from the conditions.
import type { InfrastructureObject, InfrastructureStatus } from "../../api/kinds.ts";
import type { ConditionT } from "../../api/meta.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { getCondition, READY, setCondition, summarize } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { EventType } from "../../runtime/events.ts";
import type { Scope } from "../../runtime/reconciler.ts";
import type { InfrastructureResourceKind } from "../../providers/provider.ts";
import { RESOURCE_NAMES } from "./resources.ts";
import { InternalReconcileError } from "../../runtime/failures.ts";

export const CATALOG_RESOLVED = "CatalogResolved";
export const NETWORK_READY = "NetworkReady";
export const SUBNET_READY = "SubnetReady";
export const SECURITY_GROUP_READY = "SecurityGroupReady";
export const KEY_PAIR_READY = "KeyPairReady";
export const LOAD_BALANCER_READY = "LoadBalancerReady";

export const REASON_VALIDATION_FAILED = "ValidationFailed";
export const REASON_DEADLINE_EXCEEDED = "DeadlineExceeded";
export const REASON_DELETE_FAILED = "DeleteFailed";

/** The condition and the failure reason of each resource. */
export const RESOURCE_CONDITIONS: Record<InfrastructureResourceKind, { condition: string; failed: string }> = {
  network: { condition: NETWORK_READY, failed: "CreateNetworkFailed" },
  subnet: { condition: SUBNET_READY, failed: "CreateSubnetFailed" },
  securityGroup: { condition: SECURITY_GROUP_READY, failed: "CreateSecurityGroupFailed" },
  keyPair: { condition: KEY_PAIR_READY, failed: "CreateKeyPairFailed" },
  loadBalancer: { condition: LOAD_BALANCER_READY, failed: "CreateLoadBalancerFailed" },
};

export type Status = InfrastructureStatus;

export function nowOf(ctx: Pick<ReconcileContext, "clock">): string {
  return nowTimestamp(new Date(ctx.clock.now()));
}

export function statusOf(infra: InfrastructureObject): Status {
  return (infra.status ??= {});
}

/** The resources this infrastructure has: the load balancer only in the control plane's connection. */
export function resourcesOf(infra: InfrastructureObject): InfrastructureResourceKind[] {
  const kinds: InfrastructureResourceKind[] = ["network", "subnet", "securityGroup", "keyPair"];
  if (infra.spec.controlPlane) kinds.push("loadBalancer");
  return kinds;
}

/** The conditions Ready sums up, in the order things are made. */
export function readinessConditions(infra: InfrastructureObject): string[] {
  return [CATALOG_RESOLVED, ...resourcesOf(infra).map((k) => RESOURCE_CONDITIONS[k].condition)];
}

/**
 * Whether machines may be made in this infrastructure: it is Ready, or everything but the load balancer
 * is, and the load balancer exists (its address is known) and has not failed. Machines boot while it is
 * provisioned; `kubeadm init` itself waits for it to route (the emulated one checks that, as kubeadm's
 * admin client does).
 */
export function readyForMachines(infra: InfrastructureObject | undefined): boolean {
  const status = infra?.status;
  if (!infra || !status || infra.metadata.deletionTimestamp) return false;
  if (status.ready) return true;
  if (!status.loadBalancer || getCondition(status.conditions, LOAD_BALANCER_READY)?.status === "False") return false;
  return readinessConditions(infra).every((t) => t === LOAD_BALANCER_READY || getCondition(status.conditions, t)?.status === "True");
}

/** True once any step that may make a cloud resource has been recorded (see phases.ts, resolveCatalog). */
export function mayHaveCloudResources(status: Status | undefined): boolean {
  if (!status) return false;
  if (status.networkId || status.subnetId || status.securityGroupId || status.keyPairId || status.loadBalancer) return true;
  return Object.values(RESOURCE_CONDITIONS).some(({ condition }) => getCondition(status.conditions, condition) !== undefined);
}

export type StepVerdict = { state: "waiting" } | { state: "expired" };

/**
 * Records that a resource is on its way (condition Unknown). A step's clock starts when its condition
 * turns Unknown; past `deadlineMs` the condition turns False with DeadlineExceeded, and stays so — while
 * the step is still retried — until the resource is ready or another failure replaces it.
 */
export function stepInProgress(status: Status, kind: InfrastructureResourceKind, reason: string, message: string, now: string, deadlineMs: number): StepVerdict {
  const { condition } = RESOURCE_CONDITIONS[kind];
  const current = getCondition(status.conditions, condition);
  if (current?.status === "False" && current.reason === REASON_DEADLINE_EXCEEDED) return { state: "expired" };
  const stored = setCondition(status, { type: condition, status: "Unknown", reason, message }, now);
  const started = Date.parse(stored.lastTransitionTime ?? now);
  const elapsed = Date.parse(now) - started;
  if (elapsed <= deadlineMs) return { state: "waiting" };
  const noun = RESOURCE_NAMES[kind].noun;
  setCondition(
    status,
    {
      type: condition,
      status: "False",
      reason: REASON_DEADLINE_EXCEEDED,
      message: `the ${noun} was not ready within ${Math.round(deadlineMs / 1000)} s: ${message}`,
    },
    now,
  );
  return { state: "expired" };
}

export function stepReady(status: Status, kind: InfrastructureResourceKind, message: string, now: string): void {
  setCondition(status, { type: RESOURCE_CONDITIONS[kind].condition, status: "True", reason: "Ready", message }, now);
}

export function stepFailed(status: Status, kind: InfrastructureResourceKind, message: string, now: string): void {
  const { condition, failed } = RESOURCE_CONDITIONS[kind];
  setCondition(status, { type: condition, status: "False", reason: failed, message }, now);
}

/** Phase, ready, reason, message and the Ready condition, from the other conditions. */
export function summarizeInfrastructure(ctx: ReconcileContext, scope: Scope<InfrastructureObject>, error: unknown): void {
  const infra = scope.object;
  const status = statusOf(infra);
  const now = nowOf(ctx);
  status.ready = false;
  if (infra.metadata.deletionTimestamp) {
    status.phase = "Deleting";
    setCondition(status, { type: READY, status: "False", reason: "Deleting", message: status.message ?? "deleting the cloud resources" }, now);
    return;
  }
  const types = readinessConditions(infra);
  const ready = summarize(status.conditions, types);
  setCondition(status, ready, now);
  if (error instanceof InternalReconcileError) {
    status.phase = "Failed";
    status.reason = error.reason;
    status.message = error.message;
    return;
  }
  const failing = types.map((t) => getCondition(status.conditions, t)).find((c): c is ConditionT => c?.status === "False");
  if (ready.status === "True") {
    status.phase = "Ready";
    status.ready = true;
    delete status.reason;
    delete status.message;
  } else if (failing) {
    status.phase = "Failed";
    status.reason = failing.reason ?? "Failed";
    status.message = failing.message ?? `${failing.type} is False`;
  } else {
    const started = types.some((t) => getCondition(status.conditions, t) !== undefined);
    status.phase = started ? "Provisioning" : "Pending";
    delete status.reason;
    const retrying = error instanceof Error ? ` (retrying after: ${error.message})` : "";
    status.message = `${ready.message ?? "provisioning"}${retrying}`;
  }
}

export interface InfrastructureEvent {
  type: EventType;
  reason: string;
  message: string;
}

function conditionChanged(before: ConditionT | undefined, after: ConditionT): boolean {
  return !before || before.status !== after.status || before.reason !== after.reason;
}

/**
 * The same event said several times in one reconcile (e.g. "creating the subnet", once per zone) is
 * recorded once, with how many times: one Event instead of a new one and a rising count.
 */
export function collapseRepeats(events: readonly InfrastructureEvent[]): InfrastructureEvent[] {
  const counted = new Map<string, { event: InfrastructureEvent; times: number }>();
  for (const event of events) {
    const key = [event.type, event.reason, event.message].join("\u0000");
    const seen = counted.get(key);
    if (seen) seen.times++;
    else counted.set(key, { event, times: 1 });
  }
  return [...counted.values()].map(({ event, times }) => (times === 1 ? event : { ...event, message: `${event.message} (×${times})` }));
}

/** Events for what changed between two statuses: resources that became ready or failed, the phase. */
export function statusEvents(previous: Status | undefined, written: Status | undefined): InfrastructureEvent[] {
  const events: InfrastructureEvent[] = [];
  const catalog = getCondition(written?.conditions, CATALOG_RESOLVED);
  if (catalog && conditionChanged(getCondition(previous?.conditions, CATALOG_RESOLVED), catalog)) {
    if (catalog.status === "True") events.push({ type: "Normal", reason: "CatalogResolved", message: catalog.message ?? "catalogue resolved" });
    if (catalog.status === "False") events.push({ type: "Warning", reason: catalog.reason ?? REASON_VALIDATION_FAILED, message: catalog.message ?? "" });
  }
  for (const [kind, { condition }] of Object.entries(RESOURCE_CONDITIONS) as [InfrastructureResourceKind, { condition: string }][]) {
    const after = getCondition(written?.conditions, condition);
    if (!after || !conditionChanged(getCondition(previous?.conditions, condition), after)) continue;
    if (after.status === "True") events.push({ type: "Normal", reason: `${RESOURCE_NAMES[kind].title}Ready`, message: after.message ?? "" });
    if (after.status === "False" && after.reason !== "Deleted") events.push({ type: "Warning", reason: after.reason ?? "Failed", message: after.message ?? "" });
  }
  if (written?.phase === "Ready" && previous?.phase !== "Ready") {
    events.push({ type: "Normal", reason: "InfrastructureReady", message: "every cloud resource exists and is ready" });
  }
  return events;
}
