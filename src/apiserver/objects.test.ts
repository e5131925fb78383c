import { describe, it, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import { defaultRegistry } from "../api/kinds.ts";
import type { KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { AlreadyExistsError, BadRequestError, ConflictError, ForbiddenError, InvalidError, NotFoundError } from "./errors.ts";
import { nowTimestamp, ObjectService, type ObjectEvent } from "./objects.ts";
import { ensureDefaultNamespaces } from "../controlplane/namespaces.ts";

const registry = defaultRegistry();
const clusters = registry.byKind("slipway.dev/v1alpha1", "Cluster")!;
const connections = registry.byKind("slipway.dev/v1alpha1", "Connection")!;
const namespaces = registry.byKind("v1", "Namespace")!;

function cluster(name: string, replicas = 1): Record<string, unknown> {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name, labels: { team: "a" } },
    spec: { controlPlane: { connection: "east", machineType: "s1.medium", replicas }, workers: [] },
  };
}

describe("ObjectService", () => {
  let store: SqliteStore;
  let objects: ObjectService;

  beforeEach(async () => {
    store = SqliteStore.open(":memory:");
    objects = new ObjectService(registry, store);
    await ensureDefaultNamespaces(objects);
  });
  afterEach(async () => store.close());

  it("creates with server fields and defaults, and refuses a second create", async () => {
    const { object } = await objects.create(clusters, "default", cluster("a"));
    assert.match(object.metadata.uid!, /^[0-9a-f-]{36}$/);
    assert.equal(object.metadata.generation, 1);
    assert.equal(object.metadata.namespace, "default");
    assert.equal((object.spec as { kubernetesVersion: string }).kubernetesVersion, "v1.31.2");
    await assert.rejects(objects.create(clusters, "default", cluster("a")), AlreadyExistsError);
  });

  it("generates names from generateName", async () => {
    const body = cluster("x");
    body.metadata = { generateName: "gen-" };
    const { object } = await objects.create(clusters, "default", body);
    assert.match(object.metadata.name!, /^gen-[a-z0-9]{5}$/);
  });

  it("refuses invalid objects with every field named, and writes nothing", async () => {
    const before = await store.revision();
    const bad = cluster("bad", 2) as { spec: Record<string, unknown> };
    bad.spec.colour = "blue";
    const error = await objects.create(clusters, "default", bad).catch((e: unknown) => e);
    assert.ok(error instanceof InvalidError);
    assert.deepEqual(error.fieldErrors.map((e) => e.field).sort(), ["spec.colour"]);
    const error2 = (await objects.create(clusters, "default", cluster("bad", 2)).catch((e: unknown) => e)) as InvalidError;
    assert.equal(error2.fieldErrors[0]!.field, "spec.controlPlane.replicas");
    assert.equal(await store.revision(), before);
  });

  it("refuses objects in a missing or terminating namespace", async () => {
    await assert.rejects(objects.create(clusters, "nowhere", cluster("a")), NotFoundError);
    await objects.create(namespaces, undefined, { metadata: { name: "going" } });
    await objects.delete(namespaces, undefined, "going");
    await assert.rejects(objects.create(clusters, "going", cluster("a")), ForbiddenError);
  });

  it("raises the generation on spec changes only and keeps status out of main updates", async () => {
    const { object } = await objects.create(clusters, "default", cluster("g"));
    const labelled = await objects.patch(clusters, "default", "g", "merge", { metadata: { labels: { x: "y" } }, status: { phase: "Failed" } });
    assert.equal(labelled.object.metadata.generation, 1);
    assert.deepEqual(labelled.object.status, { phase: "Pending", message: "waiting for the cluster controller" }, "the status the create gave, not the patch's");
    const status = await objects.patch(clusters, "default", "g", "merge", { status: { phase: "Running" }, spec: { paused: true } }, { subresource: "status" });
    assert.equal((status.object.status as { phase: string }).phase, "Running");
    assert.equal((status.object.spec as { paused?: boolean }).paused, undefined);
    const scaled = await objects.patch(clusters, "default", "g", "merge", { spec: { controlPlane: { replicas: 3 } } });
    assert.equal(scaled.object.metadata.generation, 2);
    assert.equal((scaled.object.status as { phase: string }).phase, "Running");
    assert.notEqual(scaled.object.metadata.resourceVersion, object.metadata.resourceVersion);
  });

  it("refuses a stale resourceVersion with a conflict, and skips writes that change nothing", async () => {
    const { object } = await objects.create(clusters, "default", cluster("c"));
    await objects.patch(clusters, "default", "c", "merge", { metadata: { labels: { x: "1" } } });
    await assert.rejects(objects.update(clusters, "default", "c", object), ConflictError);
    const rev = await store.revision();
    const current = await objects.get(clusters, "default", "c");
    await objects.update(clusters, "default", "c", current);
    assert.equal(await store.revision(), rev);
  });

  it("keeps an object with finalizers until they are removed", async () => {
    const body = cluster("f");
    (body.metadata as { finalizers: string[] }).finalizers = ["test/hold"];
    await objects.create(clusters, "default", body);
    const { object: deleting } = await objects.delete(clusters, "default", "f");
    assert.ok(deleting.metadata.deletionTimestamp);
    await assert.rejects(objects.patch(clusters, "default", "f", "merge", { metadata: { finalizers: ["test/hold", "new"] } }), InvalidError);
    await objects.patch(clusters, "default", "f", "merge", { metadata: { finalizers: null } });
    await assert.rejects(objects.get(clusters, "default", "f"), NotFoundError);
  });

  it("lists with selectors and pages with continue tokens at one revision", async () => {
    for (const n of ["p1", "p2", "p3", "p4", "p5"]) await objects.create(clusters, "default", cluster(n));
    const first = await objects.list(clusters, "default", { limit: 2 });
    assert.deepEqual(first.items.map((o) => o.metadata.name), ["p1", "p2"]);
    await objects.create(clusters, "default", cluster("p6"));
    const second = await objects.list(clusters, "default", { limit: 10, continue: first.metadata.continue });
    assert.deepEqual(second.items.map((o) => o.metadata.name), ["p3", "p4", "p5"], "a continued list reads the first page's revision");
    assert.equal(second.metadata.continue, undefined);
    const selected = await objects.list(clusters, undefined, { fieldSelector: "metadata.name=p2" });
    assert.deepEqual(selected.items.map((o) => o.metadata.name), ["p2"]);
    assert.equal((await objects.list(clusters, "default", { labelSelector: "team notin (a)" })).items.length, 0);
    await assert.rejects(objects.list(clusters, "default", { fieldSelector: "spec.colour=blue" }), BadRequestError);
  });

  it("says on every page of a paged list how many remain at the first page's revision", async () => {
    await objects.create(namespaces, undefined, { metadata: { name: "qs" } });
    for (const n of ["q1", "q2", "q3", "q4", "q5", "q6", "q7"]) await objects.create(clusters, "qs", cluster(n));
    const pages: [string[], number | undefined][] = [];
    let page = await objects.list(clusters, "qs", { limit: 2 });
    pages.push([page.items.map((o) => o.metadata.name!), page.metadata.remainingItemCount]);
    // Changes after the first page do not change what the later pages count.
    await objects.delete(clusters, "qs", "q5");
    await objects.create(clusters, "qs", cluster("q45"));
    while (page.metadata.continue) {
      page = await objects.list(clusters, "qs", { limit: 2, continue: page.metadata.continue });
      pages.push([page.items.map((o) => o.metadata.name!), page.metadata.remainingItemCount]);
    }
    assert.deepEqual(pages, [
      [["q1", "q2"], 5],
      [["q3", "q4"], 3],
      [["q5", "q6"], 1],
      [["q7"], undefined],
    ]);
  });

  it("watches with selectors: objects leaving the selection are DELETED for the watcher", async () => {
    await objects.create(clusters, "default", cluster("w1"));
    const start = await objects.list(clusters, "default");
    const events: ObjectEvent[] = [];
    const watch = await objects.watch(clusters, "default", { resourceVersion: start.metadata.resourceVersion, labelSelector: "team=a" }, (e) => events.push(e), (e) => assert.fail(e));
    await objects.create(clusters, "default", cluster("w2"));
    await objects.patch(clusters, "default", "w1", "merge", { metadata: { labels: { team: "b" } } });
    await objects.delete(clusters, "default", "w2");
    await objects.create(connections, "default", { metadata: { name: "other" }, spec: { provider: "sim", region: "sim-east-1" } });
    const deadline = Date.now() + 5000;
    while (events.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    watch.close();
    assert.deepEqual(events.map((e) => `${e.type} ${e.object.metadata.name}`), ["ADDED w2", "DELETED w1", "DELETED w2"]);
  });

  it("starts a watch without a resourceVersion with the current objects", async () => {
    await objects.create(clusters, "default", cluster("s1"));
    const events: ObjectEvent[] = [];
    const watch = await objects.watch(clusters as KindDefinition, "default", {}, (e) => events.push(e), () => undefined);
    watch.close();
    assert.deepEqual(events.map((e) => `${e.type} ${(e.object as KubeObject).metadata.name}`), ["ADDED s1"]);
  });

  it("answers a list as JSON text equal to the decoded list, for values stored before the stored form too", async () => {
    await objects.create(clusters, "default", { spec: cluster("x").spec, kind: "Cluster", metadata: { name: "body-order" }, apiVersion: "slipway.dev/v1alpha1" });
    await objects.create(clusters, "default", cluster("b"));
    await objects.patch(clusters, "default", "b", "merge", { status: { phase: "Running" } }, { subresource: "status" });
    // A value as an earlier release stored it: the body's key order, no apiVersion or kind.
    const old = { metadata: { name: "c-old", namespace: "default", uid: "0b0c5c4e-1d2e-4f5a-8b6c-7d8e9f0a1b2c", labels: { team: "b" } }, spec: cluster("c").spec };
    await store.create("/registry/slipway.dev/clusters/default/c-old", JSON.stringify(old));
    for (const options of [{}, { labelSelector: "team=a" }, { limit: 2 }]) {
      const list = await objects.list(clusters, "default", options);
      const text = JSON.parse(await objects.listJson(clusters, "default", options));
      assert.deepEqual(text, JSON.parse(JSON.stringify(list)));
    }
    const all = JSON.parse(await objects.listJson(clusters, "default"));
    assert.deepEqual(all.items.map((o: KubeObject) => `${o.apiVersion} ${o.kind} ${o.metadata.name} ${o.metadata.resourceVersion}`), (await objects.list(clusters, "default")).items.map((o) => `slipway.dev/v1alpha1 Cluster ${o.metadata.name} ${o.metadata.resourceVersion}`));
    assert.equal(all.items.find((o: KubeObject) => o.metadata.name === "b").status.phase, "Running");
  });

  it("answers a list as JSON text in pieces of a few items each, equal to the whole text", async () => {
    for (const name of ["p1", "p2", "p3", "p4", "p5"]) await objects.create(clusters, "default", cluster(name));
    for (const options of [{}, { limit: 3 }, { labelSelector: "team=nobody" }]) {
      const chunks = [...(await objects.listJsonChunks(clusters, "default", options, 2))];
      assert.equal(chunks.join(""), await objects.listJson(clusters, "default", options));
      const items = JSON.parse(chunks.join("")).items.length;
      // The list's head, then the items two at a time, then the end of the list.
      assert.equal(chunks.length, 2 + Math.ceil(items / 2));
      assert.deepEqual(chunks.slice(1, -1).map((chunk) => JSON.parse(`[${chunk.replace(/^,/, "")}]`).length), Array.from({ length: Math.ceil(items / 2) }, (_, i) => Math.min(2, items - 2 * i)));
    }
  });
});

describe("nowTimestamp", () => {
  it("spells a moment as its whole second in UTC, whatever came before it", () => {
    const spelled = ["2026-01-01T00:00:00.999Z", "2026-01-01T00:00:01.000Z", "2026-01-01T00:00:01.500Z", "1999-12-31T23:59:59.500Z", "1969-12-31T23:59:59.500Z", "2026-01-01T00:00:00.000Z"].map((iso) => nowTimestamp(new Date(iso)));
    assert.deepEqual(spelled, ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:01Z", "1999-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "2026-01-01T00:00:00Z"]);
  });
});
