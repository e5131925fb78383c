// What one write costs the object service in process (SQLite in memory, no HTTP): a controller's status
// patch of a busy Cluster, a merge patch of its spec, and a server-side apply of it. Run it before and
// after a change to the write path to see what the change costs.
//
//   npm run bench:writes
import { performance } from "node:perf_hooks";
import { defaultRegistry } from "../src/api/kinds.ts";
import { ObjectService, type WriteOptions } from "../src/apiserver/objects.ts";
import { SYSTEM_IDENTITY } from "../src/apiserver/request-context.ts";
import { SqliteStore } from "../src/store/sqlite.ts";

const WRITES = 2_000;
const WARM_UP = 200;

const registry = defaultRegistry();
const clusters = registry.byKind("slipway.dev/v1alpha1", "Cluster")!;
const as = (fieldManager: string): WriteOptions => ({ context: { identity: SYSTEM_IDENTITY, fieldManager } });
const pools = ["a", "b", "c"].map((name) => ({ name, connection: "east", machineType: "s1.large", replicas: 3 }));

function manifest(replicas: number) {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: "busy", labels: { team: "platform" } },
    spec: { paused: true, controlPlane: { connection: "east", machineType: "s1.medium", replicas }, workers: pools },
  };
}

/** A status as a running cluster's controller writes it: conditions, nodes and a journal of steps. */
function status(round: number) {
  const time = new Date(Date.UTC(2026, 0, 1, 0, 0, round % 60)).toISOString();
  return {
    phase: "Running",
    observedGeneration: 1,
    conditions: ["Validated", "InfrastructureReady", "ControlPlaneInitialized", "ControlPlaneReady", "WorkersReady", "Ready"].map((type) => ({
      type,
      status: "True",
      reason: "Ready",
      message: `checked in round ${round}`,
      lastTransitionTime: time,
    })),
    nodes: Array.from({ length: 12 }, (_, i) => ({ name: `node-${i}`, role: i < 3 ? "control-plane" : "worker", machine: `busy-${i}`, ready: true, version: "v1.31.2" })),
    steps: Array.from({ length: 20 }, (_, i) => ({ name: `Step${i}`, startedAt: time, finishedAt: time, outcome: "Succeeded" })),
  };
}

/** An Event as a controller records it about the Cluster. */
function event(round: number) {
  const time = new Date(Date.UTC(2026, 0, 1, 0, 0, round % 60)).toISOString();
  return {
    metadata: { name: `busy.${round.toString(16)}`, namespace: "default" },
    involvedObject: { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", namespace: "default", name: "busy", uid: "5d7c1a0e-0b55-4c9b-9e5e-3f1f4b2b8a11" },
    reason: "MachineCreated",
    message: `created machine busy-worker-${round}`,
    type: "Normal",
    count: 1,
    firstTimestamp: time,
    lastTimestamp: time,
    source: { component: "slipway.dev/cluster-controller" },
    reportingComponent: "slipway.dev/cluster-controller",
    reportingInstance: "slipway-0",
  };
}

async function timed(name: string, write: (round: number) => Promise<unknown>): Promise<string> {
  for (let i = 0; i < WARM_UP; i++) await write(i);
  const start = performance.now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < WRITES; i++) await write(WARM_UP + i);
  const used = process.cpuUsage(cpu);
  const micros = ((performance.now() - start) * 1000) / WRITES;
  // CPU time says more than wall time on a busy machine.
  const cpuMicros = (used.user + used.system) / WRITES;
  return `${name.padEnd(34)} ${micros.toFixed(0).padStart(6)} µs/write, ${cpuMicros.toFixed(0).padStart(6)} µs CPU/write`;
}

async function main(): Promise<void> {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(registry, store);
  await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
  await objects.create(clusters, "default", manifest(1), as("kubectl-create"));
  const events = registry.byKind("v1", "Event")!;
  let busy = await objects.get(clusters, "default", "busy");
  const lines = [
    // What a controller's reconcile sends: the object it read, its status changed (PUT /status).
    await timed("status update (controller)", async (i) => {
      busy = (await objects.updateStatus(clusters, "default", "busy", { ...busy, status: status(i) }, as("cluster-controller"))).object;
    }),
    await timed("create of an Event", (i) => objects.create(events, "default", event(i), as("cluster-controller"))),
    await timed("status merge patch (controller)", (i) => objects.patch(clusters, "default", "busy", "merge", { status: status(i) }, { ...as("cluster-controller"), subresource: "status" })),
    await timed("merge patch of the spec", (i) => objects.patch(clusters, "default", "busy", "merge", { spec: { controlPlane: { replicas: 1 + (i % 2) * 2 } } }, as("kubectl-patch"))),
  ];
  if ("apply" in objects) {
    lines.push(await timed("server-side apply of the spec", (i) => objects.apply(clusters, "default", "busy", manifest(1 + (i % 2) * 2), { ...as("ci"), force: true })));
  }
  busy = await objects.get(clusters, "default", "busy");
  const { managedFields, ...metadata } = busy.metadata;
  lines.push(`the Cluster: ${JSON.stringify({ ...busy, metadata }).length} bytes, its managedFields ${JSON.stringify(managedFields ?? []).length} bytes`);
  process.stdout.write(`object service writes, in process (${WRITES} each, after ${WARM_UP} to warm up)\n${lines.join("\n")}\n`);
  store.close();
}

void main();
