// Summarises a .cpuprofile: the functions with the most self time, and the source files with the most
// self time, each as a share of all samples.
//
//   node --import tsx bench/support/cpu-summary.ts FILE.cpuprofile [--top 30]
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

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file) throw new Error("usage: cpu-summary.ts FILE.cpuprofile [--top N]");
  const topIndex = process.argv.indexOf("--top");
  const top = topIndex > 0 ? Number(process.argv[topIndex + 1]) : 30;
  const summary = summarizeProfile(JSON.parse(readFileSync(file, "utf8")) as Profile);
  const rows = (items: SelfTime[]) => items.slice(0, top).map((t) => [t.name, `${t.ms.toFixed(0)} ms`, `${(t.share * 100).toFixed(1)}%`]);
  console.log(`${file}: ${(summary.total / 1000).toFixed(1)} s sampled\n`);
  console.log(formatTable([["function (self time)", "ms", "share"], ...rows(summary.functions)]));
  console.log("");
  console.log(formatTable([["file (self time)", "ms", "share"], ...rows(summary.files)]));
}
