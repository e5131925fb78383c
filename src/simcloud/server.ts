// Runs the sim cloud's HTTP API on 127.0.0.1, standing alone (`slipway sim-cloud serve`) or embedded in
// the control-plane process.
import { SimCloud, type SimCloudOptions } from "./cloud.ts";
import { createSimCloudHttp } from "./http.ts";

export const DEFAULT_PORT = 7480;
export const DEFAULT_ADMIN_TOKEN = "sim-admin-token";

export interface SimCloudServerOptions extends SimCloudOptions {
  /** Port on 127.0.0.1 (default 7480; 0 picks a free one). */
  port?: number;
  /** Token of the /admin/v1 endpoints (default "sim-admin-token"). */
  adminToken?: string;
  /** Serve an existing cloud instead of creating one (it is then not closed by `close`). */
  cloud?: SimCloud;
}

export interface SimCloudServer {
  /** Base URL, e.g. http://127.0.0.1:7480 */
  url: string;
  cloud: SimCloud;
  /** Stops listening, then closes the cloud (unless it was handed in). */
  close(): Promise<void>;
}

export async function startSimCloudServer(options: SimCloudServerOptions = {}): Promise<SimCloudServer> {
  const cloud = options.cloud ?? new SimCloud(options);
  const app = createSimCloudHttp(cloud, {
    adminToken: options.adminToken ?? DEFAULT_ADMIN_TOKEN,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  try {
    await app.listen({ host: "127.0.0.1", port: options.port ?? DEFAULT_PORT });
  } catch (error) {
    if (!options.cloud) await cloud.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : (options.port ?? DEFAULT_PORT);
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    cloud,
    close() {
      closing ??= (async () => {
        await app.close();
        if (!options.cloud) await cloud.close();
      })();
      return closing;
    },
  };
}
