// Summarises a .cpuprofile: the functions with the most self time, and the source files with the most
// self time, each as a share of all samples. With `--long MS`, also the stretches in which the thread
// ran MS or longer without going idle (what holds an event loop, and so a request, that long), each with
// the functions on the stack for most of it. With `--from S --to S`, only the samples of that stretch of
// the profile (seconds from its start; the fleet benchmark prints its idle window so).
//
//   node --import tsx bench/support/cpu-summary.ts FILE.cpuprofile [--top 30] [--long 100] [--from S --to S]
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { formatTable } from "./report.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  ms: number;
  share: number;
}

function place(url: string): string {
  const path = url.replace(/^file:\/\//, "");
  return path.startsWith("/") ? relative(process.cwd(), path) : path || "(native)";
}

/** Self time by function and by file, largest first. */
export function summarizeProfile(profile: Profile): { total: number; functions: SelfTime[]; files: SelfTime[] } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const functions = new Map<string, number>();
  const files = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    const where = place(frame.url);
    const fn = `${frame.functionName || "(anonymous)"} ${where}${frame.url ? `:${frame.lineNumber + 1}` : ""}`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
    files.set(where, (files.get(where) ?? 0) + us);
  }
  const ranked = (map: Map<string, number>) =>
    [...map].map(([name, us]) => ({ name, ms: us / 1000, share: us / total })).sort((a, b) => b.ms - a.ms);
  return { total: total / 1000, functions: ranked(functions), files: ranked(files) };
}

/** The profile's samples taken from `fromMs` to `toMs` after its start, as a profile of their own. */
export function sampledBetween(profile: Profile, fromMs: number, toMs: number): Profile {
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  let at = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at <= fromMs * 1000 || at > toMs * 1000) return;
    samples.push(id);
    // The first one counts only what fell inside the stretch.
    timeDeltas.push(samples.length === 1 ? Math.min(delta, at - fromMs * 1000) : delta);
  });
  return { nodes: profile.nodes, samples, timeDeltas };
}

export interface LongStretch {
  /** From the start of the profile. */
  startMs: number;
  ms: number;
  /** Functions on the stack, by the time they were on it during the stretch, largest first. */
  onStack: SelfTime[];
}

/** The stretches of at least `minMs` in which no sample was idle, longest first. */
export function longStretches(profile: Profile, minMs: number): LongStretch[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const name = (node: ProfileNode) => `${node.callFrame.functionName || "(anonymous)"} ${place(node.callFrame.url)}${node.callFrame.url ? `:${node.callFrame.lineNumber + 1}` : ""}`;
  const stretches: LongStretch[] = [];
  let at = 0;
  let start = -1;
  let onStack = new Map<string, number>();
  const close = (end: number) => {
    if (start >= 0 && end - start >= minMs * 1000) {
      const total = end - start;
      const ranked = [...onStack].map(([fn, us]) => ({ name: fn, ms: us / 1000, share: us / total })).sort((a, b) => b.ms - a.ms);
      stretches.push({ startMs: start / 1000, ms: total / 1000, onStack: ranked });
    }
    start = -1;
    onStack = new Map();
  };
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === "(idle)") return close(at - delta);
    if (start < 0) start = at - delta;
    const seen = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const fn = name(byId.get(n)!);
      if (seen.has(fn) || fn.startsWith("(root)")) continue;
      seen.add(fn);
      onStack.set(fn, (onStack.get(fn) ?? 0) + delta);
    }
  });
  close(at);
  return stretches.sort((a, b) => b.ms - a.ms);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file) throw new Error("usage: cpu-summary.ts FILE.cpuprofile [--top N] [--long MS] [--from S --to S]");
  const option = (name: string) => {
    const index = process.argv.indexOf(name);
    return index > 0 ? Number(process.argv[index + 1]) : undefined;
  };
  const whole = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const from = option("--from");
  const to = option("--to");
  const profile = from === undefined && to === undefined ? whole : sampledBetween(whole, (from ?? 0) * 1000, (to ?? Infinity) * 1000);
  const summary = summarizeProfile(profile);
  const top = option("--top") ?? 30;
  const rows = (items: SelfTime[]) => items.slice(0, top).map((t) => [t.name, `${t.ms.toFixed(0)} ms`, `${(t.share * 100).toFixed(1)}%`]);
  console.log(`${file}: ${(summary.total / 1000).toFixed(1)} s sampled\n`);
  console.log(formatTable([["function (self time)", "ms", "share"], ...rows(summary.functions)]));
  console.log("");
  console.log(formatTable([["file (self time)", "ms", "share"], ...rows(summary.files)]));
  const minMs = option("--long");
  if (minMs !== undefined) {
    const stretches = longStretches(profile, minMs);
    console.log(`\n${stretches.length} stretches of ${minMs} ms or more without going idle (${stretches.reduce((s, l) => s + l.ms, 0).toFixed(0)} ms in all); the ${Math.min(10, stretches.length)} longest:`);
    for (const stretch of stretches.slice(0, 10)) {
      console.log(`\nat ${(stretch.startMs / 1000).toFixed(1)} s, ${stretch.ms.toFixed(0)} ms:`);
      console.log(formatTable([["on the stack", "ms", "share"], ...stretch.onStack.slice(0, 12).map((t) => [t.name, `${t.ms.toFixed(0)} ms`, `${(t.share * 100).toFixed(0)}%`])]));
    }
  }
}
