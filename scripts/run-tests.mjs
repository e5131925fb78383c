#!/usr/bin/env node
// Runs every *.test.ts under the given folders (or the test files named) with node's test runner (Node 20
// has no --test globs).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

function collect(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const args = process.argv.slice(2);
const flags = args.filter((a) => a.startsWith("--"));
const dirs = args.filter((a) => !a.startsWith("--"));
const files = dirs.flatMap((d) => (statSync(d).isDirectory() ? collect(d, []) : [d]));
if (files.length === 0) {
  console.error("no test files found under", dirs.join(", "));
  process.exit(1);
}
// A file that says "test: runs alone" near its top runs after the others, by itself: a browser notices the
// network changing when another test creates namespaces and interfaces, and aborts its navigation.
const ALONE = "test: runs alone";
const alone = files.filter((f) => readFileSync(f, "utf8").slice(0, 2000).includes(ALONE));
const together = files.filter((f) => !alone.includes(f));
// No test may hold the run up: each test and hook gets at most 15 minutes, and a file whose tests are done
// exits even if something it started is still open — after its report has reached this process in full
// (test-stdout-blocking.mjs, loaded into each file's process).
const BOUNDS = ["--test-timeout=900000", "--test-force-exit", "--import", new URL("./test-stdout-blocking.mjs", import.meta.url).href];
const run = (batch) =>
  batch.length === 0
    ? 0
    : (spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=2", "--test-reporter=spec", ...BOUNDS, ...flags, ...batch], { stdio: "inherit" }).status ?? 1);
const first = run(together);
const second = run(alone);
process.exit(first !== 0 ? first : second);
