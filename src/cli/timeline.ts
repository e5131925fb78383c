// `slipway timeline CLUSTER`: the timeline view of the cluster (views/timeline.ts) drawn as bars on one
// time axis from the cluster's creation, so that what ran side by side and what waited on what (the
// critical path) shows.
import type { Command } from "commander";
import type { ClusterObject } from "../api/kinds.ts";
import { clusterTimeline } from "../views/timeline.ts";
import { getCluster } from "./clusters.ts";
import { withSession } from "./connect.ts";
import { formatDuration } from "../views/duration.ts";
import { fitWidth } from "./output.ts";

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
  const view = clusterTimeline(cluster, options.now);
  const { steps, origin } = view;
  if (steps.length === 0) return `cluster/${view.cluster}  ${view.phase}\nno steps recorded yet (is the cluster controller running?)\n`;
  // The axis spans at least a second, so that a cluster made in an instant still has a readable scale.
  const total = Math.max(view.spanMs, 1000);
  const at = (time: number) => formatDuration(time - origin);

  const labelWidth = Math.min(MAX_LABEL, Math.max(...steps.map((s) => s.name.length)));
  const suffixes = steps.map((s) => `  ${at(s.start)} → ${s.finished ? at(s.end) : "…"}${s.outcome === "Failed" ? " ✗" : ""}`);
  const suffixWidth = Math.max(...suffixes.map((s) => s.length));
  const barWidth = Math.max(MIN_BAR, options.width - (labelWidth + 1) - 2 - suffixWidth);
  const cell = (time: number) => ((time - origin) / total) * barWidth;

  const lines = [`cluster/${view.cluster}  ${view.phase}  ${formatDuration(view.spanMs)} from creation${view.spanEnds ? ` ${view.spanEnds}` : ""}`, ""];
  const axisEnd = formatDuration(total);
  const middle = formatDuration(total / 2);
  const axis = `0s${" ".repeat(Math.max(1, Math.floor(barWidth / 2) - 2 - Math.floor(middle.length / 2)))}${middle}`;
  lines.push(`${" ".repeat(labelWidth + 2)}${axis}${" ".repeat(Math.max(1, barWidth - axis.length - axisEnd.length))}${axisEnd}`);
  steps.forEach((step, i) => {
    const fill = step.outcome === "Running" ? "░" : "█";
    const drawn = bar(cell(step.start), cell(step.end), barWidth, fill);
    lines.push(`${fitWidth(step.name, labelWidth).padEnd(labelWidth + 1)}|${drawn}|${suffixes[i]}`);
  });
  lines.push("", ...wrap(`critical path (${formatDuration(view.criticalMs)} of ${formatDuration(view.spanMs)}): `, view.criticalPath.map((s) => s.name), " → ", options.width));
  for (const step of view.failed) lines.push(`✗ ${step.name}: ${step.message ?? "failed"}`);
  return `${lines.join("\n")}\n`;
}
