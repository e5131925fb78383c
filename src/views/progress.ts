// Progress of a cluster being made or deleted, as a wait shows it: one moment of a cluster (phase,
// reason, steps, machines counted by how far they got), what changed between two moments, and when the
// wait is over (Ready, Failed, gone). A terminal prints the changes as lines; a console can show them as
// a feed — the same changes either way.
import type { ClusterObject, ClusterStep, MachineObject } from "../api/kinds.ts";
import { countMachines, failsUntilChanged, isClusterFailed, isClusterReady, type MachineCounts } from "./readiness.ts";

/** What is known of one cluster at one moment. */
export interface ClusterProgress {
  /** `cluster/NAME`, as the changes are told about. */
  label: string;
  /** "Pending" until a controller sets one. */
  phase: string;
  reason?: string;
  message?: string;
  deleting: boolean;
  steps: ClusterStep[];
  machines: MachineCounts;
}

export type ProgressOutcome =
  | { result: "ready" }
  | { result: "failed"; reason: string; message: string }
  | { result: "deleted" }
  /** Out of time; `failure` when the cluster was Failed then (for a reason the retries might have cleared). */
  | { result: "timeout"; phase: string; failure?: { reason: string; message: string } };

/**
 * One change between two moments. `lasting` changes are news to keep (a step done, a new phase);
 * the others describe the moment (a step started, machine counts) and are replaced by the next one.
 */
export type ProgressChange = { lasting: boolean } & (
  | { kind: "phase"; phase: string; message?: string }
  | { kind: "reason"; reason: string; message?: string }
  | { kind: "stepsDone"; count: number }
  | { kind: "step"; step: ClusterStep; durationMs?: number }
  | { kind: "machines"; machines: MachineCounts; deleting: boolean }
);

export function clusterProgress(cluster: ClusterObject, machines: readonly MachineObject[]): ClusterProgress {
  const st = cluster.status;
  return {
    label: `cluster/${cluster.metadata.name}`,
    phase: st?.phase ?? "Pending",
    ...(st?.reason ? { reason: st.reason } : {}),
    ...(st?.message ? { message: st.message } : {}),
    deleting: cluster.metadata.deletionTimestamp !== undefined,
    steps: st?.steps ?? [],
    machines: countMachines(cluster, machines),
  };
}

/**
 * How a wait for the cluster ends now, if it does: Ready when waiting for it — or Failed, when the
 * failure is one only a change clears (a failure the controllers retry may still clear: the wait goes
 * on, up to its time limit); gone when deleting.
 */
export function clusterOutcome(cluster: ClusterObject | undefined, goal: "ready" | "deleted"): ProgressOutcome | undefined {
  if (!cluster) return goal === "deleted" ? { result: "deleted" } : { result: "failed", reason: "Deleted", message: "the cluster was deleted while it was being made" };
  if (goal !== "ready") return undefined;
  if (isClusterReady(cluster)) return { result: "ready" };
  if (isClusterFailed(cluster) && failsUntilChanged(cluster.status?.reason)) return { result: "failed", reason: cluster.status?.reason ?? "Failed", message: cluster.status?.message ?? "" };
  return undefined;
}

/** How long a step took, or has taken so far while it runs. */
export function stepDurationMs(step: ClusterStep, now: number): number {
  const end = step.finishedAt ? Date.parse(step.finishedAt) : now;
  return end - Date.parse(step.startedAt);
}

function sameMachines(a: ClusterProgress, b: ClusterProgress): boolean {
  if (a.deleting !== b.deleting) return false;
  // While deleting, only how many are left is told.
  if (b.deleting) return a.machines.created === b.machines.created;
  const [x, y] = [a.machines, b.machines];
  return x.desired === y.desired && x.created === y.created && x.booted === y.booted && x.joined === y.joined && x.ready === y.ready;
}

/**
 * What changed between two moments of a cluster. The first moment reports where the cluster stands:
 * steps still running or failed, and how many are done, rather than its whole history.
 */
export function progressChanges(before: ClusterProgress | undefined, after: ClusterProgress, now: number): ProgressChange[] {
  const changes: ProgressChange[] = [];
  if (before?.phase !== after.phase) {
    changes.push({ kind: "phase", phase: after.phase, ...(after.message && !after.reason ? { message: after.message } : {}), lasting: true });
  }
  // A failure that ends the wait is told by its outcome; one the controllers retry, as it happens.
  const told = after.phase === "Failed" && failsUntilChanged(after.reason);
  if (after.reason && !told && (before?.reason !== after.reason || before.message !== after.message)) {
    changes.push({ kind: "reason", reason: after.reason, ...(after.message ? { message: after.message } : {}), lasting: true });
  }
  if (!before) {
    const done = after.steps.filter((s) => s.outcome === "Succeeded").length;
    if (done > 0) changes.push({ kind: "stepsDone", count: done, lasting: true });
  }
  const previous = new Map((before?.steps ?? []).map((s) => [s.name, s]));
  for (const step of after.steps) {
    const was = previous.get(step.name);
    if (was?.outcome === step.outcome || (!before && step.outcome === "Succeeded")) continue;
    // A failed step may not say when it ended.
    const timed = step.outcome === "Succeeded" || (step.outcome === "Failed" && step.finishedAt !== undefined);
    changes.push({ kind: "step", step, ...(timed ? { durationMs: stepDurationMs(step, now) } : {}), lasting: step.outcome !== "Running" });
  }
  if (!before || !sameMachines(before, after)) {
    if (after.machines.desired > 0 || after.machines.created > 0) changes.push({ kind: "machines", machines: after.machines, deleting: after.deleting, lasting: false });
  }
  return changes;
}

/**
 * The moments of the clusters being followed, and what each new one changed. While a cluster is
 * deleted, the steps of its making (which its journal may show running again as machines go) are left
 * out: only new steps are news.
 */
export class ProgressTracker {
  private readonly last = new Map<string, ClusterProgress>();
  /** Per cluster, the steps seen before its deletion began. */
  private readonly madeSteps = new Map<string, Set<string>>();

  /** Records the moment and answers what changed since the cluster's last one. */
  track(progress: ClusterProgress, now: number): ProgressChange[] {
    const first = !this.last.has(progress.label);
    let made = this.madeSteps.get(progress.label);
    if (!made) this.madeSteps.set(progress.label, (made = new Set()));
    if (!progress.deleting || first) for (const step of progress.steps) made.add(step.name);
    const visible = progress.deleting ? { ...progress, steps: progress.steps.filter((s) => !made.has(s.name)) } : progress;
    const changes = progressChanges(this.last.get(progress.label), visible, now);
    this.last.set(progress.label, visible);
    return changes;
  }

  /** The latest moment of each cluster, as tracked. */
  moments(): IterableIterator<[string, ClusterProgress]> {
    return this.last.entries();
  }
}
