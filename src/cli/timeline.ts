// `slipway timeline CLUSTER`: each step of the cluster's journal drawn as a bar on one time axis from the
// cluster's creation, so that what ran side by side and what waited on what (the critical path) shows.
import type { Command } from "commander";
import type { ClusterObject, ClusterStep } from "../api/kinds.ts";
import { getCluster } from "./clusters.ts";
import { withSession } from "./connect.ts";
import { fitWidth, formatDuration } from "./output.ts";

const EIGHTHS = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
const MAX_LABEL = 32;
const MIN_BAR = 10;

export function registerTimelineCommand(program: Command): void {
  program
    .command("timeline")
    .description("draw the steps of a cluster's making on a time axis, with its critical path")
    .argument("<cluster>", "name of the cluster")
    .action(async (name: string, _flags: unknown, command: Command) => {
      await withSession(command, async (session) => {
        const cluster = await getCluster(session, name);
        const width = (session.out.isTTY && session.out.columns) || 80;
        session.out.write(renderTimeline(cluster, { width, now: Date.now() }));
      });
    });
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

/** A bar from `start` to `end` (in cells, fractions allowed) in a field `width` cells wide. */
export function bar(start: number, end: number, width: number, fill: string): string {
  // Blocks fill cells from the left, so a bar begins on a whole cell and ends on an eighth of one.
  const first = Math.min(Math.round(start), width - 1);
  const cells = end - first;
  let drawn: string;
  if (end - start <= 1 / 8 || cells <= 1 / 8) drawn = "▏";
  else if (fill !== "█") drawn = fill.repeat(Math.max(1, Math.round(cells)));
  else {
    const whole = Math.floor(cells);
    const eighths = Math.round((cells - whole) * 8);
    drawn = "█".repeat(whole) + (eighths === 8 ? "█" : (EIGHTHS[eighths] ?? ""));
  }
  return [...(" ".repeat(first) + drawn)].slice(0, width).join("").padEnd(width);
}

/** `prefix` and the parts joined by `separator`, wrapped before `width` (a wrapped line starts with the separator). */
function wrap(prefix: string, parts: string[], separator: string, width: number): string[] {
  const lines: string[] = [];
  let line = prefix;
  parts.forEach((part, i) => {
    const piece = i === 0 ? part : `${separator}${part}`;
    if (i > 0 && line.length + piece.length > width) {
      lines.push(line.trimEnd());
      line = `  ${separator.trim()} ${part}`;
    } else line += piece;
  });
  lines.push(line);
  return lines;
}

export function renderTimeline(cluster: ClusterObject, options: { width: number; now: number }): string {
  const { now } = options;
  const steps = settledSteps(cluster);
  const name = cluster.metadata.name;
  const phase = cluster.status?.phase ?? "Pending";
  if (steps.length === 0) return `cluster/${name}  ${phase}\nno steps recorded yet (is the cluster controller running?)\n`;
  const origin = Math.min(Date.parse(cluster.metadata.creationTimestamp ?? steps[0]!.startedAt), ...steps.map((s) => Date.parse(s.startedAt)));
  const finish = Math.max(...steps.map((s) => endOf(s, now)));
  const span = Math.max(0, finish - origin);
  // The axis spans at least a second, so that a cluster made in an instant still has a readable scale.
  const total = Math.max(span, 1000);
  const at = (time: number) => formatDuration(time - origin);

  const labelWidth = Math.min(MAX_LABEL, Math.max(...steps.map((s) => s.name.length)));
  const suffixes = steps.map((s) => `  ${at(Date.parse(s.startedAt))} → ${s.finishedAt ? at(endOf(s, now)) : "…"}${s.outcome === "Failed" ? " ✗" : ""}`);
  const suffixWidth = Math.max(...suffixes.map((s) => s.length));
  const barWidth = Math.max(MIN_BAR, options.width - (labelWidth + 1) - 2 - suffixWidth);
  const cell = (time: number) => ((time - origin) / total) * barWidth;

  const running = steps.some((s) => s.outcome === "Running");
  const ended = cluster.status?.phase === "Running" ? "to Ready" : running ? "so far" : "";
  const lines = [`cluster/${name}  ${phase}  ${formatDuration(span)} from creation${ended ? ` ${ended}` : ""}`, ""];
  const axisEnd = formatDuration(total);
  const middle = formatDuration(total / 2);
  const axis = `0s${" ".repeat(Math.max(1, Math.floor(barWidth / 2) - 2 - Math.floor(middle.length / 2)))}${middle}`;
  lines.push(`${" ".repeat(labelWidth + 2)}${axis}${" ".repeat(Math.max(1, barWidth - axis.length - axisEnd.length))}${axisEnd}`);
  steps.forEach((step, i) => {
    const fill = step.outcome === "Running" ? "░" : "█";
    const drawn = bar(cell(Date.parse(step.startedAt)), cell(endOf(step, now)), barWidth, fill);
    lines.push(`${fitWidth(step.name, labelWidth).padEnd(labelWidth + 1)}|${drawn}|${suffixes[i]}`);
  });
  const path = criticalPath(steps, now);
  const busy = path.reduce((sum, s) => sum + endOf(s, now) - Date.parse(s.startedAt), 0);
  lines.push("", ...wrap(`critical path (${formatDuration(busy)} of ${formatDuration(span)}): `, path.map((s) => s.name), " → ", options.width));
  const failed = steps.filter((s) => s.outcome === "Failed");
  for (const step of failed) lines.push(`✗ ${step.name}: ${step.message ?? "failed"}`);
  return `${lines.join("\n")}\n`;
}
