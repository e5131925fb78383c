// `slipway up`: runs the control plane until SIGTERM or SIGINT.
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { startControlPlane } from "../controlplane/controlplane.ts";
import type { StoreKind } from "../controlplane/stores.ts";
import { createLogger } from "./logging.ts";
import { parseDuration, parsePort, UsageError } from "./usage.ts";

export interface UpFlags {
  dataDir: string;
  port: string;
  host: string;
  store: string;
  etcdEndpoints?: string;
  logFile?: string;
  logLevel: string;
  compactionInterval: string;
  replicaName?: string;
  shardLeaseTtl: string;
  shutdownGrace: string;
}

export function defaultDataDir(): string {
  return process.env.SLIPWAY_DATA_DIR ?? join(homedir(), ".slipway");
}

export function registerUpCommand(program: Command): void {
  program
    .command("up")
    .description("run the control plane (API server, controllers) on this machine")
    .option("--data-dir <dir>", "where state, credentials and the admin kubeconfig live", defaultDataDir())
    .option("--port <port>", "port to serve the API on (127.0.0.1)", "6443")
    .option("--host <address>", "address to listen on", "127.0.0.1")
    .option("--store <kind>", "sqlite (embedded) or etcd", "sqlite")
    .option("--etcd-endpoints <urls>", "comma-separated etcd client URLs (with --store etcd)")
    .option("--log-file <path>", "log file, or - for stderr (default: <data-dir>/slipway.log)")
    .option("--log-level <level>", "debug, info, warn or error", "info")
    .option("--compaction-interval <duration>", "how often store history is compacted (5 intervals are kept)", "60s")
    .option("--replica-name <name>", "this replica's name among those sharing an etcd store (default: host:port)")
    .option("--shard-lease-ttl <duration>", "TTL of the lease through which a replica holds its shards of the work (etcd)", "5s")
    .option("--shutdown-grace <duration>", "how long reconciles in flight may finish on shutdown", "10s")
    .action(async (flags: UpFlags) => {
      await runUp(flags);
    });
}

export async function runUp(flags: UpFlags): Promise<void> {
  if (flags.store !== "sqlite" && flags.store !== "etcd") throw new UsageError(`--store must be sqlite or etcd (got "${flags.store}")`);
  const endpoints = flags.etcdEndpoints?.split(",").map((e) => e.trim()).filter(Boolean);
  if (flags.store === "etcd" && !endpoints?.length) throw new UsageError("--store etcd needs --etcd-endpoints");
  const leaseTtlMs = parseDuration(flags.shardLeaseTtl, "--shard-lease-ttl");
  if (leaseTtlMs < 2000 || leaseTtlMs % 1000 !== 0) throw new UsageError(`--shard-lease-ttl must be whole seconds, at least 2s (got "${flags.shardLeaseTtl}")`);
  if (flags.replicaName !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._:-]*$/.test(flags.replicaName)) {
    throw new UsageError(`--replica-name may hold letters, digits, '.', '_', ':' and '-' (got "${flags.replicaName}")`);
  }
  const dataDir = resolve(flags.dataDir);
  const logger = createLogger({ file: flags.logFile ?? join(dataDir, "slipway.log"), level: flags.logLevel });
  const plane = await startControlPlane({
    dataDir,
    port: parsePort(flags.port, "--port"),
    host: flags.host,
    store: flags.store as StoreKind,
    etcdEndpoints: endpoints,
    logger,
    compactionIntervalMs: parseDuration(flags.compactionInterval, "--compaction-interval"),
    replicaName: flags.replicaName,
    shardLeaseTtlSeconds: leaseTtlMs / 1000,
    shutdownGraceMs: parseDuration(flags.shutdownGrace, "--shutdown-grace"),
  });
  process.stdout.write(
    [
      `slipway: API server on ${plane.url} (store: ${flags.store}, replica: ${plane.replicaName})`,
      `slipway: admin kubeconfig: ${plane.kubeconfigPath}`,
      `slipway: ready`,
      ``,
      `Try:`,
      `  export KUBECONFIG=${plane.kubeconfigPath}`,
      `  kubectl get namespaces`,
      `  kubectl api-resources --api-group=slipway.dev`,
      `  kubectl explain cluster.spec`,
      ``,
    ].join("\n"),
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    await plane.close();
    logger.flush();
    process.stdout.write(`slipway: stopped (${signal})\n`);
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}
