// The object service on etcd: the read before a write may be a stale copy (GetOptions.mayLag), and
// nothing a client notices changes for it — a write from a stale copy is refused by the store and made
// again on the current object, a precondition or a no-op is checked on the latest write, and a write
// costs one request to etcd.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultRegistry } from "../api/kinds.ts";
import type { KubeObject } from "../api/meta.ts";
import { EtcdStore } from "../store/etcd.ts";
import { etcdRequests, startEtcd, type EtcdCluster } from "../../test/support/etcd.ts";
import { ConflictError } from "./errors.ts";
import { ObjectService } from "./objects.ts";

const registry = defaultRegistry();
const connections = registry.byKind("slipway.dev/v1alpha1", "Connection")!;
const namespaces = registry.byKind("v1", "Namespace")!;

function connection(name: string): Record<string, unknown> {
  return { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name, labels: { tier: "one" } }, spec: { provider: "sim", region: "sim-east-1" } };
}

const labelsOf = (object: KubeObject) => object.metadata.labels;

describe("ObjectService on etcd, with reads before writes that may lag", () => {
  let etcd: EtcdCluster;
  let storeA: EtcdStore;
  let storeB: EtcdStore;
  /** Two API servers on one etcd cluster, as replicas are. */
  let a: ObjectService;
  let b: ObjectService;

  before(async () => {
    etcd = await startEtcd();
    storeA = await EtcdStore.connect(etcd.endpoints);
    storeB = await EtcdStore.connect(etcd.endpoints);
    a = new ObjectService(registry, storeA);
    b = new ObjectService(registry, storeB);
    await a.create(namespaces, undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
  });
  after(async () => {
    await storeA?.close();
    await storeB?.close();
    await etcd?.stop();
  });

  /** A connection that `a` wrote last, then `b` changed: `a` holds a stale copy of it. */
  async function staleOnA(name: string): Promise<{ stale: KubeObject; current: KubeObject }> {
    await a.create(connections, "default", connection(name));
    const { object: stale } = await a.patch(connections, "default", name, "merge", { metadata: { labels: { tier: "two" } } });
    const { object: current } = await b.patch(connections, "default", name, "merge", { metadata: { labels: { tier: "three", by: "b" } } });
    assert.equal((await storeA.get(`/registry/slipway.dev/connections/default/${name}`, { mayLag: true }))?.modRevision, Number(stale.metadata.resourceVersion), "a's copy is stale");
    return { stale, current };
  }

  it("refuses a write that carries the stale resourceVersion with a conflict, and changes nothing", async () => {
    const { stale, current } = await staleOnA("conflict");
    const error = await a.update(connections, "default", "conflict", { ...stale, metadata: { ...stale.metadata, labels: { tier: "four" } } }).catch((e: unknown) => e);
    assert.ok(error instanceof ConflictError, `expected a conflict, got ${String(error)}`);
    assert.equal(error.code, 409);
    const now = await a.get(connections, "default", "conflict");
    assert.equal(now.metadata.resourceVersion, current.metadata.resourceVersion, "nothing was written");
    assert.deepEqual(labelsOf(now), { tier: "three", by: "b" });
  });

  it("makes a write that carries the latest resourceVersion although its first read was stale", async () => {
    const { current } = await staleOnA("latest");
    const { object } = await a.update(connections, "default", "latest", { ...current, metadata: { ...current.metadata, labels: { tier: "four" } } });
    assert.deepEqual(labelsOf(object), { tier: "four" });
    assert.deepEqual(labelsOf(await b.get(connections, "default", "latest")), { tier: "four" });
  });

  it("applies a patch to the current object, not to the stale copy (no change is lost)", async () => {
    await staleOnA("patch");
    await a.patch(connections, "default", "patch", "merge", { metadata: { labels: { from: "a" } } });
    assert.deepEqual(labelsOf(await b.get(connections, "default", "patch")), { tier: "three", by: "b", from: "a" });
  });

  it("writes a patch that changes nothing on the stale copy but changes the current object", async () => {
    await staleOnA("noop");
    const { object } = await a.patch(connections, "default", "noop", "merge", { metadata: { labels: { tier: "two", by: null } } });
    assert.deepEqual(labelsOf(object), { tier: "two" });
    assert.deepEqual(labelsOf(await b.get(connections, "default", "noop")), { tier: "two" });
  });

  it("deletes with the latest resourceVersion as precondition although its first read was stale", async () => {
    const { current } = await staleOnA("gone");
    await a.delete(connections, "default", "gone", { preconditions: { resourceVersion: current.metadata.resourceVersion } });
    assert.equal(await b.tryGet(connections, "default", "gone"), undefined);
  });

  it("creates in a namespace made through another server a moment before", async () => {
    await b.create(namespaces, undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name: "fresh" } });
    const { object } = await a.create(connections, "fresh", connection("in-fresh"));
    assert.equal(object.metadata.namespace, "fresh");
  });

  it("writes the status of an object it wrote last with one request to etcd", async () => {
    await a.create(connections, "default", connection("one-trip"));
    const start = await etcdRequests(etcd);
    for (let i = 0; i < 5; i++) await a.patch(connections, "default", "one-trip", "merge", { metadata: { labels: { round: String(i) } } });
    const end = await etcdRequests(etcd);
    assert.deepEqual({ Range: end.Range! - start.Range!, Txn: end.Txn! - start.Txn! }, { Range: 0, Txn: 5 });
  });
});
