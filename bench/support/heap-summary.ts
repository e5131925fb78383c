// Summarises a sampling heap profile (.heapprofile, from profile-running.ts or DevTools): the bytes still
// alive by the function that allocated them, and by the nearest of the project's own functions on the
// allocating stack (what in Slipway holds the memory, when the allocation itself was in JSON.parse, a
// library or Node), each as a share of all.
//
//   node --import tsx bench/support/heap-summary.ts FILE.heapprofile [--top 30]
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { formatTable } from "./report.ts";

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

export interface HeapProfile {
  head: HeapNode;
}

export interface Retained {
  name: string;
  bytes: number;
  share: number;
}

function frameName(frame: HeapNode["callFrame"]): string {
  const path = frame.url.replace(/^file:\/\//, "");
  const where = path.startsWith("/") ? relative(process.cwd(), path) : path || "(native)";
  return `${frame.functionName || "(anonymous)"} ${where}${frame.lineNumber > 0 ? `:${frame.lineNumber + 1}` : ""}`;
}

/** Whether a frame is the project's own code (not a dependency, Node itself or V8). */
function isOwn(frame: HeapNode["callFrame"]): boolean {
  const path = frame.url.replace(/^file:\/\//, "");
  return path.startsWith("/") && !path.includes("/node_modules/") && /\/(src|bench|test)\//.test(path);
}

/** Bytes alive by allocating function, and by the innermost own function on the stack; largest first. */
export function summarizeHeap(profile: HeapProfile): { total: number; allocators: Retained[]; owners: Retained[] } {
  const allocators = new Map<string, number>();
  const owners = new Map<string, number>();
  let total = 0;
  const visit = (node: HeapNode, owner: string) => {
    const own = isOwn(node.callFrame) ? frameName(node.callFrame) : owner;
    if (node.selfSize > 0) {
      total += node.selfSize;
      const name = frameName(node.callFrame);
      allocators.set(name, (allocators.get(name) ?? 0) + node.selfSize);
      owners.set(own, (owners.get(own) ?? 0) + node.selfSize);
    }
    for (const child of node.children) visit(child, own);
  };
  visit(profile.head, "(no own function on the stack)");
  const ranked = (map: Map<string, number>) =>
    [...map].map(([name, bytes]) => ({ name, bytes, share: bytes / total })).sort((a, b) => b.bytes - a.bytes);
  return { total, allocators: ranked(allocators), owners: ranked(owners) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  const topAt = process.argv.indexOf("--top");
  const top = topAt > 0 ? Number(process.argv[topAt + 1]) : 30;
  if (!file || !(top > 0)) {
    process.stderr.write("usage: node --import tsx bench/support/heap-summary.ts FILE.heapprofile [--top 30]\n");
    process.exit(2);
  }
  const summary = summarizeHeap(JSON.parse(readFileSync(file, "utf8")) as HeapProfile);
  const table = (title: string, rows: Retained[]) =>
    formatTable([[title, "MiB", "share"], ...rows.slice(0, top).map((r) => [r.name, (r.bytes / 2 ** 20).toFixed(1), `${(r.share * 100).toFixed(1)}%`])]);
  process.stdout.write(`${file}: ${(summary.total / 2 ** 20).toFixed(1)} MiB sampled alive\n\n`);
  process.stdout.write(`${table("allocated by", summary.allocators)}\n\n${table("innermost own function on the stack", summary.owners)}\n`);
}
