// Runs the sim cloud's HTTP API on 127.0.0.1, standing alone (`slipway sim-cloud serve`) or embedded in
// the control-plane process.
import { SimCloud, type SimCloudOptions } from "./cloud.ts";
import { createSimCloudHttp } from "./http.ts";
import { startWorkloadEmulation, type WorkloadEmulation } from "./workload/index.ts";
import { registerPublicJoin } from "./workload/public-join.ts";

export const DEFAULT_PORT = 7480;
export const DEFAULT_ADMIN_TOKEN = "sim-admin-token";

export interface SimCloudServerOptions extends SimCloudOptions {
  /** Port on 127.0.0.1 (default 7480; 0 picks a free one). */
  port?: number;
  /** Token of the /admin/v1 endpoints (default "sim-admin-token"). */
  adminToken?: string;
  /** Serve an existing cloud instead of creating one (it is then not closed by `close`). */
  cloud?: SimCloud;
  /**
   * Port of the emulated workload clusters' HTTPS API on 127.0.0.1 (default 0: a free one); false
   * leaves the workload emulation off (for a caller that runs its own).
   */
  workloadPort?: number | false;
  /** Base URLs of the other sim clouds whose public addresses and names this cloud's machines reach (public-join.ts). */
  peers?: readonly string[];
  /** Address ranges outside every sim cloud (one's own hosts) that this cloud's machines reach (outside-join.ts). */
  outside?: readonly string[];
}

export interface SimCloudServer {
  /** Base URL, e.g. http://127.0.0.1:7480 */
  url: string;
  cloud: SimCloud;
  /** Base URL of the workload clusters' APIs (each at `${workloadUrl}/clusters/<id>`), unless turned off. */
  workloadUrl?: string;
  /** Stops listening, then closes the cloud (unless it was handed in). */
  close(): Promise<void>;
}

export async function startSimCloudServer(options: SimCloudServerOptions = {}): Promise<SimCloudServer> {
  // A cloud made here resumes what its state file left pending only once the workload emulation's hooks
  // are attached: an instance whose boot fell due while the cloud was down must run its kubeadm.
  const cloud = options.cloud ?? new SimCloud({ ...options, deferTransitions: true });
  const app = createSimCloudHttp(cloud, {
    adminToken: options.adminToken ?? DEFAULT_ADMIN_TOKEN,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  let workloads: WorkloadEmulation | undefined;
  registerPublicJoin(app, () => workloads?.emulator);
  try {
    await app.listen({ host: "127.0.0.1", port: options.port ?? DEFAULT_PORT });
  } catch (error) {
    if (!options.cloud) await cloud.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : (options.port ?? DEFAULT_PORT);
  if (options.workloadPort !== false) {
    try {
      workloads = await startWorkloadEmulation(cloud, {
        port: options.workloadPort ?? 0,
        ...(options.logger ? { logger: options.logger } : {}),
        ...(options.peers ? { peers: options.peers } : {}),
        ...(options.outside ? { outside: options.outside } : {}),
      });
    } catch (error) {
      await app.close();
      if (!options.cloud) await cloud.close();
      throw error;
    }
  }
  if (!options.cloud) cloud.resumeTransitions();
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    cloud,
    ...(workloads ? { workloadUrl: workloads.url } : {}),
    close() {
      closing ??= (async () => {
        await app.close();
        await workloads?.close();
        if (!options.cloud) await cloud.close();
      })();
      return closing;
    },
  };
}
