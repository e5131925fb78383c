// What a list of many objects costs. In process (SQLite in memory, no HTTP): 10,000 Clusters with a
// running cluster's status, listed as JSON (what a client's list or an informer's relist receives) and
// as a Table (what `kubectl get` asks for), each step timed on its own: reading the store, decoding the
// objects, selecting, and encoding the response. Then over HTTPS: `slipway up` with 10,000 ConfigMaps
// of about the same size, listed as JSON and as a Table from another process, whole response read.
//
//   npm run bench:lists [-- --objects 10000 --rounds 10 --no-http --http-only]
import { performance } from "node:perf_hooks";
import { defaultRegistry } from "../src/api/kinds.ts";
import { ObjectService } from "../src/apiserver/objects.ts";
import { SYSTEM_IDENTITY } from "../src/apiserver/request-context.ts";
import { toTable } from "../src/apiserver/table.ts";
import { SqliteStore } from "../src/store/sqlite.ts";
import { readFileSync } from "node:fs";
import { parseKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import { startSlipway } from "../test/support/slipway.ts";
import { BenchClient, getWithAccept, TABLE_ACCEPT } from "./support/client.ts";
import { processCpuMs } from "./support/cpu.ts";
import { percentile } from "./support/load.ts";
import { onTeardown, removeOnTeardown, runBenchmark } from "./support/processes.ts";

const argv = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const OBJECTS = option("objects", 10_000);
const ROUNDS = option("rounds", 10);

const registry = defaultRegistry();
const clusters = registry.byKind("slipway.dev/v1alpha1", "Cluster")!;
const context = { identity: SYSTEM_IDENTITY, fieldManager: "bench" };

function status(index: number) {
  const time = new Date(Date.UTC(2026, 0, 1, 0, 0, index % 60)).toISOString();
  return {
    phase: "Running",
    observedGeneration: 1,
    conditions: ["Validated", "InfrastructureReady", "ControlPlaneInitialized", "ControlPlaneReady", "WorkersReady", "Ready"].map((type) => ({ type, status: "True", reason: "Ready", message: "", lastTransitionTime: time })),
    nodes: Array.from({ length: 4 }, (_, i) => ({ name: `fleet-${index}-${i}`, role: i < 1 ? "control-plane" : "worker", machine: `fleet-${index}-${i}`, ready: true, version: "v1.31.2" })),
  };
}

async function timed(rounds: number, run: () => Promise<unknown> | unknown): Promise<{ p50: number; p99: number; cpu: number }> {
  await run();
  const times: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    await run();
    times.push(performance.now() - start);
  }
  const used = process.cpuUsage(cpu);
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), cpu: (used.user + used.system) / 1000 / rounds };
}

async function main(): Promise<void> {
  if (!argv.includes("--http-only")) await inProcess();
  if (!argv.includes("--no-http")) await overHttps();
}

async function inProcess(): Promise<void> {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(registry, store);
  await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
  for (let i = 0; i < OBJECTS; i++) {
    const name = `fleet-${String(i).padStart(5, "0")}`;
    await objects.create(clusters, "default", { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", metadata: { name, labels: { fleet: "bench" } }, spec: { kubernetesVersion: "v1.31.2", controlPlane: { connection: "east", machineType: "s1.medium", replicas: 1 }, workers: [{ name: "pool", connection: "east", machineType: "s1.small", replicas: 3 }] } }, { context });
    await objects.patch(clusters, "default", name, "merge", { status: status(i) }, { context: { ...context, fieldManager: "cluster-controller" }, subresource: "status" });
  }
  const prefix = "/registry/slipway.dev/clusters/default/";
  const rows: [string, Awaited<ReturnType<typeof timed>>][] = [];
  rows.push(["store read", await timed(ROUNDS, () => store.list(prefix))]);
  rows.push(["list (object service)", await timed(ROUNDS, () => objects.list(clusters, "default", { context }))]);
  const list = await objects.list(clusters, "default", { context });
  rows.push(["JSON encoding of the list", await timed(ROUNDS, () => JSON.stringify(list))]);
  rows.push(["list + JSON", await timed(ROUNDS, async () => JSON.stringify(await objects.list(clusters, "default", { context })))]);
  if ("listJson" in objects) rows.push(["list as JSON text (the API's)", await timed(ROUNDS, () => objects.listJson(clusters, "default", { context }))]);
  rows.push(["list + Table + JSON", await timed(ROUNDS, async () => JSON.stringify(toTable(clusters, (await objects.list(clusters, "default", { context })).items, {})))]);
  if ("listTableChunks" in objects) {
    const tableText = (service: ObjectService) => service.listTableChunks(clusters, "default", { context }).then((chunks) => [...chunks].join(""));
    // A new object service each round has no row kept: what the first Table after a start costs.
    rows.push(["Table text, no row kept", await timed(ROUNDS, () => tableText(new ObjectService(registry, store)))]);
    rows.push(["Table text (the API's)", await timed(ROUNDS, () => tableText(objects))]);
  }
  rows.push(["list, label selector + JSON", await timed(ROUNDS, async () => JSON.stringify(await objects.list(clusters, "default", { context, labelSelector: "fleet=bench" })))]);
  const bytes = JSON.stringify(list).length;
  process.stdout.write(`lists of ${OBJECTS} Clusters in process (${ROUNDS} rounds each; ${(bytes / 2 ** 20).toFixed(1)} MiB as JSON)\n`);
  process.stdout.write(`${"step".padEnd(30)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)} ${"cpu ms".padStart(8)}\n`);
  for (const [name, t] of rows) process.stdout.write(`${name.padEnd(30)} ${t.p50.toFixed(1).padStart(8)} ${t.p99.toFixed(1).padStart(8)} ${t.cpu.toFixed(1).padStart(8)}\n`);
  store.close();
}

/** 10,000 ConfigMaps through `slipway up`'s HTTPS API, listed from this process. */
async function overHttps(): Promise<void> {
  const slipway = await startSlipway({ timeoutMs: 120_000, args: argv.includes("--controllers-in-worker") ? ["--controllers-in-worker"] : [] });
  removeOnTeardown(slipway.dataDir);
  onTeardown(() => slipway.stop().then(() => undefined));
  const kubeconfig = parseKubeconfig(readFileSync(slipway.kubeconfig, "utf8"));
  const client = new BenchClient({ server: kubeconfig.server, caCertPem: kubeconfig.caCertPem, token: kubeconfig.token }, 16);
  onTeardown(() => client.close());
  const path = "/api/v1/namespaces/default/configmaps";
  // About the size of a running fleet's Cluster (2.4 kB).
  const data = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`key-${i}`, "v".repeat(100)]));
  let next = 0;
  const worker = async () => {
    while (next < OBJECTS) {
      const name = `list-${String(next++).padStart(5, "0")}`;
      await client.send("POST", path, { body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, labels: { bench: "lists" } }, data }, expect: [201] });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  process.stdout.write(`\nlists of ${OBJECTS} ConfigMaps over HTTPS from another process (${ROUNDS} rounds each, one at a time)\n`);
  // Server CPU per list is the figure a busy machine disturbs least.
  // Meanwhile, on connections of their own, a GET of one ConfigMap every 50 ms: how long a list holds up
  // the requests that arrive during it; and the server's largest event-loop delay over the rounds.
  process.stdout.write(`${"list".padEnd(30)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)} ${"MiB".padStart(8)} ${"server cpu ms".padStart(14)} ${"GET meanwhile p50 / max ms".padStart(27)} ${"loop delay max ms".padStart(18)}\n`);
  const prober = new BenchClient({ server: kubeconfig.server, caCertPem: kubeconfig.caCertPem, token: kubeconfig.token }, 2);
  onTeardown(() => prober.close());
  const loopMaxMs = async () => {
    const text = (await prober.send("GET", "/metrics")).body.toString("utf8");
    return Number(/^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(text)?.[1] ?? Number.NaN) * 1000;
  };
  for (const [name, accept] of [["JSON", "application/json"], ["Table (kubectl get)", TABLE_ACCEPT]] as const) {
    let bytes = 0;
    await getWithAccept(client, path, accept);
    await loopMaxMs();
    const gets: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const sent = performance.now();
        await prober.send("GET", `${path}/list-00000`);
        gets.push(performance.now() - sent);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const cpuBefore = processCpuMs(slipway.process.pid!);
    const t = await timed(ROUNDS, async () => (bytes = await getWithAccept(client, path, accept)));
    const serverCpu = (processCpuMs(slipway.process.pid!) - cpuBefore) / (ROUNDS + 1);
    probing = false;
    await probe;
    const loopMax = await loopMaxMs();
    gets.sort((a, b) => a - b);
    const meanwhile = `${percentile(gets, 0.5).toFixed(1)} / ${gets.at(-1)!.toFixed(1)}`;
    process.stdout.write(`${name.padEnd(30)} ${t.p50.toFixed(1).padStart(8)} ${t.p99.toFixed(1).padStart(8)} ${(bytes / 2 ** 20).toFixed(1).padStart(8)} ${serverCpu.toFixed(0).padStart(14)} ${meanwhile.padStart(27)} ${loopMax.toFixed(0).padStart(18)}\n`);
  }
}

runBenchmark(main, 15 * 60_000);
