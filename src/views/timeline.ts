// The timeline view of a cluster: the steps of its journal on one time axis from the cluster's creation
// (what ran side by side, what is still running, what failed), and the critical path — the chain of
// steps that decided when the last one ended.
import type { ClusterObject, ClusterStep } from "../api/kinds.ts";

export interface TimelineStep {
  name: string;
  outcome: ClusterStep["outcome"];
  /** Milliseconds since the epoch. */
  start: number;
  /** When it ended; for a step still running, now. */
  end: number;
  /** False while it runs. */
  finished: boolean;
  message?: string;
  /** The object the step concerns. */
  target?: { kind: string; name: string };
  /** On the critical path. */
  critical: boolean;
}

export interface ClusterTimeline {
  cluster: string;
  phase: string;
  /** The axis's start: the cluster's creation (or its first step, if earlier). */
  origin: number;
  /** From the origin to the end of the step that ended last (now, while one runs). */
  spanMs: number;
  /** How the span reads: "to Ready" once Running, "so far" while a step runs, else "". */
  spanEnds: "to Ready" | "so far" | "";
  /** In the order they began. */
  steps: TimelineStep[];
  criticalPath: TimelineStep[];
  /** Time the critical path's steps took, together. */
  criticalMs: number;
  failed: TimelineStep[];
}

/** When a step ended: its finish time; for one still running, now. */
function endOf(step: ClusterStep, now: number): number {
  return step.finishedAt ? Date.parse(step.finishedAt) : now;
}

/**
 * Steps as drawn: a failed step that does not say when it ended is taken to end when the status last
 * changed (the failure was recorded then), so that its bar does not grow with the clock.
 */
function settledSteps(cluster: ClusterObject): ClusterStep[] {
  const st = cluster.status;
  const times = [
    ...(st?.steps ?? []).flatMap((s) => [s.startedAt, s.finishedAt]),
    ...(st?.conditions ?? []).map((c) => c.lastTransitionTime),
  ].flatMap((t) => (t === undefined || Number.isNaN(Date.parse(t)) ? [] : [Date.parse(t)]));
  const lastChange = Math.max(0, ...times);
  return (st?.steps ?? [])
    .map((s) => (s.outcome === "Failed" && !s.finishedAt ? { ...s, finishedAt: new Date(Math.max(lastChange, Date.parse(s.startedAt))).toISOString() } : s))
    .sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
}

/**
 * The chain of steps that decided when the last one ended: from the step that ended last, back through
 * the step that ended last before each one began (of several, the one that began last: the most direct
 * cause). Timestamps have whole seconds, so this is the likely chain rather than a proven one.
 */
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
    current = before.reduce((best, s) => {
      const [end, bestEnd] = [endOf(s, now), endOf(best, now)];
      return end > bestEnd || (end === bestEnd && start(s) >= start(best)) ? s : best;
    });
    chain.unshift(current);
  }
  return chain;
}

export function clusterTimeline(cluster: ClusterObject, now: number): ClusterTimeline {
  const journal = settledSteps(cluster);
  const onPath = new Set(criticalPath(journal, now));
  const steps: TimelineStep[] = journal.map((s) => ({
    name: s.name,
    outcome: s.outcome,
    start: Date.parse(s.startedAt),
    end: endOf(s, now),
    finished: s.finishedAt !== undefined,
    ...(s.message === undefined ? {} : { message: s.message }),
    ...(s.target === undefined ? {} : { target: s.target }),
    critical: onPath.has(s),
  }));
  const created = cluster.metadata.creationTimestamp ?? journal[0]?.startedAt;
  const origin = Math.min(created === undefined ? now : Date.parse(created), ...steps.map((s) => s.start));
  const finish = steps.length === 0 ? origin : Math.max(...steps.map((s) => s.end));
  const phase = cluster.status?.phase ?? "Pending";
  const critical = steps.filter((s) => s.critical);
  return {
    cluster: cluster.metadata.name ?? "",
    phase,
    origin,
    spanMs: Math.max(0, finish - origin),
    spanEnds: phase === "Running" ? "to Ready" : steps.some((s) => s.outcome === "Running") ? "so far" : "",
    steps,
    criticalPath: critical,
    criticalMs: critical.reduce((sum, s) => sum + s.end - s.start, 0),
    failed: steps.filter((s) => s.outcome === "Failed"),
  };
}
