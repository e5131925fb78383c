// Emulated Kubernetes clusters on the sim cloud's machines: booting an instance whose user data runs
// `kubeadm init` brings up that cluster's API, served with the other clusters' on one loopback HTTPS port
// at /clusters/<id>; instances running `kubeadm join` become its nodes when their discovery data is
// right. Every cluster lives in one store (a SQLite file beside the cloud's), so a restart keeps them.
//
//   const cloud = new SimCloud({ profile: "fast", state: "/tmp/sim.db" });
//   const workloads = await startWorkloadEmulation(cloud, { port: 0 });
//   // load balancers now publish https://127.0.0.1:<port>/clusters/<lb id>
import pino, { type Logger } from "pino";
import type { SimCloud } from "../cloud.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import type { Store } from "../../store/store.ts";
import { WorkloadEmulator } from "./emulator.ts";
import { workloadRegistry } from "./kinds.ts";
import { WorkloadApiServer } from "./server.ts";

export { WorkloadEmulator, NODE_GONE_AFTER_MS, NODE_MONITOR_GRACE_MS } from "./emulator.ts";
export { API_CALL_TIMEOUT_MS, DISCOVERY_TIMEOUT_MS } from "./kubeadm-steps.ts";
export { workloadRegistry, workloadKinds, nodeKind, podKind, type NodeObject, type PodObject } from "./kinds.ts";
export type { ClusterRecord, MachineRecord } from "./records.ts";

/** How often the workload store forgets history older than the previous round (real ms). */
const COMPACTION_INTERVAL_MS = 5 * 60_000;

/**
 * Compacts the store every interval to the revision it had one interval earlier: watches lagging less
 * than that keep their history, and superseded versions of objects do not pile up.
 */
function compactPeriodically(store: Store, logger: Logger, intervalMs: number): () => void {
  let previous: number | undefined;
  const timer = setInterval(() => {
    void (async () => {
      const head = await store.revision();
      if (previous !== undefined && previous > (await store.compactedRevision())) await store.compact(previous);
      previous = head;
    })().catch((error: unknown) => logger.warn({ err: error }, "compacting the workload store failed"));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

export interface WorkloadEmulationOptions {
  /** Port on the host (default 0: a free one). */
  port?: number;
  host?: "127.0.0.1";
  /**
   * Where the clusters are kept: a Store (left open on close), a SQLite path, or by default
   * `<cloud state>.workloads.db` beside a cloud state file (in memory when the cloud's state is).
   */
  store?: Store | string;
  logger?: Logger;
  /** Base URLs of the other clouds on the public network (public-join.ts). */
  peers?: readonly string[];
  /** Address ranges outside every sim cloud that its machines reach (outside-join.ts). */
  outside?: readonly string[];
  /** How often the store's history is compacted (default 5 minutes; 0 never). */
  compactionIntervalMs?: number;
}

export interface WorkloadEmulation {
  /** https://127.0.0.1:<port>; a cluster's API is at `${url}/clusters/<id>`. */
  url: string;
  port: number;
  emulator: WorkloadEmulator;
  server: WorkloadApiServer;
  /** Detaches from the cloud, stops serving and closes the store it opened. */
  close(): Promise<void>;
}

/** Where the port the workload clusters were served on is kept, in the emulation's store. */
const PORT_KEY = "/emulation/port";

function defaultStorePath(cloud: SimCloud): string {
  return cloud.statePath === ":memory:" ? ":memory:" : `${cloud.statePath}.workloads.db`;
}

export async function startWorkloadEmulation(cloud: SimCloud, options: WorkloadEmulationOptions = {}): Promise<WorkloadEmulation> {
  const logger = options.logger ?? pino({ level: "silent" });
  const host = options.host ?? "127.0.0.1";
  const ownsStore = typeof options.store !== "object";
  const store: Store = typeof options.store === "object" ? options.store : SqliteStore.open(options.store ?? defaultStorePath(cloud));
  const registry = workloadRegistry();
  const emulator = new WorkloadEmulator({ cloud, store, registry, logger: logger.child({ component: "workload-emulator" }), ...(options.peers ? { peers: options.peers } : {}), ...(options.outside ? { outside: options.outside } : {}) });
  // With no port asked for, the port of the previous run on this store: the clusters' endpoints (and the
  // kubeconfigs handed out for them) stay where they were across a restart.
  const remembered = options.port ? undefined : await store.get(PORT_KEY);
  const serverOn = (port: number) => new WorkloadApiServer({ emulator, registry, logger: logger.child({ component: "workload-api" }), host, port });
  let server = serverOn(options.port ?? (remembered ? Number(remembered.value) : 0));
  try {
    try {
      await server.listen();
    } catch (error) {
      if (!remembered || (error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
      logger.warn({ port: Number(remembered.value) }, "the workload clusters' previous port is taken: their endpoints move to a new one");
      await server.close();
      server = serverOn(0);
      await server.listen();
    }
    if (remembered) {
      if (Number(remembered.value) !== server.port) await store.update(PORT_KEY, String(server.port), remembered.modRevision);
    } else {
      await store.create(PORT_KEY, String(server.port)).catch(() => undefined);
    }
    await emulator.start((lb) => ({ host, port: server.port, path: `/clusters/${lb.id}` }));
  } catch (error) {
    await emulator.close();
    await server.close();
    if (ownsStore) await store.close();
    throw error;
  }
  const interval = options.compactionIntervalMs ?? COMPACTION_INTERVAL_MS;
  const stopCompaction = interval > 0 ? compactPeriodically(store, logger, interval) : () => {};
  const url = `https://${host}:${server.port}`;
  logger.info({ url, clusters: emulator.records.clusterCount }, "workload clusters served");
  let closing: Promise<void> | undefined;
  return {
    url,
    port: server.port,
    emulator,
    server,
    close() {
      closing ??= (async () => {
        stopCompaction();
        await emulator.close();
        await server.close();
        if (ownsStore) await store.close();
      })();
      return closing;
    },
  };
}
