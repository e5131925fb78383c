// The API benchmark: throughput and latency of `slipway up`'s HTTPS API over the embedded SQLite store
// (create, get, list, watch fan-out), next to a bare node:https server answering the same bytes.
// Both servers run as child processes, so the load generator has its own event loop.
//
//   npm run bench:api
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import { startSlipway } from "../test/support/slipway.ts";
import { BenchClient, type Endpoint } from "./support/client.ts";
import { startCpuMeter, type CpuShare } from "./support/cpu.ts";
import { runClosedLoop, summarize, type LoadOptions, type Summary } from "./support/load.ts";
import { onTeardown, removeOnTeardown, runBenchmark, startBareServer, stopChild } from "./support/processes.ts";
import { describeMachine, fixed, formatMachine, formatTable } from "./support/report.ts";
import { runWatchFanout, type FanoutOptions } from "./support/watch-fanout.ts";

const COLLECTION = "/apis/slipway.dev/v1alpha1/namespaces/default/connections";
const WARM_UP_PATH = "/api/v1/namespaces/default";

const PLAN = {
  warmUp: { count: 200, concurrency: 16 },
  create: { count: 1_000, concurrency: 16 },
  get: { count: 5_000, concurrency: 16 },
  list: { count: 200, concurrency: 4 },
  /** Merge patches, then server-side applies, each changing a label of one of the created Connections. */
  patch: { count: 1_000, concurrency: 16 },
  bare: { count: 5_000, concurrency: 16 },
  watch: {
    watchers: 100,
    writes: 200,
    drainTimeoutMs: 15_000,
    rounds: [
      { name: "paced", writeIntervalMs: 20 },
      { name: "back-to-back", writeIntervalMs: 0 },
    ],
  },
  /** The whole run is abandoned (and cleaned up) past this. */
  limitMs: 180_000,
};

interface Row {
  operation: string;
  count: number;
  concurrency: string;
  summary: Summary;
  /** Absent where the phase's CPU cannot be told apart from another row's. */
  cpu?: CpuShare;
}

const nameOf = (index: number) => `bench-${String(index).padStart(4, "0")}`;

function connection(index: number): unknown {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Connection",
    metadata: { name: nameOf(index) },
    spec: { provider: "sim", region: "sim-east-1" },
  };
}

function progress(message: string): void {
  process.stderr.write(`bench:api: ${message}\n`);
}

/** Runs one closed-loop phase against the server process `serverPid`. */
async function measure(operation: string, serverPid: number | undefined, options: LoadOptions): Promise<Row> {
  const meter = startCpuMeter(serverPid);
  const result = await runClosedLoop(options);
  const cpu = meter();
  return { operation, count: result.count, concurrency: String(result.concurrency), summary: summarize(result.latenciesMs, result.count, result.elapsedMs), cpu };
}

function residentMiB(pid: number | undefined): string {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? `${Math.round(Number(match[1]) / 1024)} MiB` : "unknown";
  } catch {
    return "unknown";
  }
}

async function warmUp(client: BenchClient, path: string): Promise<void> {
  await runClosedLoop({ ...PLAN.warmUp, send: () => client.send("GET", path).then(() => undefined) });
}

interface FanoutReport {
  rows: Row[];
  notes: string[];
  failed: boolean;
}

/** One round of the watch fan-out: a row for the writes, a row for the deliveries, and a verdict. */
async function measureFanout(serverPid: number | undefined, options: FanoutOptions): Promise<FanoutReport> {
  const { watchers, writes, writeIntervalMs } = options;
  const pacing = writeIntervalMs > 0 ? `one write every ${writeIntervalMs} ms` : "back-to-back writes";
  progress(`watch fan-out: ${watchers} watchers, ${writes} merge patches, ${pacing}`);
  const meter = startCpuMeter(serverPid);
  const fanout = await runWatchFanout(options);
  const cpu = meter();
  const writeLatencies = fanout.writes.map((w) => Number(w.respondedAt - w.sentAt) / 1e6);
  const writeElapsedMs = fanout.writes.length === 0 ? 0 : Number(fanout.writes.at(-1)!.respondedAt - fanout.writes[0]!.sentAt) / 1e6;
  const deliveries = fanout.deliveriesMs;
  const rows: Row[] = [
    { operation: `patch, ${pacing}`, count: fanout.writes.length, concurrency: "1", summary: summarize(writeLatencies, fanout.writes.length, writeElapsedMs) },
    { operation: `watch delivery, ${pacing}`, count: deliveries.length, concurrency: String(watchers), summary: summarize(deliveries, deliveries.length, fanout.elapsedMs), cpu },
  ];
  const expected = watchers * writes;
  const notes = [
    `watch delivery, ${pacing}: ${deliveries.length}/${expected} events read, ` +
      `${fixed(deliveries.length / (fanout.elapsedMs / 1000), 0)} events/s over ${fixed(fanout.elapsedMs / 1000, 2)} s, ` +
      `latency from the write's response min ${fixed(Math.min(...deliveries), 2)} ms, max ${fixed(Math.max(...deliveries), 2)} ms`,
  ];
  const failed = fanout.failures.length > 0 || deliveries.length !== expected;
  if (failed) {
    notes.push(`  FAIL: ${fanout.failures.length} of ${watchers} watchers did not read exactly the ${writes} events written:`);
    notes.push(...fanout.failures.slice(0, 10).map((line) => `    ${line}`));
    if (fanout.failures.length > 10) notes.push(`    … and ${fanout.failures.length - 10} more`);
  } else {
    notes.push(`  every watcher read all ${writes} events, once each, in resourceVersion order`);
  }
  return { rows, notes, failed };
}

async function main(): Promise<void> {
  const machine = describeMachine();
  const root = mkdtempSync(join(tmpdir(), "slipway-bench-"));
  removeOnTeardown(root);

  progress("starting slipway up");
  const slipway = await startSlipway({ dataDir: join(root, "slipway"), timeoutMs: 60_000 });
  onTeardown(() => stopChild(slipway.process));
  const kubeconfig = parseKubeconfig(readFileSync(slipway.kubeconfig, "utf8"));
  const endpoint: Endpoint = { server: kubeconfig.server, caCertPem: kubeconfig.caCertPem, token: kubeconfig.token };
  const api = new BenchClient(endpoint, PLAN.create.concurrency);
  const lister = new BenchClient(endpoint, PLAN.list.concurrency);
  const watchClient = new BenchClient(endpoint, PLAN.watch.watchers);
  onTeardown(() => [api, lister, watchClient].forEach((client) => client.close()));
  await warmUp(api, WARM_UP_PATH);

  const rows: Row[] = [];
  progress(`create: ${PLAN.create.count} Connections, concurrency ${PLAN.create.concurrency}`);
  const serverPid = slipway.process.pid;
  rows.push(
    await measure("create", serverPid, {
      ...PLAN.create,
      send: (index) => api.send("POST", COLLECTION, { body: connection(index), expect: [201] }).then(() => undefined),
    }),
  );

  // The baseline answers with the very bytes a GET of one Connection returns.
  const target = `${COLLECTION}/${nameOf(0)}`;
  const objectBytes = (await api.send("GET", target)).body;
  const bodyFile = join(root, "connection.json");
  writeFileSync(bodyFile, objectBytes);
  progress("starting the bare https baseline");
  const bare = await startBareServer(bodyFile);
  const bareClient = new BenchClient(bare.endpoint, PLAN.bare.concurrency);
  onTeardown(() => bareClient.close());

  progress(`get: ${PLAN.get.count} GETs of one Connection, concurrency ${PLAN.get.concurrency}`);
  await warmUp(api, target);
  const getRow = await measure("get", serverPid, { ...PLAN.get, send: () => api.send("GET", target).then(() => undefined) });
  rows.push(getRow);

  progress(`bare baseline: ${PLAN.bare.count} GETs, concurrency ${PLAN.bare.concurrency}`);
  await warmUp(bareClient, "/");
  const bareRow = await measure("bare https get (baseline)", bare.child.pid, { ...PLAN.bare, send: () => bareClient.send("GET", "/").then(() => undefined) });
  rows.push(bareRow);

  const firstList = await lister.json<{ items: unknown[]; metadata: { continue?: string } }>("GET", COLLECTION);
  if (firstList.items.length !== PLAN.create.count || firstList.metadata.continue) {
    throw new Error(`a list returned ${firstList.items.length} Connections (continue: ${firstList.metadata.continue ?? "none"}), expected all ${PLAN.create.count}`);
  }
  const listBytes = (await lister.send("GET", COLLECTION)).body.length;
  progress(`list: ${PLAN.list.count} lists of ${PLAN.create.count} Connections, concurrency ${PLAN.list.concurrency}`);
  rows.push(await measure(`list (${PLAN.create.count} objects)`, serverPid, { ...PLAN.list, send: () => lister.send("GET", COLLECTION).then(() => undefined) }));

  const itemOf = (index: number) => `${COLLECTION}/${nameOf(index % PLAN.create.count)}`;
  progress(`merge patch: ${PLAN.patch.count} label changes, concurrency ${PLAN.patch.concurrency}`);
  rows.push(
    await measure("merge patch", serverPid, {
      ...PLAN.patch,
      send: (index) =>
        api
          .send("PATCH", `${itemOf(index)}?fieldManager=bench-patch`, { body: { metadata: { labels: { patched: String(index) } } }, contentType: "application/merge-patch+json" })
          .then(() => undefined),
    }),
  );
  progress(`server-side apply: ${PLAN.patch.count} applies of a whole Connection, concurrency ${PLAN.patch.concurrency}`);
  rows.push(
    await measure("server-side apply", serverPid, {
      ...PLAN.patch,
      send: (index) => {
        const applied = connection(index % PLAN.create.count) as { metadata: Record<string, unknown> };
        applied.metadata.labels = { applied: String(index) };
        return api.send("PATCH", `${itemOf(index)}?fieldManager=bench-apply&force=true`, { body: applied, contentType: "application/apply-patch+yaml" }).then(() => undefined);
      },
    }),
  );

  const { watchers, writes, drainTimeoutMs } = PLAN.watch;
  const fanoutNotes: string[] = [];
  for (const round of PLAN.watch.rounds) {
    const report = await measureFanout(serverPid, {
      watchClient,
      writeClient: api,
      collection: COLLECTION,
      watchers,
      writes,
      writeIntervalMs: round.writeIntervalMs,
      round: round.name,
      drainTimeoutMs,
      target: (index) => nameOf(index % PLAN.create.count),
    });
    rows.push(...report.rows);
    fanoutNotes.push(...report.notes);
    if (report.failed) process.exitCode = 1;
  }

  const table = formatTable([
    ["operation", "count", "concurrency", "req/s", "p50 ms", "p99 ms", "server cpu", "client cpu", "server cpu/op"],
    ...rows.map((r) => [
      r.operation,
      String(r.count),
      r.concurrency,
      fixed(r.summary.perSecond, 0),
      fixed(r.summary.p50Ms, 2),
      fixed(r.summary.p99Ms, 2),
      r.cpu ? `${fixed(r.cpu.serverPct, 0)}%` : "-",
      r.cpu ? `${fixed(r.cpu.generatorPct, 0)}%` : "-",
      r.cpu ? `${fixed((r.cpu.serverMs * 1000) / r.count, 0)} µs` : "-",
    ]),
  ]);
  const output = [
    "",
    "slipway API benchmark (slipway up, SQLite store, HTTPS on 127.0.0.1)",
    formatMachine(machine),
    "",
    table,
    "",
    "req/s: requests (for watch delivery: events read by all watchers) per second of wall time;",
    "server cpu, client cpu: share of one core used by the server process and by the load generator;",
    "server cpu/op: server CPU time per request, or per delivered event (writes included).",
    "",
    `get vs bare: ${fixed(getRow.summary.perSecond / bareRow.summary.perSecond, 2)}x the requests/s, ` +
      `${fixed(getRow.summary.p50Ms / bareRow.summary.p50Ms, 2)}x the p50 latency`,
    `one Connection: ${objectBytes.length} bytes; one list of ${PLAN.create.count}: ${listBytes} bytes`,
    ...fanoutNotes,
    `slipway up resident memory after the run: ${residentMiB(serverPid)}`,
  ];
  process.stdout.write(output.join("\n") + "\n");
}

runBenchmark(main, PLAN.limitMs);
