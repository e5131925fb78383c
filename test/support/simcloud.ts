// Starts `slipway sim-cloud serve` as its own process, as the control plane would find a real cloud,
// with clients for its API and its admin endpoints.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SimCloudAdminClient, SimCloudClient } from "../../src/simcloud/client.ts";
import type { CloudResource } from "../../src/simcloud/types.ts";
import { SLIPWAY_BIN } from "./slipway.ts";

export const SIM_TOKEN = "sim-test-token";
export const SIM_ADMIN_TOKEN = "sim-test-admin-token";

export interface RunningSimCloud {
  url: string;
  state: string;
  process: ChildProcess;
  api: SimCloudClient;
  admin: SimCloudAdminClient;
  /** Every resource tagged with the cluster (namespace/name), terminated instances included. */
  resourcesOf(cluster: string): Promise<CloudResource[]>;
  /** What the process printed so far (its log): the last OUTPUT_KEPT characters of it. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Characters of the process's output kept in memory. A fleet's sim cloud logging at info prints more than
 * a JavaScript string can hold (~512 MiB); `logFile` keeps all of it.
 */
export const OUTPUT_KEPT = 16 * 1024 * 1024;

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of running) p.kill("SIGKILL");
});

export async function startSimCloud(
  options: { profile?: string; seed?: number; timeScale?: number; state?: string; args?: string[]; /** Where all of the process's output is written as it comes. */ logFile?: string } = {},
): Promise<RunningSimCloud> {
  // A state of the helper's own goes with the process (a caller that names one keeps it).
  const scratch = options.state === undefined ? mkdtempSync(join(tmpdir(), "slipway-sim-")) : undefined;
  const state = options.state ?? join(scratch!, "sim.db");
  const args = [
    SLIPWAY_BIN, "sim-cloud", "serve",
    // Port 0: the process binds a free port itself and names it in its ready line (a port picked here
    // could be taken by another test before the process binds it).
    "--port", "0",
    "--state", state,
    "--profile", options.profile ?? "fast",
    "--seed", String(options.seed ?? 1),
    "--time-scale", String(options.timeScale ?? 1),
    "--token", SIM_TOKEN,
    "--admin-token", SIM_ADMIN_TOKEN,
    ...(options.args ?? []),
  ];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let out = "";
  const log = options.logFile ? createWriteStream(options.logFile) : undefined;
  const take = (d: Buffer) => {
    log?.write(d);
    out += d.toString();
    if (out.length > 2 * OUTPUT_KEPT) out = out.slice(-OUTPUT_KEPT);
  };
  child.stdout!.on("data", take);
  child.stderr!.on("data", take);
  const exited = new Promise<void>((res) =>
    child.once("exit", () => {
      running.delete(child);
      log?.end();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
      res();
    }),
  );
  const url = await new Promise<string>((res, reject) => {
    const timer = setTimeout(() => {
      // A server left running would keep the test process (and the suite) waiting after the failure.
      child.kill("SIGKILL");
      reject(new Error(`sim-cloud serve did not become ready:\n${out}`));
    }, 90_000);
    child.stdout!.on("data", () => {
      const ready = /ready at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (ready) {
        clearTimeout(timer);
        res(ready[1]!);
      }
    });
    void exited.then(() => reject(new Error(`sim-cloud serve exited:\n${out}`)));
  });
  const api = new SimCloudClient({ endpoint: url, token: SIM_TOKEN });
  return {
    url,
    state,
    process: child,
    api,
    admin: new SimCloudAdminClient({ endpoint: url, token: SIM_ADMIN_TOKEN }),
    resourcesOf: async (cluster) => (await api.listResources()).filter((r) => r.tags["slipway.dev/cluster"] === cluster),
    output: () => out.slice(-OUTPUT_KEPT),
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await exited;
    },
  };
}
