// Starts real `slipway up` processes for end-to-end tests and drives kubectl against them.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createServer } from "node:net";
import assert from "node:assert/strict";

export const REPO = resolve(import.meta.dirname, "../..");
export const SLIPWAY_BIN = join(REPO, "bin/slipway.mjs");
export const KUBECTL = "/usr/bin/kubectl";

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export interface RunningSlipway {
  process: ChildProcess;
  dataDir: string;
  port: number;
  kubeconfig: string;
  output: () => string;
  /** Stops with a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of running) p.kill("SIGKILL");
});

type StartOptions = { dataDir?: string; port?: number; args?: string[]; env?: NodeJS.ProcessEnv; timeoutMs?: number };

/**
 * Starts `slipway up` and resolves once it prints its ready line. A free port is only free when it is
 * picked: another test, or a connection's source port from the same range, can take it before `slipway
 * up` binds it, so a first start is tried again on another free port. A restart on the port a killed
 * process had (`port`) may find it taken the same way: it is tried again for a few seconds, then on a
 * free port.
 */
export async function startSlipway(options: StartOptions = {}): Promise<RunningSlipway> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "slipway-e2e-"));
  if (options.port === undefined) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await startOnce(options, dataDir, await freePort());
      } catch (error) {
        if (attempt >= 4 || !/EADDRINUSE/.test((error as Error).message)) throw error;
      }
    }
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return await startOnce(options, dataDir, attempt < 10 ? options.port : await freePort());
    } catch (error) {
      if (attempt >= 10 || !/EADDRINUSE/.test((error as Error).message)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

async function startOnce(options: StartOptions, dataDir: string, port: number): Promise<RunningSlipway> {
  // SLIPWAY_E2E_CONTROLLERS_IN_WORKER=1 runs every test's controllers on their worker thread.
  const inWorker = process.env.SLIPWAY_E2E_CONTROLLERS_IN_WORKER === "1" ? ["--controllers-in-worker"] : [];
  const args = [...(options.args ?? []), ...inWorker.filter((flag) => !options.args?.includes(flag))];
  // Tests run side by side: an embedded sim cloud takes a free port unless told otherwise.
  const simPort = args.includes("--sim-endpoint") || args.includes("--sim-port") ? [] : ["--sim-port", "0"];
  const child = spawn(process.execPath, [SLIPWAY_BIN, "up", "--data-dir", dataDir, "--port", String(port), ...simPort, ...args], {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((res) => child.once("exit", (code) => { running.delete(child); res(code); }));
  await new Promise<void>((res, reject) => {
    // A process that never became ready is stopped: left running, it would hold the test file open.
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`slipway up did not become ready in time:\n${out}`));
    }, options.timeoutMs ?? 90_000);
    const check = () => {
      if (/\bready\b/.test(out)) {
        clearTimeout(timer);
        res();
      }
    };
    child.stdout!.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`slipway up exited with ${code}:\n${out}`));
    });
  });
  return {
    process: child,
    dataDir,
    port,
    kubeconfig: join(dataDir, "kubeconfig"),
    output: () => out,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export interface KubectlResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl synchronously against a kubeconfig. */
export function kubectl(kubeconfig: string, args: string[], input?: string): KubectlResult {
  const r = spawnSync(KUBECTL, ["--kubeconfig", kubeconfig, ...args], { input, encoding: "utf8", timeout: 60_000 });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Runs kubectl, which must succeed: its output, else an assertion error with the command and kubectl's message. */
export function kubectlOk(kubeconfig: string, args: string[], input?: string): string {
  const r = kubectl(kubeconfig, args, input);
  assert.equal(r.status, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** Runs kubectl asynchronously (for commands that wait or watch). */
export function kubectlAsync(kubeconfig: string, args: string[]): { child: ChildProcess; output: () => string; done: Promise<number | null> } {
  const child = spawn(KUBECTL, ["--kubeconfig", kubeconfig, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const done = new Promise<number | null>((res) => child.once("exit", (code) => { running.delete(child); res(code); }));
  return { child, output: () => out, done };
}

/**
 * Thrown by a check of `eventually` when waiting longer cannot help (the cluster Failed, the operation
 * ended otherwise): `eventually` rejects with it at once, instead of polling on until its timeout.
 */
export class StopWaiting extends Error {
  override readonly name = "StopWaiting";
}

/**
 * Polls until `check` returns a value (not undefined/false), or fails after the timeout. Errors a check
 * throws are retried (the API may be briefly away) and the last is reported at the timeout — except
 * StopWaiting, which ends the wait at once. The timeout's error names `what`, the check's last error, and
 * what `describe` says of the state at that moment (for a failure in CI, where nothing else of the run is kept).
 */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string; describe?: () => string | Promise<string> } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      if (e instanceof StopWaiting) throw e;
      last = e;
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 100));
  }
  let state = "";
  if (options.describe) {
    try {
      state = `\n${await options.describe()}`;
    } catch (e) {
      state = `\n(the state could not be described: ${(e as Error).message})`;
    }
  }
  throw new Error(`timed out waiting for ${options.what ?? "a condition"}${last ? `: ${(last as Error).message}` : ""}${state}`);
}
