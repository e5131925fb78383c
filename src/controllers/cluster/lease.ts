// A cluster that names a Lease (spec.leaseName) runs on the machines it reserves: it waits (condition
// LeaseReady, phase Pending) until the lease is Active, adopts it (an owner reference on the Lease, so they
// are deleted together), is refused before building when it needs more machines than the lease holds, and
// takes its machine types from it — a machineType field may name one of the lease's sizes. Machines launch
// into the lease's reservations (the machine controller finds them through the cluster).
import type { ClusterObject, ClusterSpec, LeaseObject } from "../../api/kinds.ts";
import { machineTypeOf } from "../../api/slipway/cluster.ts";
import { leaseKind } from "../../api/slipway/lease.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { clusterStatus, now, type ClusterScope } from "./scope.ts";

export const CONDITION_LEASE_READY = "LeaseReady";

/** The cluster's spec with every machineType that names a size of the lease replaced by the size's machine type. */
export function resolveLeaseSizes(spec: ClusterSpec, sizes: Record<string, string>): ClusterSpec {
  const resolve = (type: string | undefined) => (type === undefined ? undefined : (sizes[type] ?? type));
  return {
    ...spec,
    controlPlane: { ...spec.controlPlane, machineType: resolve(spec.controlPlane.machineType) },
    ...(spec.workers ? { workers: spec.workers.map((w) => ({ ...w, machineType: resolve(w.machineType) })) } : {}),
  };
}

/** What the cluster asks of the lease's connection beyond what it reserves, one line per machine type; empty when it fits. */
export function leaseShortfall(spec: ClusterSpec, lease: LeaseObject): string[] {
  const wanted = new Map<string, number>();
  const groups = [{ ...spec.controlPlane, replicas: spec.controlPlane.replicas ?? 1 }, ...(spec.workers ?? []).map((w) => ({ ...w, replicas: w.replicas ?? 1 }))];
  for (const g of groups) if (g.connection === lease.spec.connection) wanted.set(machineTypeOf(g), (wanted.get(machineTypeOf(g)) ?? 0) + g.replicas);
  const held = new Map<string, number>();
  for (const r of lease.status?.reservations ?? []) held.set(r.machineType, (held.get(r.machineType) ?? 0) + r.count);
  return [...wanted].filter(([type, count]) => count > (held.get(type) ?? 0)).map(([type, count]) => `${count} × ${type} wanted, the lease holds ${held.get(type) ?? 0}`);
}

function ownedBy(lease: LeaseObject, cluster: ClusterObject): boolean {
  return (lease.metadata.ownerReferences ?? []).some((r) => r.uid === cluster.metadata.uid);
}

/** Waits for the lease, adopts it, checks it holds enough and resolves size names to machine types. */
export const awaitLease: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  const leaseName = cluster.spec.leaseName;
  if (!leaseName) return;
  const st = clusterStatus(scope);
  const lease = scope.lease;
  const wait = (reason: string, message: string) => {
    setCondition(st, { type: CONDITION_LEASE_READY, status: "False", reason, message }, now(ctx));
    scope.pending = { reason, message };
    return { halt: true, requeueAfterMs: scope.timing.recheckMs, idle: true };
  };
  const fail = (reason: string, message: string) => {
    setCondition(st, { type: CONDITION_LEASE_READY, status: "False", reason, message }, now(ctx));
    scope.problem = { reason, message };
    return { halt: true };
  };
  if (!lease) return wait("LeaseNotFound", `lease ${leaseName} does not exist in namespace ${cluster.metadata.namespace}`);
  const phase = lease.status?.phase ?? "Pending";
  if (phase === "Failed") return fail("LeaseFailed", `lease ${leaseName} failed: ${lease.status?.reason ?? ""}: ${lease.status?.message ?? ""}`);
  if (phase === "Expired") return fail("LeaseExpired", `lease ${leaseName} ended at ${lease.status?.endTime ?? lease.spec.endTime}`);
  if (phase !== "Active") {
    const start = lease.status?.startTime ?? lease.spec.startTime;
    return wait("LeasePending", `waiting for lease ${leaseName} to be Active (it is ${phase}${start ? `; its reservations start at ${start}` : ""})`);
  }
  const resolved = resolveLeaseSizes(cluster.spec, lease.status?.sizes ?? {});
  const short = leaseShortfall(resolved, lease);
  if (short.length > 0) return fail("LeaseInsufficient", `lease ${leaseName} in connection ${lease.spec.connection} holds too little: ${short.join("; ")}`);
  if (!ownedBy(lease, cluster)) {
    const ownerReferences = [
      ...(lease.metadata.ownerReferences ?? []),
      { apiVersion: cluster.apiVersion, kind: cluster.kind, name: cluster.metadata.name!, uid: cluster.metadata.uid!, blockOwnerDeletion: true },
    ];
    await ctx.client.of(leaseKind).patch(lease.metadata.namespace, lease.metadata.name!, "merge", { metadata: { ownerReferences, resourceVersion: lease.metadata.resourceVersion } });
    await ctx.event(cluster, "Normal", "LeaseAdopted", `adopted lease ${leaseName}: it is deleted with the cluster`);
  }
  cluster.spec = resolved;
  setCondition(st, { type: CONDITION_LEASE_READY, status: "True", reason: "LeaseActive", message: `lease ${leaseName} is Active until ${lease.status?.endTime ?? lease.spec.endTime}` }, now(ctx));
};
