// The view models the console draws: a cluster's objects as a tree with readiness, and its steps with
// the critical path. A stand-in with the CLI's rules, kept to what the pages need, until the UI-neutral
// views (describe tree, timeline, readiness) are shared from src/views; then this file goes.
import type { ClusterObject, ClusterStep, InfrastructureObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import type { ConditionT } from "../../api/meta.ts";
import type { MachineCounts } from "../../cli/clusters.ts";
import { LABEL_POOL } from "./api/paths.ts";

export interface ClusterFamily {
  cluster: ClusterObject;
  infrastructures: InfrastructureObject[];
  pools: MachinePoolObject[];
  machines: MachineObject[];
}

export type { TreeNode } from "../../cli/describe.ts";
import type { TreeNode } from "../../cli/describe.ts";

export function condition(conditions: ConditionT[] | undefined, type: string): ConditionT | undefined {
  return conditions?.find((c) => c.type === type);
}

function readyNode(label: string, conditions: ConditionT[] | undefined, fallback: { reason?: string; message?: string; since?: string; ready?: boolean }, children: TreeNode[] = []): TreeNode {
  const ready = condition(conditions, "Ready");
  return {
    label,
    ready: ready?.status ?? (fallback.ready === undefined ? "" : String(fallback.ready === true ? "True" : "False")),
    reason: fallback.reason ?? ready?.reason ?? "",
    since: ready?.lastTransitionTime ?? fallback.since,
    message: fallback.message ?? ready?.message ?? "",
    children,
  };
}

function machineNode(m: MachineObject): TreeNode {
  const st = m.status;
  const ready = condition(st?.conditions, "Ready");
  return {
    label: `Machine/${m.metadata.name}`,
    ready: st?.nodeReady ? "True" : "False",
    reason: st?.failureReason ?? (m.metadata.deletionTimestamp ? "Deleting" : undefined) ?? ready?.reason ?? st?.phase ?? "Pending",
    since: ready?.lastTransitionTime ?? m.metadata.creationTimestamp,
    message: st?.failureMessage ?? ready?.message ?? (st?.nodeName ? `node ${st.nodeName}` : ""),
    children: [],
  };
}

function inPool(m: MachineObject, pool: MachinePoolObject): boolean {
  const owner = m.metadata.ownerReferences?.find((r) => r.controller);
  const declared = pool.metadata.labels?.[LABEL_POOL];
  return (owner?.kind === "MachinePool" && owner.name === pool.metadata.name) || m.spec.pool === pool.metadata.name || (declared !== undefined && m.metadata.labels?.[LABEL_POOL] === declared);
}

export function clusterTree({ cluster, infrastructures, pools, machines }: ClusterFamily): TreeNode {
  const st = cluster.status;
  const group = (label: string, type: string, children: TreeNode[]): TreeNode => {
    const c = condition(st?.conditions, type);
    return { label, ready: c?.status ?? "", reason: c?.reason ?? "", since: c?.lastTransitionTime, message: c?.message ?? "", children };
  };
  const workers = machines.filter((m) => m.spec.role !== "control-plane");
  const poolNodes = pools.map((p) => {
    const mine = workers.filter((m) => inPool(m, p));
    const desired = p.spec.replicas ?? 1;
    const readyCount = p.status?.readyReplicas ?? mine.filter((m) => m.status?.nodeReady).length;
    const failed = p.status?.phase === "Failed" ? (p.status.reason ?? "Failed") : p.metadata.deletionTimestamp ? "Deleting" : undefined;
    return readyNode(
      `MachinePool/${p.metadata.name}`,
      p.status?.conditions,
      { ready: readyCount >= desired, reason: failed ?? p.status?.phase, message: p.status?.message ?? `${readyCount}/${desired} machines ready`, since: p.metadata.creationTimestamp },
      mine.map(machineNode),
    );
  });
  const infraNodes = infrastructures.map((i) =>
    readyNode(`Infrastructure/${i.metadata.name}`, i.status?.conditions, {
      ...(i.status?.ready === undefined ? {} : { ready: i.status.ready }),
      reason: i.status?.phase === "Failed" ? (i.status.reason ?? "Failed") : i.metadata.deletionTimestamp ? "Deleting" : i.status?.phase,
      ...(i.status?.message ? { message: i.status.message } : {}),
      since: i.metadata.creationTimestamp,
    }),
  );
  const children = [...infraNodes, group("ControlPlane", "ControlPlaneReady", machines.filter((m) => m.spec.role === "control-plane").map(machineNode))];
  if ((cluster.spec.workers ?? []).length > 0 || pools.length > 0) children.push(group("Workers", "WorkersReady", poolNodes));
  return readyNode(`Cluster/${cluster.metadata.name}`, st?.conditions, { reason: st?.reason ?? (cluster.metadata.deletionTimestamp ? "Deleting" : undefined), ...(st?.message ? { message: st.message } : {}), since: cluster.metadata.creationTimestamp }, children);
}

function endOf(step: ClusterStep, now: number): number {
  return step.finishedAt ? Date.parse(step.finishedAt) : now;
}

/** Steps by start; a failed step that does not say when it ended ends at the last change. */
export function settledSteps(cluster: ClusterObject): ClusterStep[] {
  const st = cluster.status;
  const times = [...(st?.steps ?? []).flatMap((s) => [s.startedAt, s.finishedAt]), ...(st?.conditions ?? []).map((c) => c.lastTransitionTime)]
    .map((t) => (t ? Date.parse(t) : NaN))
    .filter((t) => !Number.isNaN(t));
  const last = Math.max(0, ...times);
  return (st?.steps ?? [])
    .map((s) => (s.outcome === "Failed" && !s.finishedAt ? { ...s, finishedAt: new Date(Math.max(last, Date.parse(s.startedAt))).toISOString() } : s))
    .sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
}

/** The chain of steps that decided when the last one ended (see `slipway timeline`). */
export function criticalPath(steps: readonly ClusterStep[], now: number): ClusterStep[] {
  if (steps.length === 0) return [];
  const start = (s: ClusterStep) => Date.parse(s.startedAt);
  const ends = steps.map((s) => endOf(s, now));
  let current = steps[ends.lastIndexOf(Math.max(...ends))]!;
  const chain = [current];
  for (;;) {
    const begun = start(current);
    const before = steps.filter((s) => start(s) < begun && endOf(s, now) <= begun);
    if (before.length === 0) break;
    current = before.reduce((best, s) => (endOf(s, now) > endOf(best, now) || (endOf(s, now) === endOf(best, now) && start(s) >= start(best)) ? s : best));
    chain.unshift(current);
  }
  return chain;
}

export { endOf as stepEnd };

/** Machines counted by how far they got, as `slipway apply --wait` reports them. */
export function countMachines(cluster: ClusterObject, machines: readonly MachineObject[]): MachineCounts {
  const desired =
    (cluster.status?.controlPlane?.desired ?? cluster.spec.controlPlane.replicas ?? 1) +
    (cluster.status?.workers?.desired ?? (cluster.spec.workers ?? []).reduce((sum, pool) => sum + (pool.replicas ?? 1), 0));
  return {
    desired,
    created: machines.length,
    booted: machines.filter((m) => m.status?.instanceId !== undefined && (m.status.phase === "Provisioned" || m.status.phase === "Running")).length,
    joined: machines.filter((m) => m.status?.bootstrapped === true).length,
    ready: machines.filter((m) => m.status?.nodeReady === true).length,
  };
}
