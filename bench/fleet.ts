// The fleet benchmark: how many clusters one `slipway up` carries, and how fast it brings them up and
// takes them down. A sim cloud (its own process, `instant` profile, quotas and capacity raised) and
// `slipway up` against it (SQLite, or a 3-member etcd cluster); N clusters — one control-plane machine
// and a pool of 3 workers each (--workers N; on a scale set with --scale-sets), spread over three
// regions — are submitted through the HTTPS API at a steady rate, and the run is measured until every
// cluster is Running; then every cluster is deleted and the run is measured until the sim cloud holds
// no resource.
//
//   npm run bench:fleet -- --clusters 1000 [--store sqlite|etcd] [--rate 50] [--poll-interval 1s]
//                          [--connections 8] [--timeout 30] [--delete-timeout 20]
//                          [--cpu-prof DIR [--cpu-prof-sim]] [--keep-store FILE] [--idle 60] [--idle-settle 10] [--chart FILE]
//                          [--workers 3] [--scale-sets] [--controllers-in-worker] [--sync-period 10m]
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { ChildProcess } from "node:child_process";
import { parseKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import { startEtcd, type EtcdCluster } from "../test/support/etcd.ts";
import { SIM_TOKEN, startSimCloud } from "../test/support/simcloud.ts";
import { startSlipway } from "../test/support/slipway.ts";
import { BenchClient, getWithAccept, TABLE_ACCEPT, UnexpectedStatusError, type Endpoint } from "./support/client.ts";
import { processCpuMs } from "./support/cpu.ts";
import { percentile } from "./support/load.ts";
import { formatBytes, MemorySampler } from "./support/memory.ts";
import { PhaseWatch } from "./support/phase-watch.ts";
import { onTeardown, removeOnTeardown, runBenchmark } from "./support/processes.ts";
import { bucketDelta, histogramBuckets, histogramQuantile, parseMetrics, sumBy, sumOf, type Sample } from "./support/prometheus.ts";
import { idleRows, measureIdleFleet, RunningTimeline, writeRunningChart, type IdleFigures } from "./support/fleet-idle.ts";
import { fleetStages, stageRows } from "./support/fleet-stages.ts";
import { readStoreCopy, writesByResource, writesRows } from "./support/store-writes.ts";
import { describeMachine, fixed, formatMachine, formatTable } from "./support/report.ts";

const GROUP = "/apis/slipway.dev/v1alpha1/namespaces/default";
const CLUSTERS = `${GROUP}/clusters`;
const CONNECTIONS = `${GROUP}/connections`;
const REGIONS = [
  { connection: "fleet-east", region: "sim-east-1" },
  { connection: "fleet-west", region: "sim-west-1" },
  { connection: "fleet-central", region: "sim-central-1" },
];
const CONTROL_PLANE_TYPE = "s1.medium";
const WORKER_TYPE = "s1.small";
const PLENTY = 1_000_000;
/** How often monitorEventLoopDelay checks the loop, here and in prom-client's default metrics. */
const LOOP_CHECK_MS = 10;

/** What the issue asks of 10,000 clusters on one 2-core machine. */
const TARGETS = { runningWithinMs: 10 * 60_000, controlPlaneBytes: 4 * 2 ** 30, apiP99Ms: 100, idleShareOfCore: 0.05 };

interface Plan {
  clusters: number;
  store: "sqlite" | "etcd";
  /** Clusters submitted per second. */
  rate: number;
  pollInterval: string;
  /** HTTPS connections the submissions share. */
  connections: number;
  runningTimeoutMs: number;
  deleteTimeoutMs: number;
  /** Writes CPU profiles of `slipway up` (and of the sim cloud with --cpu-prof-sim) into this directory. */
  cpuProfDir?: string;
  cpuProfSim: boolean;
  /** Copies the SQLite store here (before the deletion) for inspection. */
  keepStore?: string;
  /** Seconds of the idle fleet (all Running, nothing changing) to measure; 0 skips it. */
  idleSeconds: number;
  /** How long after the last cluster turned Running the idle window starts (what was queued finishes). */
  idleSettleSeconds: number;
  /** Where the SVG chart of clusters Running over time goes. */
  chart: string;
  /** The worker pools are backed by the cloud's scale sets (spec.workers[].scaleSet). */
  scaleSets: boolean;
  /** Machines of each cluster's worker pool. */
  workers: number;
  /** `slipway up --controllers-in-worker`: the controllers on a worker thread. */
  controllersInWorker: boolean;
  /** `slipway up --sync-period` (its default when not given). */
  syncPeriod?: string;
}

function readPlan(argv: string[]): Plan {
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const number = (name: string, fallback: number): number => {
    const text = value(name);
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number (got "${text}")`);
    return n;
  };
  const store = value("store") ?? "sqlite";
  if (store !== "sqlite" && store !== "etcd") throw new Error(`--store must be sqlite or etcd (got "${store}")`);
  return {
    clusters: Math.trunc(number("clusters", 100)),
    store,
    rate: number("rate", 50),
    pollInterval: value("poll-interval") ?? "1s",
    connections: Math.trunc(number("connections", 8)),
    runningTimeoutMs: number("timeout", 30) * 60_000,
    deleteTimeoutMs: number("delete-timeout", 20) * 60_000,
    cpuProfDir: value("cpu-prof"),
    cpuProfSim: argv.includes("--cpu-prof-sim"),
    keepStore: value("keep-store"),
    idleSeconds: value("idle") === "0" ? 0 : number("idle", 60),
    idleSettleSeconds: number("idle-settle", 10),
    chart: value("chart") ?? join(tmpdir(), `slipway-fleet-${Math.trunc(number("clusters", 100))}-running.svg`),
    scaleSets: argv.includes("--scale-sets"),
    workers: Math.trunc(number("workers", 3)),
    controllersInWorker: argv.includes("--controllers-in-worker"),
    syncPeriod: value("sync-period"),
  };
}

/** Requests the etcd members answered, by gRPC method, summed over the members (each member's `/metrics`). */
async function etcdRequests(cluster: EtcdCluster): Promise<Map<string, number>> {
  const totals = new Map<string, number>();
  for (const member of cluster.members) {
    const samples = parseMetrics(await (await fetch(`${member.clientUrl}/metrics`)).text()).filter((s) => s.labels.grpc_type === "unary");
    for (const [method, count] of sumBy(samples, "grpc_server_handled_total", "grpc_method")) totals.set(method, (totals.get(method) ?? 0) + count);
  }
  return totals;
}

/** The store's round trips to etcd while provisioning: reads (Range) and writes (Txn), per store write. */
function etcdRequestRow(before: Map<string, number>, after: Map<string, number>, writes: number): string[] {
  const delta = (method: string) => (after.get(method) ?? 0) - (before.get(method) ?? 0);
  const all = [...after.keys()].reduce((sum, method) => sum + delta(method), 0);
  const [range, txn] = [delta("Range"), delta("Txn")];
  return ["etcd requests until all Running", `${all}: Range ${range}, Txn ${txn}, other ${all - range - txn} (${fixed(all / writes, 2)} per write)`, "", ""];
}

const nameOf = (index: number) => `fleet-${String(index).padStart(5, "0")}`;

function cluster(index: number, plan: Plan): unknown {
  const connection = REGIONS[index % REGIONS.length]!.connection;
  const pool = { name: "pool", connection, machineType: WORKER_TYPE, replicas: plan.workers };
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: nameOf(index) },
    spec: {
      kubernetesVersion: "v1.31.2",
      controlPlane: { connection, machineType: CONTROL_PLANE_TYPE, replicas: 1 },
      workers: [plan.scaleSets ? { ...pool, scaleSet: { minSize: 0, maxSize: 2 * plan.workers } } : pool],
    },
  };
}

function progress(message: string): void {
  process.stderr.write(`bench:fleet: ${message}\n`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Bytes of the files under `path` (recursively). */
function sizeOf(path: string): number {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + sizeOf(join(path, entry)), 0);
}

function seconds(ms: number): string {
  return `${fixed(ms / 1000, 1)} s`;
}

/** Sends `count` requests at `rate` per second, at most `inFlight` at once; latencies in ms. */
async function paced(count: number, rate: number, inFlight: number, send: (index: number) => Promise<void>): Promise<{ latencies: number[]; elapsedMs: number; failures: number }> {
  const latencies: number[] = [];
  let failures = 0;
  let running = 0;
  let slotFreed: () => void = () => {};
  const start = performance.now();
  const all: Promise<void>[] = [];
  for (let index = 0; index < count; index++) {
    const due = start + (index * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    while (running >= inFlight) await new Promise<void>((resolve) => (slotFreed = resolve));
    running++;
    const sent = performance.now();
    all.push(
      send(index)
        .then(
          () => void latencies.push(performance.now() - sent),
          (error: unknown) => {
            failures++;
            progress(`request ${index} failed: ${(error as Error).message}`);
          },
        )
        .finally(() => {
          running--;
          slotFreed();
        }),
    );
  }
  await Promise.all(all);
  return { latencies: latencies.sort((a, b) => a - b), elapsedMs: performance.now() - start, failures };
}

/** How late the loop came back, ms, from a monitorEventLoopDelay figure (ns between its 10 ms checks). */
function loopDelayMs(intervalNs: number): number {
  return Math.max(0, intervalNs / 1e6 - LOOP_CHECK_MS);
}

/** The server's event-loop delay over the scrape windows: the median and worst window's p99, and the largest delay. */
function loopDelayFigures(windows: readonly { p99Ms: number; maxMs: number }[]): string {
  if (windows.length === 0) return "no window";
  const p99s = windows.map((w) => w.p99Ms).sort((a, b) => a - b);
  const max = Math.max(...windows.map((w) => w.maxMs));
  return `${fixed(percentile(p99s, 0.5), 1)} / ${fixed(p99s.at(-1)!, 1)} ms, ${fixed(max, 1)} ms (${windows.length} windows)`;
}

/** Retries what failed for a reason a retry may cure (timeouts, refused connections, 429, 5xx). */
async function withRetries(send: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      const retryable = !(error instanceof UnexpectedStatusError) || error.status === 429 || error.status >= 500;
      if (!retryable || attempt >= 5) throw error;
      await sleep(500 * attempt);
    }
  }
}

/** GETs one object every `intervalMs` and keeps each latency (client side, whole response read). */
class Probe {
  readonly latencies: number[] = [];
  private timer?: NodeJS.Timeout;
  private inFlight = 0;
  errors = 0;

  constructor(
    private readonly client: BenchClient,
    private readonly path: string,
  ) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      if (this.inFlight >= 10) return;
      this.inFlight++;
      const sent = performance.now();
      this.client.send("GET", this.path).then(
        () => void this.latencies.push(performance.now() - sent),
        (error: unknown) => {
          this.errors++;
          // What failed is worth a line: a GET that fails is what a user would notice first.
          if (this.errors <= 5) progress(`probe GET failed after ${(performance.now() - sent).toFixed(0)} ms: ${(error as Error).message}`);
        },
      ).finally(() => this.inFlight--);
    }, intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

interface ProcessGroup {
  name: string;
  pids: number[];
  /** One Node process, whose main thread's share is told apart in the idle window. */
  node?: boolean;
}

function cpuMsOf(group: ProcessGroup): number {
  return group.pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
}

/** The environment that makes a child Node process write a CPU profile to `file` when it exits. */
function profiled(file: string): Record<string, string> {
  const preload = join(import.meta.dirname, "support/cpu-profile.mjs");
  return { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${preload}`.trim(), BENCH_CPU_PROFILE: file };
}

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

/** Stops a child with SIGTERM, waiting long enough for it to write a CPU profile; SIGKILL after that. */
async function stopGracefully(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * Resources the sim cloud still holds (terminated instances and vanished load balancers not counted, nor
 * the regions' DNS zones, which every cluster of a region shares and none deletes).
 */
async function liveCloudResources(sim: Awaited<ReturnType<typeof startSimCloud>>): Promise<number> {
  const resources = await sim.api.listResources();
  return resources.filter((r) => r.kind !== "dnsZone" && !["terminated", "gone", "deleted"].includes(r.state)).length;
}

// ---- large lists (separate from the provisioning figures above) ----

const LIST_ROUNDS = 10;
/** What the issue asks of a list of 10,000 objects. */
const LIST_TARGET_MS = 250;

/**
 * Lists every cluster and every machine of the fleet, as JSON (a client's list, an informer's relist)
 * and as a Table (`kubectl get`), one at a time, LIST_ROUNDS times each, client side from sending the
 * request to having read the whole response. Runs once all are Running, while the controllers keep
 * their idle checks going.
 */
async function measureLists(client: BenchClient, clusters: number, workers: number): Promise<string[][]> {
  const rows: string[][] = [["list", "objects", "size", "p50 ms", "p99 ms", "max ms", "target"]];
  const collections = [
    { name: "clusters", path: CLUSTERS, objects: clusters },
    { name: "machines", path: `${GROUP}/machines`, objects: clusters * (1 + workers) },
  ];
  for (const { name, path, objects } of collections) {
    const first = await client.json<{ items: unknown[] }>("GET", path);
    if (first.items.length !== objects) progress(`the list of ${name} held ${first.items.length} objects, not ${objects}`);
    for (const [format, accept] of [["JSON", "application/json"], ["Table", TABLE_ACCEPT]] as const) {
      const latencies: number[] = [];
      let bytes = 0;
      for (let round = 0; round < LIST_ROUNDS; round++) {
        const sent = performance.now();
        bytes = await getWithAccept(client, path, accept);
        latencies.push(performance.now() - sent);
      }
      latencies.sort((a, b) => a - b);
      const p99 = percentile(latencies, 0.99);
      progress(`list of ${first.items.length} ${name} (${format}): p50 ${fixed(percentile(latencies, 0.5), 1)} ms, p99 ${fixed(p99, 1)} ms`);
      rows.push([`${name} (${format})`, String(first.items.length), formatBytes(bytes), fixed(percentile(latencies, 0.5), 1), fixed(p99, 1), fixed(latencies.at(-1)!, 1), first.items.length >= 10_000 ? `< ${LIST_TARGET_MS} ms: ${p99 < LIST_TARGET_MS ? "met" : "missed"}` : ""]);
    }
  }
  return rows;
}

/** Reconciles by controller and outcome between two scrapes, and the time they took (awaits included). */
function reconcileRows(before: Sample[], after: Sample[], n: number): string[][] {
  const pairs = (samples: Sample[], name: string) => sumBy(samples, name, "controller", "outcome");
  const counts = pairs(after, "slipway_reconcile_duration_seconds_count");
  const countsBefore = pairs(before, "slipway_reconcile_duration_seconds_count");
  const spent = pairs(after, "slipway_reconcile_duration_seconds_sum");
  const spentBefore = pairs(before, "slipway_reconcile_duration_seconds_sum");
  return [...counts.keys()].sort().map((key) => {
    const [controller, outcome] = key.split("\u0000");
    const count = counts.get(key)! - (countsBefore.get(key) ?? 0);
    const seconds = spent.get(key)! - (spentBefore.get(key) ?? 0);
    return [controller!, outcome!, String(count), fixed(count / n, 1), fixed(seconds, 0), count ? fixed((seconds / count) * 1000, 1) : "-"];
  });
}

async function main(): Promise<void> {
  const plan = readPlan(process.argv.slice(2));
  const machine = describeMachine();
  const root = mkdtempSync(join(tmpdir(), "slipway-fleet-"));
  removeOnTeardown(root);
  const n = plan.clusters;
  progress(`${n} clusters (${n * (1 + plan.workers)} machines), store ${plan.store}, ${plan.rate}/s, poll interval ${plan.pollInterval}`);

  // The sim cloud, with room for the whole fleet in every region.
  if (plan.cpuProfDir) mkdirSync(plan.cpuProfDir, { recursive: true });
  const savedNodeOptions = process.env.NODE_OPTIONS;
  const savedTarget = process.env.BENCH_CPU_PROFILE;
  if (plan.cpuProfDir && plan.cpuProfSim) Object.assign(process.env, profiled(join(plan.cpuProfDir, "sim-cloud.cpuprofile")));
  // Its log is kept with the store (--keep-store): then at info, which says when each workload cluster was initialised.
  const sim = await startSimCloud({ profile: "instant", seed: 1, state: join(root, "sim.db"), ...(plan.keepStore ? { args: ["--log-level", "info"], logFile: `${plan.keepStore}.sim.log` } : {}) });
  restoreEnv("NODE_OPTIONS", savedNodeOptions);
  restoreEnv("BENCH_CPU_PROFILE", savedTarget);
  onTeardown(() => stopGracefully(sim.process, 30_000));
  for (const { region } of REGIONS) {
    await sim.admin.setQuota("default", region, { vcpus: PLENTY, instances: PLENTY, networks: PLENTY, loadBalancers: PLENTY, publicIps: PLENTY });
    for (const zone of await sim.api.describeZones(region)) {
      for (const type of [CONTROL_PLANE_TYPE, WORKER_TYPE]) await sim.admin.setCapacity(region, zone.name, type, PLENTY);
    }
  }

  let etcd: EtcdCluster | undefined;
  const storeArgs: string[] = [];
  if (plan.store === "etcd") {
    progress("starting a 3-member etcd cluster");
    etcd = await startEtcd({ members: 3 });
    const started = etcd;
    onTeardown(() => started.stop());
    storeArgs.push("--store", "etcd", "--etcd-endpoints", etcd.endpoints.join(","));
  }

  progress("starting slipway up");
  const slipwayStartedAt = performance.now();
  const dataDir = join(root, "slipway");
  const slipway = await startSlipway({
    dataDir,
    timeoutMs: 60_000,
    args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", plan.pollInterval, ...storeArgs, ...(plan.cpuProfDir ? ["--shutdown-grace", "1s"] : []), ...(plan.controllersInWorker ? ["--controllers-in-worker"] : []), ...(plan.syncPeriod ? ["--sync-period", plan.syncPeriod] : [])],
    env: {
      SLIPWAY_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      ...(plan.cpuProfDir ? profiled(join(plan.cpuProfDir, "slipway-up.cpuprofile")) : {}),
    },
  });
  onTeardown(() => stopGracefully(slipway.process, plan.cpuProfDir ? 120_000 : 10_000));
  // slipway up ending with a failure, not by the teardown's SIGTERM, is said at once with its last output.
  slipway.process.once("exit", (code) => {
    if (code !== 0 && code !== null) progress(`slipway up exited with ${code}; its last output:\n${slipway.output().slice(-4000)}`);
  });

  const kubeconfig = parseKubeconfig(readFileSync(slipway.kubeconfig, "utf8"));
  const endpoint: Endpoint = { server: kubeconfig.server, caCertPem: kubeconfig.caCertPem, token: kubeconfig.token };
  const api = new BenchClient(endpoint, plan.connections);
  const watchClient = new BenchClient(endpoint, 2);
  const probeClient = new BenchClient(endpoint, 4);
  onTeardown(() => [api, watchClient, probeClient].forEach((client) => client.close()));

  for (const { connection, region } of REGIONS) {
    await api.send("POST", CONNECTIONS, { body: { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: connection }, spec: { provider: "sim", region } }, expect: [201] });
  }

  const groups: ProcessGroup[] = [
    { name: "slipway up", pids: [slipway.process.pid!], node: true },
    { name: "sim cloud", pids: [sim.process.pid!], node: true },
    ...(etcd ? [{ name: "etcd (3 members)", pids: etcd.members.map((m) => m.pid) }] : []),
  ];
  const memory = new MemorySampler();
  for (const group of groups) memory.track(group.name, group.pids);
  memory.start();
  onTeardown(() => memory.stop());

  const tracker = new PhaseWatch(watchClient, CLUSTERS);
  await tracker.start();
  onTeardown(() => tracker.close());

  // Retried: a scrape 10 s after the last may meet a kept-alive connection the server is closing.
  const scrape = async (): Promise<Sample[]> => {
    let text = "";
    await withRetries(async () => {
      text = (await api.send("GET", "/metrics")).body.toString("utf8");
    });
    return parseMetrics(text);
  };
  const reconciles = (samples: Sample[]) => sumOf(samples, "slipway_reconcile_duration_seconds_count");
  /** The store's revision: it rises by one with every write. */
  const storeRevision = async () => Number((await api.json<{ metadata: { resourceVersion: string } }>("GET", `${CONNECTIONS}?limit=1`)).metadata.resourceVersion);
  const metricsBefore = await scrape();
  const etcdBefore = etcd ? await etcdRequests(etcd) : undefined;
  const cpuBefore = groups.map(cpuMsOf);
  const revisionBefore = await storeRevision();

  // Progress every 10 s: what is Running, what the controllers do, what memory holds.
  const started = performance.now();
  const history: { at: number; running: number }[] = [];
  let submitted = 0;
  let lastReconciles = reconciles(metricsBefore);
  let lastPaced = sumOf(metricsBefore, "slipway_controller_paced_seconds_total");
  let lastTick = started;
  // The server's event-loop delay, per scrape window (prom-client's histogram restarts at each scrape),
  // while clusters are provisioned; and this process's own, which a probe's latency also holds.
  const serverLoop: { p99Ms: number; maxMs: number }[] = [];
  let provisioning = true;
  const benchLoop = monitorEventLoopDelay({ resolution: LOOP_CHECK_MS });
  benchLoop.enable();
  const ticker = setInterval(() => {
    void scrape().then(
      (samples) => {
        const now = performance.now();
        if (provisioning) serverLoop.push({ p99Ms: loopDelayMs(sumOf(samples, "nodejs_eventloop_lag_p99_seconds") * 1e9), maxMs: loopDelayMs(sumOf(samples, "nodejs_eventloop_lag_max_seconds") * 1e9) });
        const total = reconciles(samples);
        const rate = (total - lastReconciles) / ((now - lastTick) / 1000);
        const pacedTotal = sumOf(samples, "slipway_controller_paced_seconds_total");
        // Workers held back by the loop pacer (runtime/pacer.ts), on average over the 10 s.
        const held = (pacedTotal - lastPaced) / ((now - lastTick) / 1000);
        lastPaced = pacedTotal;
        lastReconciles = total;
        lastTick = now;
        history.push({ at: now, running: tracker.count("Running") });
        const phases = Object.entries(tracker.byPhase()).map(([p, c]) => `${p} ${c}`).join(", ");
        const rss = groups.map((g) => `${g.name} ${formatBytes(memory.current(g.name))}`).join(", ");
        const heap = formatBytes(sumOf(samples, "nodejs_heap_size_used_bytes"));
        progress(`[${fixed((now - started) / 1000, 0)} s] submitted ${submitted}/${n}; ${phases || "no clusters"}; ${fixed(rate, 0)} reconciles/s (${fixed(held, 1)} workers held by the pacer); ${rss} (heap ${heap})`);
      },
      (error: unknown) => progress(`metrics scrape failed: ${(error as Error).message}`),
    );
  }, 10_000);
  onTeardown(() => clearInterval(ticker));

  // Submit at a steady rate; probe one cluster every 100 ms meanwhile.
  const timeline = new RunningTimeline();
  timeline.start(() => tracker.count("Running"));
  onTeardown(() => timeline.stop());
  const probe = new Probe(probeClient, `${CLUSTERS}/${nameOf(0)}`);
  onTeardown(() => probe.stop());
  progress(`submitting ${n} clusters at ${plan.rate}/s`);
  const submission = paced(n, plan.rate, plan.connections * 4, async (index) => {
    await withRetries(async () => {
      try {
        await api.send("POST", CLUSTERS, { body: cluster(index, plan), expect: [201] });
      } catch (error) {
        // A retried create whose first attempt got through.
        if (!(error instanceof UnexpectedStatusError && error.status === 409)) throw error;
      }
    });
    submitted++;
    if (index === 0) probe.start(100);
  });
  const allRunning = tracker.until(() => tracker.count("Running") >= n);
  const timedOut = sleep(plan.runningTimeoutMs).then(() => undefined);
  const creates = await submission;
  const runningAt = await Promise.race([allRunning, timedOut]);
  probe.stop();
  provisioning = false;
  benchLoop.disable();
  const provisionedAt = performance.now();
  const metricsAfter = await scrape();
  const etcdAfter = etcd ? await etcdRequests(etcd) : undefined;
  const cpuAfter = groups.map(cpuMsOf);
  const storeBytes = plan.store === "sqlite" ? readdirSync(dataDir).filter((f) => f.startsWith("state.db")).reduce((sum, f) => sum + sizeOf(join(dataDir, f)), 0) : etcd!.members.reduce((sum, m) => sum + sizeOf(m.dataDir), 0);
  const logBytes = sizeOf(join(dataDir, "slipway.log"));
  const writes = (await storeRevision()) - revisionBefore;
  // One copy of the store, read for both tables (and kept with --keep-store).
  const fromStore = plan.store === "sqlite" ? readStoreCopy(dataDir, (db) => ({ writesBy: writesByResource(db, revisionBefore), stages: fleetStages(db) }), plan.keepStore) : undefined;
  const { writesBy, stages } = fromStore ?? {};
  // Beside the store, the logs of both processes: what each saw, and when (slipway up's until all were
  // Running; the sim cloud's is written there as it comes).
  if (plan.keepStore) copyFileSync(join(dataDir, "slipway.log"), `${plan.keepStore}.slipway.log`);

  // What provisioning showed, already now: the deletion of a large fleet takes a while.
  const probeSoFar = [...probe.latencies].sort((a, b) => a - b);
  progress(
    `provisioning: ${tracker.count("Running")} of ${n} Running after ${seconds((runningAt ?? provisionedAt) - started)}; ` +
      `probe p50/p99 ${fixed(percentile(probeSoFar, 0.5), 1)}/${fixed(percentile(probeSoFar, 0.99), 1)} ms; ` +
      groups.map((g, i) => `${g.name}: peak ${formatBytes(memory.peak(g.name))}, ${fixed((cpuAfter[i]! - cpuBefore[i]!) / 1000, 0)} s CPU`).join("; ") +
      `; ${writes} store writes; ${reconciles(metricsAfter) - reconciles(metricsBefore)} reconciles`,
  );

  timeline.stop();
  writeRunningChart(plan.chart, timeline.points, n, `${n} clusters Running over time (${plan.store === "etcd" ? "etcd" : "SQLite"}, ${machine.date.slice(0, 10)})`);
  progress(`chart of clusters Running over time: ${plan.chart}`);

  let idle: IdleFigures | undefined;
  if (runningAt !== undefined && plan.idleSeconds > 0) {
    progress(`measuring the idle fleet for ${plan.idleSeconds} s, ${plan.idleSettleSeconds} s after the last cluster turned Running`);
    // Each Node process's main thread apart: the rest is its garbage collector's and libuv's threads.
    const mainThreads = groups.filter((g) => g.node).map((g) => ({ name: `${g.name}, main thread`, cpuMs: () => processCpuMs(g.pids[0], g.pids[0]) }));
    idle = await measureIdleFleet({ groups: [...groups.map((g) => ({ name: g.name, cpuMs: () => cpuMsOf(g) })), ...mainThreads], scrape, storeRevision }, plan.idleSettleSeconds * 1000, plan.idleSeconds * 1000);
    const since = (at: number) => ((at - slipwayStartedAt) / 1000).toFixed(0);
    if (plan.cpuProfDir) progress(`the idle window in slipway up's profile: cpu-summary.ts --from ${since(idle.window.start)} --to ${since(idle.window.end)}`);
  }
  // On connections of their own: the probe's sat idle while the store copy was read (seconds at 10,000,
  // with this loop busy), past the server's keep-alive timeout, and one such connection reused failed the
  // first list of a 10,000 run with "socket hang up".
  const listClient = new BenchClient(endpoint, 1);
  onTeardown(() => listClient.close());
  const listRows = runningAt !== undefined ? await measureLists(listClient, n, plan.workers) : undefined;

  // Deletion: every cluster, at the same rate; then until the sim cloud holds nothing.
  let deletion:
    | {
        clustersGoneMs?: number;
        cloudEmptyMs?: number;
        remaining?: number;
        deletes: Awaited<ReturnType<typeof paced>>;
        metricsBefore: Sample[];
        metricsAfter: Sample[];
        writes: number;
        writesBy?: Map<string, number>;
      }
    | undefined;
  if (runningAt !== undefined) {
    progress(`all ${n} clusters Running after ${seconds(runningAt - started)}; deleting them`);
    const [deletionMetricsBefore, deletionRevisionBefore] = [await scrape(), await storeRevision()];
    const deleteStart = performance.now();
    const gone = tracker.until(() => tracker.size === 0);
    const deletes = await paced(n, plan.rate, plan.connections * 4, (index) =>
      withRetries(async () => {
        await api.send("DELETE", `${CLUSTERS}/${nameOf(index)}`, { expect: [200, 202, 404] });
      }),
    );
    const deadline = deleteStart + plan.deleteTimeoutMs;
    const goneAt = await Promise.race([gone, sleep(Math.max(0, deadline - performance.now())).then(() => undefined)]);
    let remaining = Number.NaN;
    let emptyAt: number | undefined;
    for (;;) {
      remaining = await liveCloudResources(sim);
      if (remaining === 0) {
        emptyAt = performance.now();
        break;
      }
      if (performance.now() >= deadline) break;
      await sleep(2_000);
    }
    // The deletion's writes by resource (a deletion of up to ~5 minutes is still in the store's history).
    const deletedWritesBy =
      plan.store === "sqlite" ? readStoreCopy(dataDir, (db) => writesByResource(db, deletionRevisionBefore), plan.keepStore ? `${plan.keepStore}.deleted` : undefined) : undefined;
    deletion = {
      deletes,
      remaining,
      metricsBefore: deletionMetricsBefore,
      metricsAfter: await scrape(),
      writes: (await storeRevision()) - deletionRevisionBefore,
      ...(deletedWritesBy ? { writesBy: deletedWritesBy } : {}),
      ...(goneAt !== undefined ? { clustersGoneMs: goneAt - deleteStart } : {}),
      ...(emptyAt !== undefined ? { cloudEmptyMs: emptyAt - deleteStart } : {}),
    };
  } else {
    progress(`not every cluster was Running after ${seconds(plan.runningTimeoutMs)}: ${JSON.stringify(tracker.byPhase())}`);
    process.exitCode = 1;
  }
  memory.stop();

  // ---- the report ----
  const runMs = (runningAt ?? provisionedAt) - started;
  const windowS = (provisionedAt - started) / 1000;
  const reconcileCount = reconciles(metricsAfter) - reconciles(metricsBefore);
  const probeSorted = [...probe.latencies].sort((a, b) => a - b);
  const notMetrics = (labels: Record<string, string>) => labels.resource === "metrics";
  const serverBuckets = bucketDelta(histogramBuckets(metricsBefore, "apiserver_request_duration_seconds", notMetrics), histogramBuckets(metricsAfter, "apiserver_request_duration_seconds", notMetrics));
  const verdict = (met: boolean) => (met ? "met" : "missed");
  const ms = (value: number) => fixed(value, 1);
  const running = tracker.count("Running");
  const recent = history.filter((h) => h.at >= provisionedAt - 5 * 60_000);
  const recentRate = recent.length >= 2 ? ((recent.at(-1)!.running - recent[0]!.running) / ((recent.at(-1)!.at - recent[0]!.at) / 60_000)) : Number.NaN;
  const probeP99 = percentile(probeSorted, 0.99);
  const controlPlaneBytes = memory.peak("slipway up") + (etcd ? memory.peak("etcd (3 members)") : 0);

  const rows: string[][] = [
    ["measure", "value", "target", "result"],
    ["clusters (machines)", `${n} (${n * (1 + plan.workers)})`, "", ""],
    ["store", plan.store === "etcd" ? "etcd, 3 members" : "SQLite", "", ""],
    ["submission", `${fixed((n - creates.failures) / (creates.elapsedMs / 1000), 1)}/s over ${seconds(creates.elapsedMs)}${creates.failures ? `, ${creates.failures} failed` : ""}`, "", ""],
    runningAt !== undefined
      ? ["time until all Running", seconds(runMs), `≤ ${TARGETS.runningWithinMs / 60_000} min`, verdict(runMs <= TARGETS.runningWithinMs)]
      : ["time until all Running", `not reached: ${running} of ${n} after ${seconds(runMs)}`, `≤ ${TARGETS.runningWithinMs / 60_000} min`, "missed"],
    ["clusters per minute", runningAt !== undefined ? fixed(n / (runMs / 60_000), 0) : `${fixed(recentRate, 0)} (last 5 min)`, "", ""],
    ["reconciles per second", `${fixed(reconcileCount / windowS, 0)} (${reconcileCount} in all)`, "", ""],
    ["API p50 / p99, GET every 100 ms (client)", `${ms(percentile(probeSorted, 0.5))} / ${ms(probeP99)} ms (${probeSorted.length} GETs${probe.errors ? `, ${probe.errors} failed` : ""})`, `p99 < ${TARGETS.apiP99Ms} ms`, verdict(probeP99 < TARGETS.apiP99Ms)],
    ["API p50 / p99, creates (client)", `${ms(percentile(creates.latencies, 0.5))} / ${ms(percentile(creates.latencies, 0.99))} ms`, "", ""],
    ["API p50 / p99, every request (server histogram)", `${ms(histogramQuantile(serverBuckets, 0.5) * 1000)} / ${ms(histogramQuantile(serverBuckets, 0.99) * 1000)} ms`, "", ""],
    ["event-loop delay, slipway up: p99 per 10 s (median / worst), max", loopDelayFigures(serverLoop), "", ""],
    ["event-loop delay, this benchmark: p99, max", `${ms(loopDelayMs(benchLoop.percentile(99)))} / ${ms(loopDelayMs(benchLoop.max))} ms`, "", ""],
    ...groups.map((g) => [`peak RSS, ${g.name}`, formatBytes(memory.peak(g.name)), g.name === "slipway up" && !etcd ? `< ${formatBytes(TARGETS.controlPlaneBytes)}` : "", g.name === "slipway up" && !etcd ? verdict(controlPlaneBytes < TARGETS.controlPlaneBytes) : ""]),
    ...(etcd ? [["peak RSS, control plane (slipway up + etcd)", formatBytes(controlPlaneBytes), `< ${formatBytes(TARGETS.controlPlaneBytes)}`, verdict(controlPlaneBytes < TARGETS.controlPlaneBytes)]] : []),
    ...groups.map((g, i) => [`CPU time, ${g.name}`, `${fixed((cpuAfter[i]! - cpuBefore[i]!) / 1000, 0)} s (${fixed((cpuAfter[i]! - cpuBefore[i]!) / 1000 / windowS, 2)} cores, ${fixed((cpuAfter[i]! - cpuBefore[i]!) / 1000 / n, 3)} s per cluster)`, "", ""]),
    ["store writes until all Running", `${writes} (${fixed(writes / n, 0)} per cluster)`, "", ""],
    ["store size on disk (all Running)", formatBytes(storeBytes), "", ""],
    ...(etcdBefore && etcdAfter ? [etcdRequestRow(etcdBefore, etcdAfter, writes)] : []),
  ];
  if (idle) rows.push(...idleRows(idle, { group: "slipway up", share: TARGETS.idleShareOfCore }));
  if (deletion) {
    rows.push(
      ["deletion: requests", `${fixed((n - deletion.deletes.failures) / (deletion.deletes.elapsedMs / 1000), 1)}/s over ${seconds(deletion.deletes.elapsedMs)}`, "", ""],
      ["deletion: until no cluster is left", deletion.clustersGoneMs !== undefined ? seconds(deletion.clustersGoneMs) : `not reached: ${tracker.size} left`, "", ""],
      ["deletion: until the sim cloud holds nothing", deletion.cloudEmptyMs !== undefined ? seconds(deletion.cloudEmptyMs) : `not reached: ${deletion.remaining} resources left`, "", ""],
      ["deletion: store writes", `${deletion.writes} (${fixed(deletion.writes / n, 1)} per cluster)`, "", ""],
    );
    if (deletion.cloudEmptyMs === undefined) process.exitCode = 1;
  }
  const header = ["outcome", "count", "per cluster", "seconds", "ms each"];
  const output = [
    "",
    `slipway fleet benchmark: ${n} clusters of 1 control-plane machine + ${plan.workers} workers${plan.scaleSets ? " (a pool on a scale set)" : ""}, sim cloud 'instant', ${plan.store === "etcd" ? "3-member etcd" : "SQLite"}, poll interval ${plan.pollInterval}${plan.controllersInWorker ? ", controllers on a worker thread" : ""}${plan.syncPeriod ? `, sync period ${plan.syncPeriod}` : ""}`,
    formatMachine(machine),
    "",
    formatTable(rows),
    "",
    ...(writesBy ? [formatTable(writesRows(writesBy, writes, n)), ""] : []),
    ...(stages ? [formatTable(stageRows(stages)), ""] : []),
    formatTable([["reconciles until all Running", ...header], ...reconcileRows(metricsBefore, metricsAfter, n)]),
    "",
    ...(deletion?.writesBy ? [formatTable(writesRows(deletion.writesBy, deletion.writes, n, "store writes while deleting")), ""] : []),
    ...(deletion ? [formatTable([["reconciles while deleting", ...header], ...reconcileRows(deletion.metricsBefore, deletion.metricsAfter, n)]), ""] : []),
    ...(listRows ? [formatTable(listRows), `lists once all were Running, one at a time, ${LIST_ROUNDS} of each, client side (whole response read)`, ""] : []),
    `slipway.log: ${formatBytes(logBytes)}; watch restarts of the benchmark's cluster watch: ${tracker.restarts}`,
    "API latency targets apply while clusters are being provisioned: from the first submission until all are Running.",
  ];
  process.stdout.write(output.join("\n") + "\n");
}

const plan = readPlan(process.argv.slice(2));
runBenchmark(main, plan.runningTimeoutMs + plan.deleteTimeoutMs + (plan.idleSettleSeconds + plan.idleSeconds) * 1000 + 10 * 60_000);
