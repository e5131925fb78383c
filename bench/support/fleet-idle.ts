// Two additions to the fleet benchmark: what an idle fleet costs (every cluster Running, nothing
// changing: CPU, reconciles and store writes over a window), and a chart of clusters Running over time,
// written as an SVG file next to the printed figures.
import { writeFileSync } from "node:fs";
import { fixed } from "./report.ts";
import { sumBy, type Sample } from "./prometheus.ts";

export interface IdleGroup {
  name: string;
  cpuMs: () => number;
}

export interface IdleFigures {
  seconds: number;
  /** CPU time per group over the window, as a share of one core (0.05 = 5 %). */
  cores: { name: string; share: number }[];
  /** Reconciles per second over the window, by controller. */
  reconcilesPerSecond: Map<string, number>;
  /** Store writes over the window. */
  writes: number;
  /** When the window began and ended (`performance.now()`). */
  window: { start: number; end: number };
}

export interface IdleProbe {
  groups: IdleGroup[];
  scrape: () => Promise<Sample[]>;
  storeRevision: () => Promise<number>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits `settleMs` after the last cluster turned Running (what was already queued finishes), then
 * measures `windowMs` of the idle fleet.
 */
export async function measureIdleFleet(probe: IdleProbe, settleMs: number, windowMs: number): Promise<IdleFigures> {
  await sleep(settleMs);
  const metricsBefore = await probe.scrape();
  const revisionBefore = await probe.storeRevision();
  const cpuBefore = probe.groups.map((g) => g.cpuMs());
  const start = performance.now();
  await sleep(windowMs);
  const cpuAfter = probe.groups.map((g) => g.cpuMs());
  const end = performance.now();
  const elapsedMs = end - start;
  const metricsAfter = await probe.scrape();
  // The two reads of the revision and the scrapes are the benchmark's own requests, not writes.
  const writes = (await probe.storeRevision()) - revisionBefore;
  const before = sumBy(metricsBefore, "slipway_reconcile_duration_seconds_count", "controller");
  const after = sumBy(metricsAfter, "slipway_reconcile_duration_seconds_count", "controller");
  const reconcilesPerSecond = new Map<string, number>();
  for (const [controller, count] of after) {
    const delta = count - (before.get(controller) ?? 0);
    if (delta > 0) reconcilesPerSecond.set(controller, delta / (elapsedMs / 1000));
  }
  return {
    seconds: elapsedMs / 1000,
    cores: probe.groups.map((g, i) => ({ name: g.name, share: (cpuAfter[i]! - cpuBefore[i]!) / elapsedMs })),
    reconcilesPerSecond,
    writes,
    window: { start, end },
  };
}

/** Rows for the benchmark's table; the target (≤ 5 % of one core) applies to `slipway up`. */
export function idleRows(idle: IdleFigures, target: { group: string; share: number }): string[][] {
  const rows = idle.cores.map(({ name, share }) => [
    `idle fleet: CPU, ${name} (${fixed(idle.seconds, 0)} s)`,
    `${fixed(share * 100, 1)} % of a core`,
    name === target.group ? `≤ ${fixed(target.share * 100, 0)} %` : "",
    name === target.group ? (share <= target.share ? "met" : "missed") : "",
  ]);
  const total = [...idle.reconcilesPerSecond.values()].reduce((a, b) => a + b, 0);
  const by = [...idle.reconcilesPerSecond].sort((a, b) => b[1] - a[1]).map(([c, r]) => `${c} ${fixed(r, 1)}`).join(", ");
  rows.push(["idle fleet: reconciles per second", `${fixed(total, 1)}${by ? ` (${by})` : ""}`, "", ""]);
  rows.push(["idle fleet: store writes", String(idle.writes), "", ""]);
  return rows;
}

/** Records how many clusters are Running, once a second, from the first submission on. */
export class RunningTimeline {
  readonly points: { seconds: number; running: number }[] = [];
  private timer?: NodeJS.Timeout;

  start(running: () => number): void {
    const start = performance.now();
    const sample = () => this.points.push({ seconds: (performance.now() - start) / 1000, running: running() });
    sample();
    this.timer = setInterval(sample, 1_000);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** An SVG line chart of clusters Running over seconds since the first submission. */
export function runningChartSvg(points: readonly { seconds: number; running: number }[], clusters: number, title: string): string {
  const width = 720;
  const height = 360;
  const left = 64;
  const right = 16;
  const top = 40;
  const bottom = 44;
  const lastSecond = Math.max(1, points.at(-1)?.seconds ?? 1);
  const x = (s: number) => left + (s / lastSecond) * (width - left - right);
  const y = (n: number) => top + (1 - n / Math.max(1, clusters)) * (height - top - bottom);
  const path = points.map((p, i) => `${i ? "L" : "M"}${fixed(x(p.seconds), 1)},${fixed(y(p.running), 1)}`).join(" ");
  const xStep = niceStep(lastSecond / 6);
  const yStep = niceStep(clusters / 5);
  const lines: string[] = [];
  for (let s = 0; s <= lastSecond; s += xStep) {
    lines.push(`<line x1="${fixed(x(s), 1)}" y1="${top}" x2="${fixed(x(s), 1)}" y2="${height - bottom}" stroke="#ddd"/>`);
    lines.push(`<text x="${fixed(x(s), 1)}" y="${height - bottom + 16}" text-anchor="middle">${s}</text>`);
  }
  for (let n = 0; n <= clusters; n += yStep) {
    lines.push(`<line x1="${left}" y1="${fixed(y(n), 1)}" x2="${width - right}" y2="${fixed(y(n), 1)}" stroke="#ddd"/>`);
    lines.push(`<text x="${left - 6}" y="${fixed(y(n) + 4, 1)}" text-anchor="end">${n.toLocaleString("en-US")}</text>`);
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="14">${escapeXml(title)}</text>`,
    ...lines,
    `<line x1="${left}" y1="${height - bottom}" x2="${width - right}" y2="${height - bottom}" stroke="#333"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${height - bottom}" stroke="#333"/>`,
    `<text x="${(left + width - right) / 2}" y="${height - 8}" text-anchor="middle">seconds after the first submission</text>`,
    `<text transform="translate(14 ${(top + height - bottom) / 2}) rotate(-90)" text-anchor="middle">clusters Running</text>`,
    `<path d="${path}" fill="none" stroke="#1f6feb" stroke-width="2"/>`,
    `</svg>`,
    "",
  ].join("\n");
}

export function writeRunningChart(file: string, points: readonly { seconds: number; running: number }[], clusters: number, title: string): void {
  writeFileSync(file, runningChartSvg(points, clusters, title));
}

function niceStep(raw: number): number {
  if (raw <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  const unit = [1, 2, 5, 10].find((m) => m * power >= raw)!;
  return unit * power;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
