// The sim cloud `slipway up` works against: embedded in the process (the default: its API and its
// workload clusters served on loopback ports, its state in the data directory), or another process's,
// reached at --sim-endpoint. Either way the `sim` provider talks to it as a provider talks to a cloud.
import { join } from "node:path";
import type { Logger } from "pino";
import type { SimProviderOptions } from "../providers/sim/index.ts";
import type { FaultConfig } from "../simcloud/faults.ts";
import type { ProfileName } from "../simcloud/profiles.ts";
import { startSimCloudServer } from "../simcloud/server.ts";
import { embeddedSimTokens } from "../simcloud/tokens.ts";

export interface SimCloudOptions {
  /** Use the sim cloud at this URL instead of embedding one. */
  endpoint?: string;
  token?: string;
  profile?: ProfileName;
  /** Port of the embedded cloud's API (0: a free one). */
  port?: number;
  workloadPort?: number;
  /** State file of the embedded cloud (default <data-dir>/simcloud.db). */
  state?: string;
  seed?: number;
  timeScale?: number;
  adminToken?: string;
  faults?: FaultConfig;
}

export interface SimCloudHandle {
  /** How the sim provider reaches this cloud. */
  provider: SimProviderOptions;
  /** Where the embedded cloud serves (undefined when another process's cloud is used). */
  url?: string;
  workloadUrl?: string;
  close(): Promise<void>;
}

export async function openSimCloud(options: SimCloudOptions, dataDir: string, log: Logger): Promise<SimCloudHandle> {
  if (options.endpoint) {
    return { provider: { endpoint: options.endpoint, token: options.token }, close: async () => undefined };
  }
  const tokens = embeddedSimTokens(dataDir);
  const token = options.token ?? tokens.token;
  const server = await startSimCloudServer({
    port: options.port ?? 0,
    workloadPort: options.workloadPort ?? 0,
    state: options.state ?? join(dataDir, "simcloud.db"),
    profile: options.profile ?? "demo",
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.timeScale !== undefined ? { timeScale: options.timeScale } : {}),
    adminToken: options.adminToken ?? tokens.adminToken,
    defaultToken: token,
    ...(options.faults ? { faults: options.faults } : {}),
    logger: log.child({ component: "simcloud" }),
  });
  return {
    provider: { cloud: server.cloud, endpoint: server.url, token },
    url: server.url,
    workloadUrl: server.workloadUrl,
    close: () => server.close(),
  };
}
