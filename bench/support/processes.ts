// Child processes of a benchmark and their teardown: whatever happens (success, an error, Ctrl-C, the
// time limit), every child is stopped and every temporary directory removed before the process exits.
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Endpoint } from "./client.ts";

const BENCH_DIR = join(import.meta.dirname, "..");
const STOP_GRACE_MS = 5_000;

type Teardown = () => Promise<void> | void;

const teardowns: Teardown[] = [];

/** Registers a step run at teardown; steps run in reverse order of registration. */
export function onTeardown(step: Teardown): void {
  teardowns.push(step);
}

export function removeOnTeardown(dir: string): void {
  onTeardown(() => rmSync(dir, { recursive: true, force: true }));
}

export async function teardown(): Promise<void> {
  for (const step of teardowns.splice(0).reverse()) {
    try {
      await step();
    } catch (error) {
      process.stderr.write(`teardown: ${(error as Error).message}\n`);
    }
  }
}

/**
 * Runs `main`, then tears down; exits 1 on an error and 130 on SIGINT/SIGTERM. `main` is given up
 * after `limitMs`, so a benchmark always ends by itself.
 */
export function runBenchmark(main: () => Promise<void>, limitMs: number): void {
  let exiting = false;
  const finish = async (code: number, message?: string) => {
    if (exiting) return;
    exiting = true;
    if (message !== undefined) process.stderr.write(`${message}\n`);
    await teardown();
    process.exit(code);
  };
  const limit = setTimeout(() => void finish(1, `benchmark stopped: it ran longer than ${limitMs / 1000} s`), limitMs);
  process.on("SIGINT", () => void finish(130, "benchmark interrupted"));
  process.on("SIGTERM", () => void finish(130, "benchmark terminated"));
  main().then(
    () => {
      clearTimeout(limit);
      return finish(process.exitCode === undefined ? 0 : Number(process.exitCode));
    },
    (error: unknown) => {
      clearTimeout(limit);
      return finish(1, `benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    },
  );
}

/** Sends SIGTERM, then SIGKILL if the child has not exited within the grace period. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/** Starts bench/support/bare-server.ts answering every GET with the contents of `bodyFile`. */
export async function startBareServer(bodyFile: string): Promise<{ endpoint: Endpoint; child: ChildProcess }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(BENCH_DIR, "support/bare-server.ts"), "--body", bodyFile], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  onTeardown(() => stopChild(child));
  let output = "";
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const announced = await new Promise<{ port: number; caCertPem: string }>((resolve, reject) => {
    let stdout = "";
    const timer = setTimeout(() => reject(new Error(`the bare server did not start in time:\n${output}`)), 30_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const newline = stdout.indexOf("\n");
      if (newline === -1) return;
      clearTimeout(timer);
      resolve(JSON.parse(stdout.slice(0, newline)) as { port: number; caCertPem: string });
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the bare server exited with ${code}:\n${output}`));
    });
  });
  return { endpoint: { server: `https://127.0.0.1:${announced.port}`, caCertPem: announced.caCertPem }, child };
}
