// `slipway up`: runs the control plane until SIGTERM or SIGINT.
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { startControlPlane } from "../controlplane/controlplane.ts";
import type { StoreKind } from "../controlplane/stores.ts";
import { createLogger } from "../controlplane/logger.ts";
import { parseCount, parseDuration, parseLogLevel, parsePort, UsageError } from "./usage.ts";
import { isProfileName } from "../simcloud/profiles.ts";
import { defaultKubeconfigPath } from "./connect.ts";

/** What a newcomer can do next; every line works as printed from the project's folder. */
export function nextSteps(kubeconfig: string, simUrl: string | undefined): string[] {
  const kc = kubeconfig === defaultKubeconfigPath() ? "" : ` --kubeconfig ${kubeconfig}`;
  return [
    `Next:`,
    `  npx slipway${kc} apply -f examples/quickstart.yaml --wait   # a 3+4 machine cluster across two regions`,
    `  npx slipway${kc} get clusters`,
    `  npx slipway${kc} describe cluster quickstart`,
    `  npx slipway${kc} kubeconfig quickstart > quickstart.kubeconfig && kubectl --kubeconfig quickstart.kubeconfig get nodes`,
    `  KUBECONFIG=${kubeconfig} kubectl get clusters,machinepools,machines`,
    `  npx slipway${kc} console   # a new one-time sign-in link for the web console`,
    ...(simUrl ? [`  npx slipway sim-cloud resources --endpoint ${simUrl}`] : []),
  ];
}

export interface UpFlags {
  dataDir: string;
  port: string;
  host: string;
  store: string;
  etcdEndpoints?: string;
  logFile?: string;
  logLevel: string;
  compactionInterval: string;
  eventTtl: string;
  leaseWarning: string;
  replicaName?: string;
  shardLeaseTtl: string;
  shutdownGrace: string;
  simEndpoint?: string;
  simProfile: string;
  simPort: string;
  simWorkloadPort: string;
  simState?: string;
  simSeed?: string;
  simTimeScale?: string;
  simToken?: string;
  pollInterval: string;
  resyncInterval: string;
  syncPeriod: string;
  orphanSweepInterval: string;
  orphanGrace: string;
  orphanDryRun?: boolean;
  auditLog?: string;
  maxConnections: string;
  requestHeaderTimeout: string;
  controllersInWorker?: boolean;
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
    .option("--audit-log <file>", "where each request is recorded (audit.k8s.io/v1 events, one JSON line each; default DIR/audit.log)")
    .option("--log-level <level>", "debug, info, warn or error", "info")
    .option("--compaction-interval <duration>", "how often store history is compacted (5 intervals are kept)", "60s")
    .option("--event-ttl <duration>", "how long an Event is kept after its last update", "1h")
    .option("--replica-name <name>", "this replica's name among those sharing an etcd store (default: host:port)")
    .option("--shard-lease-ttl <duration>", "TTL of the lease through which a replica holds its shards of the work (etcd)", "5s")
    .option("--shutdown-grace <duration>", "how long reconciles in flight may finish on shutdown", "10s")
    .option("--sim-endpoint <url>", "use the sim cloud at this URL instead of embedding one")
    .option("--sim-profile <name>", "latency profile of the embedded sim cloud: instant, fast, demo or realistic", "demo")
    .option("--sim-port <port>", "port of the embedded sim cloud's API (0: a free one)", "7480")
    .option("--sim-workload-port <port>", "port of the embedded sim cloud's workload clusters (0: a free one)", "0")
    .option("--sim-state <file>", "state file of the embedded sim cloud (default: <data-dir>/simcloud.db)")
    .option("--sim-seed <n>", "seed of the embedded sim cloud (ids, jitter, faults)")
    .option("--sim-time-scale <x>", "multiplies every delay of the embedded sim cloud (0.1 is ten times faster)")
    .option("--sim-token <token>", "the sim cloud account's token (default: the sim's default account)")
    .option("--poll-interval <duration>", "how often controllers look again at slow cloud work (a cluster that failed validation is checked again after 30 of these)", "1s")
    .option("--lease-warning <duration>", "how long before a Lease ends a LeaseEndingSoon Warning Event is recorded", "5m")
    .option("--resync-interval <duration>", "how often resources delivered to clusters (ResourceSyncs) are checked for drift, and registered clusters are asked", "30s")
    .option("--sync-period <duration>", "how often every controller looks again at each object it holds: the safety net for what nothing could tell it (a Secret deleted by hand, a cloud resource lost; longer for a kind of more than two objects a second of it; 0s: never)", "10m")
    .option("--orphan-sweep-interval <duration>", "how often each connection's cloud is searched for resources whose owner is gone", "5m")
    .option("--orphan-grace <duration>", "how long a cloud resource must stay without its owner before it is deleted", "10m")
    .option("--orphan-dry-run", "report orphaned cloud resources (Events, metric) without deleting them")
    .option("--max-connections <n>", "connections the API server serves at once; one more is closed as it opens", "1024")
    .option("--request-header-timeout <duration>", "how long a client may take to finish its TLS handshake, and then to send a request's headers", "10s")
    .option("--controllers-in-worker", "run the controllers on a worker thread, so that API requests do not wait behind reconciles")
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
  if (!isProfileName(flags.simProfile)) throw new UsageError(`--sim-profile must be one of instant, fast, demo, realistic (got "${flags.simProfile}")`);
  const number = (text: string | undefined, flag: string) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} must be a positive number (got "${text}")`);
    return n;
  };
  const sim = {
    endpoint: flags.simEndpoint,
    token: flags.simToken,
    profile: flags.simProfile,
    port: parsePort(flags.simPort, "--sim-port"),
    workloadPort: parsePort(flags.simWorkloadPort, "--sim-workload-port"),
    state: flags.simState,
    seed: number(flags.simSeed, "--sim-seed"),
    timeScale: number(flags.simTimeScale, "--sim-time-scale"),
  };
  // Every flag is checked before anything is written (the data directory, its log).
  const durations = {
    compactionIntervalMs: parseDuration(flags.compactionInterval, "--compaction-interval"),
    eventTtlMs: parseDuration(flags.eventTtl, "--event-ttl"),
    shutdownGraceMs: parseDuration(flags.shutdownGrace, "--shutdown-grace"),
    pollMs: parseDuration(flags.pollInterval, "--poll-interval"),
    leaseWarningMs: parseDuration(flags.leaseWarning, "--lease-warning"),
    resyncMs: parseDuration(flags.resyncInterval, "--resync-interval"),
    syncPeriodMs: parseDuration(flags.syncPeriod, "--sync-period"),
    orphanSweepMs: parseDuration(flags.orphanSweepInterval, "--orphan-sweep-interval"),
    orphanGraceMs: parseDuration(flags.orphanGrace, "--orphan-grace"),
    requestHeaderTimeoutMs: parseDuration(flags.requestHeaderTimeout, "--request-header-timeout"),
  };
  const maxConnections = parseCount(flags.maxConnections, "--max-connections");
  const port = parsePort(flags.port, "--port");
  const logLevel = parseLogLevel(flags.logLevel, "--log-level");
  const dataDir = resolve(flags.dataDir);
  // Everything this process writes — the store, logs, the embedded sim cloud's state, kubeconfigs — is
  // its user's alone.
  process.umask(0o077);
  const logger = createLogger({ file: flags.logFile ?? join(dataDir, "slipway.log"), level: logLevel });
  // A fault nothing caught ends the process as before, but is written to the log first (and to stderr),
  // so that what stopped it is on record.
  const fatal = (what: string) => (error: unknown) => {
    process.stderr.write(`slipway: ${what}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    logger.fatal({ err: error }, what);
    logger.flush(() => process.exit(1));
    setTimeout(() => process.exit(1), 2_000);
  };
  process.on("uncaughtException", fatal("uncaught exception"));
  process.on("unhandledRejection", fatal("unhandled promise rejection"));
  const plane = await startControlPlane({
    dataDir,
    port,
    host: flags.host,
    store: flags.store as StoreKind,
    etcdEndpoints: endpoints,
    logger,
    compactionIntervalMs: durations.compactionIntervalMs,
    eventTtlMs: durations.eventTtlMs,
    replicaName: flags.replicaName,
    shardLeaseTtlSeconds: leaseTtlMs / 1000,
    shutdownGraceMs: durations.shutdownGraceMs,
    sim,
    pollMs: durations.pollMs,
    leaseWarningMs: durations.leaseWarningMs,
    resyncMs: durations.resyncMs,
    syncPeriodMs: durations.syncPeriodMs,
    sweeper: {
      intervalMs: durations.orphanSweepMs,
      graceMs: durations.orphanGraceMs,
      dryRun: flags.orphanDryRun === true,
    },
    auditLog: resolve(flags.auditLog ?? join(dataDir, "audit.log")),
    maxConnections,
    requestHeaderTimeoutMs: durations.requestHeaderTimeoutMs,
    controllersInWorker: flags.controllersInWorker === true,
    onControllersFailed: fatal("the controllers' thread failed"),
  });
  process.stdout.write(
    [
      `slipway: API server on ${plane.url} (store: ${flags.store}, replica: ${plane.replicaName})`,
      plane.sim.url
        ? `slipway: embedded sim cloud on ${plane.sim.url} (profile ${flags.simProfile}; workload clusters on ${plane.sim.workloadUrl})`
        : `slipway: sim cloud at ${flags.simEndpoint}`,
      `slipway: admin kubeconfig: ${plane.kubeconfigPath}`,
      `slipway: console: ${plane.consoleUrl}`,
      `slipway: console sign-in (one-time link, valid 10 minutes; \`slipway console\` prints a new one): ${plane.adminLoginLink()}`,
      `slipway: ready`,
      ``,
      ...nextSteps(plane.kubeconfigPath, plane.sim.url),
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
