// What the controllers' worker thread pays per object service call: the same gets and status-sized
// updates in process and across a MessagePort (structured clones both ways), on one thread, so the
// difference is the port and the clones. `node --import tsx bench/support/remote-objects-cost.ts [N]`
import { MessageChannel } from "node:worker_threads";
import { defaultRegistry } from "../../src/api/kinds.ts";
import { clusterKind as typedClusterKind } from "../../src/api/slipway/cluster.ts";
import type { KindDefinition } from "../../src/api/registry.ts";
import { ObjectService, type ObjectApi } from "../../src/apiserver/objects.ts";
import { RemoteObjectService, serveObjects } from "../../src/runtime/remote-objects.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";
import { readFileSync } from "node:fs";
import { parse } from "yaml";

const clusterKind = typedClusterKind as unknown as KindDefinition;
const n = Number(process.argv[2] ?? 5000);
const objects = new ObjectService(defaultRegistry(), SqliteStore.open(":memory:"));
await objects.create(objects.registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
const quickstart = (readFileSync(new URL("../../examples/quickstart.yaml", import.meta.url), "utf8").split(/^---$/m).map((d) => parse(d) as { kind?: string }))
  .find((d) => d?.kind === "Cluster")!;
await objects.create(clusterKind, "default", { ...quickstart, metadata: { name: "probe", namespace: "default" } });
const channel = new MessageChannel();
const served = serveObjects(objects, channel.port1);
const remote = new RemoteObjectService(objects.registry, channel.port2);

async function time(label: string, api: ObjectApi, op: (api: ObjectApi, i: number) => Promise<unknown>) {
  for (let i = 0; i < 200; i++) await op(api, i); // warm
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < n; i++) await op(api, i);
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  console.log(`${label.padEnd(40)} ${((ms * 1000) / n).toFixed(1).padStart(7)} µs each, ${(((used.user + used.system) / n)).toFixed(1).padStart(7)} µs CPU`);
}
const get = (api: ObjectApi) => api.get(clusterKind, "default", "probe");
const patch = (api: ObjectApi, i: number) => api.patch(clusterKind, "default", "probe", "merge", { metadata: { labels: { i: String(i) } } });
console.log(`object: ${JSON.stringify(await objects.get(clusterKind, "default", "probe")).length} bytes of JSON; ${n} calls each`);
await time("get, in process", objects, get);
await time("get, over the port", remote, get);
await time("merge patch, in process", objects, patch);
await time("merge patch, over the port", remote, patch);
const object = await objects.get(clusterKind, "default", "probe");
let started = performance.now();
for (let i = 0; i < n; i++) structuredClone(object);
console.log(`${"structuredClone of the object".padEnd(40)} ${(((performance.now() - started) * 1000) / n).toFixed(1).padStart(7)} µs each`);
started = performance.now();
for (let i = 0; i < n; i++) JSON.parse(JSON.stringify(object));
console.log(`${"JSON.stringify + parse of the object".padEnd(40)} ${(((performance.now() - started) * 1000) / n).toFixed(1).padStart(7)} µs each`);
served.close();
remote.close();
channel.port1.close();
channel.port2.close();
