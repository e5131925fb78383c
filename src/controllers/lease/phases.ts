// The lease controller's phases: reserve each size in the cloud (all or nothing), follow the reservations
// through their window (Pending → Active → Expired), warn ahead of the end, and when the lease ends let go
// of the clusters that adopted it and delete them. Deleting a lease cancels its reservations.
import type { ClusterObject, LeaseObject } from "../../api/kinds.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { TAG_LEASE, leaseKind, type LeaseReservation } from "../../api/slipway/lease.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { isProviderError, type ReservationInfo, type Reservations } from "../../providers/provider.ts";
import { getCondition, setCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Phase, PhaseResult } from "../../runtime/reconciler.ts";
import { idempotencyToken } from "../contract.ts";
import { ConnectionUnusableError } from "../providers.ts";
import type { LeaseScope } from "./scope.ts";

export const CONDITION_RESERVED = "Reserved";
export const CONDITION_ENDING_SOON = "EndingSoon";

function now(ctx: ReconcileContext): string {
  return nowTimestamp(new Date(ctx.clock.now()));
}

function status(lease: LeaseObject): NonNullable<LeaseObject["status"]> {
  lease.status ??= {};
  return lease.status;
}

function leaseTags(lease: LeaseObject): Record<string, string> {
  return { [TAG_LEASE]: `${lease.metadata.namespace}/${lease.metadata.name}`, [`${TAG_LEASE}-uid`]: lease.metadata.uid! };
}

/** The provider's reservations capability for the lease's connection; undefined (with the reason set) when unusable. */
async function reservationsOf(ctx: ReconcileContext, scope: LeaseScope): Promise<Reservations | undefined> {
  const lease = scope.object;
  if (!scope.connection) {
    setCondition(status(lease), { type: CONDITION_RESERVED, status: "False", reason: "ConnectionNotFound", message: `connection "${lease.spec.connection}" does not exist in namespace ${lease.metadata.namespace}` }, now(ctx));
    return undefined;
  }
  try {
    return await scope.deps.providers.capability(scope.connection, "reservations");
  } catch (error) {
    if (!(error instanceof ConnectionUnusableError)) throw error;
    scope.problem = { reason: error.reason, message: error.message };
    return undefined;
  }
}

/** The clusters that adopted the lease (owner references of kind Cluster). */
function adopters(lease: LeaseObject): { name: string; uid: string }[] {
  return (lease.metadata.ownerReferences ?? []).filter((r) => r.kind === clusterKind.kind).map((r) => ({ name: r.name, uid: r.uid }));
}

/** Makes a reservation per size, all or nothing: a refusal cancels those made and fails the lease. */
export const reserve: Phase<LeaseScope> = async (ctx, scope) => {
  const lease = scope.object;
  const st = status(lease);
  if (st.reservations && st.reservations.length === lease.spec.sizes.length) return;
  if (st.phase === "Failed") return { halt: true };
  st.phase = "Pending";
  const reservations = await reservationsOf(ctx, scope);
  if (!reservations) return { halt: true, requeueAfterMs: scope.timing.recheckMs };
  const catalogue = scope.connection && (await scope.deps.providers.open(scope.connection)).capabilities.catalogue;
  const zone = lease.spec.zone ?? (catalogue ? (await catalogue.zones())[0] : undefined);
  if (!zone) {
    scope.problem = { reason: "ZoneUnknown", message: `connection "${lease.spec.connection}" names no zone to reserve in: set spec.zone` };
    return { halt: true };
  }
  const startTime = lease.spec.startTime ?? lease.metadata.creationTimestamp!;
  const made: LeaseReservation[] = [];
  for (const size of lease.spec.sizes) {
    try {
      const reservation = await reservations.create(
        { zone, machineType: size.machineType, count: size.count, startTime, endTime: lease.spec.endTime },
        { token: idempotencyToken(lease.metadata.uid!, `reservation/${size.name}`), tags: { ...leaseTags(lease), "slipway.dev/size": size.name } },
      );
      made.push({ size: size.name, machineType: reservation.machineType, count: reservation.count, zone: reservation.zone, reservationId: reservation.id });
      st.startTime = reservation.startTime;
      st.endTime = reservation.endTime;
    } catch (error) {
      // Transient failures are retried (the tokens return what was made); a refusal is final for this spec.
      if (!isProviderError(error) || !["capacity", "invalid", "quota", "permission"].includes(error.kind)) throw error;
      for (const r of made) await reservations.delete(r.reservationId);
      scope.problem = { reason: error.code ?? "ReservationRefused", message: `size ${size.name}: ${error.message}` };
      return { halt: true };
    }
  }
  st.reservations = made;
  st.sizes = Object.fromEntries(made.map((r) => [r.size, r.machineType]));
  setCondition(st, { type: CONDITION_RESERVED, status: "True", reason: "Reserved", message: made.map((r) => `${r.size}: ${r.count} × ${r.machineType} in ${r.zone} (${r.reservationId})`).join("; ") }, now(ctx));
  await ctx.event(lease, "Normal", "Reserved", `reserved ${made.map((r) => `${r.count} × ${r.machineType}`).join(", ")} in ${zone} from ${st.startTime} to ${st.endTime}`);
};

/** The lease's phase from its reservations: Active when all are, Expired when all ended, else Pending. */
function phaseOf(found: (ReservationInfo | undefined)[], endMs: number, nowMs: number): "Pending" | "Active" | "Expired" {
  if (found.every((r) => r === undefined || r.phase === "ended") && (nowMs >= endMs || found.some((r) => r?.phase === "ended"))) return "Expired";
  if (found.every((r) => r?.phase === "active")) return "Active";
  return "Pending";
}

/** Follows the reservations: Pending until they start, Active until they end, then Expired. */
export const follow: Phase<LeaseScope> = async (ctx, scope) => {
  const lease = scope.object;
  const st = status(lease);
  if (st.phase === "Expired") return;
  const reservations = await reservationsOf(ctx, scope);
  if (!reservations) return { halt: true, requeueAfterMs: scope.timing.recheckMs };
  const held = st.reservations ?? [];
  const found = await Promise.all(held.map((r) => reservations.get(r.reservationId)));
  const nowMs = ctx.clock.now();
  const endMs = Date.parse(st.endTime ?? lease.spec.endTime);
  held.forEach((r, i) => {
    const info = found[i];
    if (info) r.inUse = info.inUse;
  });
  const phase = phaseOf(found, endMs, nowMs);
  st.phase = phase;
  if (phase === "Expired") {
    st.reason = found.some((r) => r?.cloudState === "cancelled") ? "ReservationCancelled" : "LeaseEnded";
    st.message = `the reservations ended at ${st.endTime ?? lease.spec.endTime}`;
    return;
  }
  const startMs = Date.parse(st.startTime ?? lease.spec.startTime ?? lease.metadata.creationTimestamp!);
  const untilStart = startMs - nowMs;
  const untilWarning = endMs - scope.timing.endingSoonMs - nowMs;
  const untilEnd = endMs - nowMs;
  const next = [untilStart, untilWarning, untilEnd, scope.timing.recheckMs].filter((ms) => ms > 0);
  return { requeueAfterMs: Math.max(50, Math.min(...next) + 50) };
};

/** A Warning Event on the lease and on the clusters using it, once, when the end is near. */
export const warnEndingSoon: Phase<LeaseScope> = async (ctx, scope) => {
  const lease = scope.object;
  const st = status(lease);
  if (st.phase !== "Active") return;
  const endMs = Date.parse(st.endTime ?? lease.spec.endTime);
  const left = endMs - ctx.clock.now();
  if (left > scope.timing.endingSoonMs || getCondition(st.conditions, CONDITION_ENDING_SOON)?.status === "True") return;
  const message = `lease ${lease.metadata.name} ends at ${st.endTime ?? lease.spec.endTime} (in ${Math.max(0, Math.round(left / 1000))} s): the machines reserved are then terminated and clusters using it deleted`;
  setCondition(st, { type: CONDITION_ENDING_SOON, status: "True", reason: "LeaseEndingSoon", message }, now(ctx));
  await ctx.event(lease, "Warning", "LeaseEndingSoon", message);
  for (const cluster of adopters(lease)) {
    const ref = { apiVersion: clusterKind.group + "/" + clusterKind.version, kind: clusterKind.kind, metadata: { name: cluster.name, namespace: lease.metadata.namespace, uid: cluster.uid } } as ClusterObject;
    await ctx.event(ref, "Warning", "LeaseEndingSoon", message);
  }
};

/**
 * Once the lease has expired, it lets go of the clusters that adopted it (so the Expired lease stays as a
 * record rather than being collected with them) and deletes them: their machines are gone with the
 * reservations, and the cluster's own deletion removes every other cloud resource it made.
 */
export const releaseAndDeleteClusters: Phase<LeaseScope> = async (ctx, scope) => {
  const lease = scope.object;
  if (lease.status?.phase !== "Expired") return;
  const clusters = adopters(lease);
  if (clusters.length === 0) return;
  for (const cluster of clusters) {
    const live = await ctx.client.of(clusterKind).tryGet(lease.metadata.namespace, cluster.name);
    if (live?.metadata.uid === cluster.uid && !live.metadata.deletionTimestamp) {
      await ctx.client.of(clusterKind).delete(lease.metadata.namespace, cluster.name);
      await ctx.event(lease, "Normal", "DeletingCluster", `lease ended: deleting cluster ${cluster.name}`);
    }
  }
  const kept = (lease.metadata.ownerReferences ?? []).filter((r) => r.kind !== clusterKind.kind);
  const patched = await ctx.client.of(leaseKind).patch(lease.metadata.namespace, lease.metadata.name!, "merge", { metadata: { ownerReferences: kept, resourceVersion: lease.metadata.resourceVersion } });
  scope.object = { ...patched, status: lease.status };
};

/** Deleting a lease cancels its reservations (tolerant of ones already ended or gone). */
export const cancelReservations: Phase<LeaseScope> = async (ctx, scope): Promise<PhaseResult | void> => {
  const lease = scope.object;
  const held = lease.status?.reservations ?? [];
  if (held.length === 0) return;
  if (!scope.connection) {
    ctx.log.warn({ step: "cancelReservations", connection: lease.spec.connection }, "connection gone: the lease's reservations end at their end time");
    return;
  }
  const reservations = await reservationsOf(ctx, scope);
  if (!reservations) return;
  for (const r of held) await reservations.delete(r.reservationId);
  await ctx.event(lease, "Normal", "ReservationsCancelled", `cancelled ${held.map((r) => r.reservationId).join(", ")}`);
};

export const leasePhases: readonly Phase<LeaseScope>[] = [reserve, follow, warnEndingSoon, releaseAndDeleteClusters];
export const leaseDeletePhases: readonly Phase<LeaseScope>[] = [cancelReservations];
