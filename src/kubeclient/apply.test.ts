// The apply engine against an API held in memory: what a user of `slipway apply` (or a synchroniser)
// sees happen to the objects on the server.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Applier, NamespaceMismatchError, UnknownKindError, applyOrder, type ApplyOutcome } from "./apply.ts";
import { KubeClient, type KubeObject } from "./client.ts";
import { LAST_APPLIED_ANNOTATION } from "./client-side-apply.ts";
import { KubeInvalidError, KubeUnreachableError } from "./errors.ts";
import { CONFIG_MAPS, FakeApi, NAMESPACES, WIDGETS } from "./testing.ts";

const namespace = (name: string): KubeObject => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
const configMap = (name: string, data: Record<string, string>, metadata: Partial<KubeObject["metadata"]> = {}): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, ...metadata },
  data,
});
const widget = (name: string, spec: Record<string, unknown>, metadata: Partial<KubeObject["metadata"]> = {}): KubeObject => ({
  apiVersion: "example.dev/v1",
  kind: "Widget",
  metadata: { name, ...metadata },
  spec,
});

function setup(namespaces: string[] = ["default"]) {
  const api = new FakeApi();
  for (const name of namespaces) api.put(namespace(name));
  const client = new KubeClient({ transport: api });
  return { api, client };
}

const summary = (outcomes: ApplyOutcome[]) => outcomes.map((o) => (o.error ? `${o.ref.kind}/${o.ref.name} error` : `${o.ref.kind}/${o.ref.name} ${o.action}`));

describe("Applier.apply", () => {
  it("creates an absent object in the client's namespace, recording what was applied", async () => {
    const { api, client } = setup();
    const result = await new Applier(client).apply(configMap("settings", { colour: "blue" }, { labels: { app: "demo" } }));
    assert.equal(result.action, "created");
    const stored = api.stored(CONFIG_MAPS, "default", "settings")!;
    assert.deepEqual(stored.data, { colour: "blue" });
    assert.deepEqual(JSON.parse(stored.metadata.annotations![LAST_APPLIED_ANNOTATION]!), {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { annotations: {}, labels: { app: "demo" }, name: "settings", namespace: "default" },
      data: { colour: "blue" },
    });
  });

  it("reports an object applied again as unchanged, without writing", async () => {
    const { api, client } = setup();
    const applier = new Applier(client);
    await applier.apply(configMap("settings", { colour: "blue" }));
    const before = api.writes().length;
    const again = await applier.apply(configMap("settings", { colour: "blue" }));
    assert.equal(again.action, "unchanged");
    assert.equal(api.writes().length, before, "nothing was sent");
  });

  it("removes a field dropped from the manifest, and keeps fields the manifest never set", async () => {
    const { api, client } = setup();
    const applier = new Applier(client);
    await applier.apply(configMap("settings", { colour: "blue", size: "L" }, { labels: { app: "demo", tier: "gold" } }));
    // Another writer adds a label of its own.
    const live = api.stored(CONFIG_MAPS, "default", "settings")!;
    api.put({ ...live, metadata: { ...live.metadata, labels: { ...live.metadata.labels, owner: "ops" } } });

    const result = await applier.apply(configMap("settings", { colour: "red" }, { labels: { app: "demo" } }));
    assert.equal(result.action, "configured");
    const stored = api.stored(CONFIG_MAPS, "default", "settings")!;
    assert.deepEqual(stored.data, { colour: "red" }, "size was dropped from the manifest");
    assert.deepEqual(stored.metadata.labels, { app: "demo", owner: "ops" }, "tier removed, the other writer's label kept");
  });

  it("reads a live object a server fills defaults into (inside a list) as unchanged", async () => {
    const { client } = setup();
    const applier = new Applier(client);
    const declared = widget("w", { ports: [{ port: 80 }] });
    assert.equal((await applier.apply(declared)).action, "created");
    // The list differs from the live one (protocol defaulted), so it is sent; the server stores nothing new.
    const again = await applier.apply(declared);
    assert.equal(again.action, "unchanged");
    assert.equal((again.object.spec as { ports: { protocol: string }[] }).ports[0]!.protocol, "TCP");
  });

  it("takes over an object made without a record, removing nothing it did not apply", async () => {
    const { api, client } = setup();
    api.put(configMap("settings", { colour: "blue", size: "L" }, { namespace: "default" }));
    const result = await new Applier(client).apply(configMap("settings", { colour: "blue" }));
    assert.equal(result.action, "configured", "the record is added");
    const stored = api.stored(CONFIG_MAPS, "default", "settings")!;
    assert.deepEqual(stored.data, { colour: "blue", size: "L" });
    assert.ok(stored.metadata.annotations?.[LAST_APPLIED_ANNOTATION]);
  });

  it("leaves status and server-owned metadata of a manifest read back from the server out", async () => {
    const { api, client } = setup();
    const applier = new Applier(client);
    await applier.apply(widget("w", { size: 1 }));
    const readBack = { ...api.stored(WIDGETS, "default", "w")!, status: { phase: "Ready" } };
    assert.equal((await applier.apply(readBack)).action, "unchanged");
  });

  it("throws the server's error for an invalid object, and names an unknown kind", async () => {
    const { client } = setup();
    const applier = new Applier(client);
    await assert.rejects(applier.apply(widget("bad", { size: -1 })), (error: unknown) => error instanceof KubeInvalidError && error.causes[0]?.field === "spec.size");
    await assert.rejects(applier.apply({ apiVersion: "example.dev/v1", kind: "Gadget", metadata: { name: "g" } }), (error: unknown) => {
      assert.ok(error instanceof UnknownKindError);
      assert.equal(error.message, 'Gadget "g": the server has no kind Gadget in example.dev/v1');
      return true;
    });
  });

  it("refuses an object declared in another namespace when the namespace is enforced", async () => {
    const { api, client } = setup(["default", "team-a"]);
    const applier = new Applier(client, { namespace: "team-a", enforceNamespace: true });
    await assert.rejects(applier.apply(configMap("x", {}, { namespace: "default" })), NamespaceMismatchError);
    assert.deepEqual(api.writes(), []);
    assert.equal((await applier.apply(configMap("x", {}))).object.metadata.namespace, "team-a");
  });
});

describe("Applier.applyAll", () => {
  it("applies namespaces and definitions before what lives in them, whatever the manifest's order", async () => {
    const { api, client } = setup([]);
    const report = await new Applier(client).applyAll([
      widget("w", { size: 1 }, { namespace: "apps" }),
      configMap("settings", { a: "1" }, { namespace: "apps" }),
      namespace("apps"),
    ]);
    assert.deepEqual(summary(report.outcomes), ["Namespace/apps created", "ConfigMap/settings created", "Widget/w created"]);
    assert.deepEqual(report.failed, []);
    assert.ok(api.stored(WIDGETS, "apps", "w"));
  });

  it("records a failing object and applies the others; failFast stops at it", async () => {
    const { client } = setup();
    const objects = [widget("bad", { size: -1 }), widget("good", { size: 2 })];
    const seen: string[] = [];
    const report = await new Applier(client).applyAll(objects, { onOutcome: (o) => seen.push(o.ref.name) });
    assert.deepEqual(summary(report.outcomes), ["Widget/bad error", "Widget/good created"]);
    assert.deepEqual(seen, ["bad", "good"], "told in order, as it went");
    assert.ok(report.failed[0]?.error instanceof KubeInvalidError);

    const { client: other, api } = setup();
    await assert.rejects(new Applier(other).applyAll(objects, { failFast: true }), KubeInvalidError);
    assert.equal(api.stored(WIDGETS, "default", "good"), undefined);
  });

  it("stops at once when the server cannot be reached", async () => {
    const { api, client } = setup();
    await client.resource("v1", "ConfigMap");
    api.intercept = (request) => (request.method === "GET" ? new KubeUnreachableError(api.server, "connection refused") : undefined);
    await assert.rejects(new Applier(client).applyAll([configMap("a", {}), configMap("b", {})]), KubeUnreachableError);
  });

  it("prunes what the set applied before and no longer declares, and nothing else", async () => {
    const { api, client } = setup(["default", "other"]);
    const prune = { labels: { "example.dev/set": "one" } };
    const first = await new Applier(client).applyAll([configMap("keep", { a: "1" }), configMap("drop", { a: "1" }), widget("gone", { size: 1 }, { namespace: "other" })], { prune });
    assert.deepEqual(summary(first.outcomes), ["ConfigMap/keep created", "ConfigMap/drop created", "Widget/gone created"]);
    assert.equal(api.stored(CONFIG_MAPS, "default", "keep")!.metadata.labels?.["example.dev/set"], "one", "objects carry the set's labels");
    // Not the set's: another set's object, and one that carries the label but was never applied.
    await new Applier(client).applyAll([configMap("theirs", {})], { prune: { labels: { "example.dev/set": "two" } } });
    api.put(configMap("handmade", {}, { namespace: "default", labels: { "example.dev/set": "one" } }));

    const second = await new Applier(client).applyAll([configMap("keep", { a: "2" })], { prune: { ...prune, kinds: [{ apiVersion: "example.dev/v1", kind: "Widget" }] } });
    assert.deepEqual(summary(second.outcomes), ["ConfigMap/keep configured", "Widget/gone pruned", "ConfigMap/drop pruned"]);
    assert.equal(api.stored(CONFIG_MAPS, "default", "drop"), undefined);
    assert.equal(api.stored(WIDGETS, "other", "gone"), undefined);
    assert.ok(api.stored(CONFIG_MAPS, "default", "theirs"));
    assert.ok(api.stored(CONFIG_MAPS, "default", "handmade"));
    assert.ok(api.stored(NAMESPACES, undefined, "other"));
  });

  it("does not prune an object it could not apply this time", async () => {
    const { api, client } = setup();
    const prune = { labels: { "example.dev/set": "one" } };
    await new Applier(client).applyAll([widget("w", { size: 1 })], { prune });
    const report = await new Applier(client).applyAll([widget("w", { size: -1 })], { prune });
    assert.deepEqual(summary(report.outcomes), ["Widget/w error"]);
    assert.ok(api.stored(WIDGETS, "default", "w"));
  });

  it("refuses prune labels that are no labels", async () => {
    const { client } = setup();
    await assert.rejects(new Applier(client).applyAll([], { prune: { labels: {} } }), /at least one label/);
    await assert.rejects(new Applier(client).applyAll([], { prune: { labels: { "bad key!": "x" } } }), /not a valid label key/);
  });
});

describe("applyOrder", () => {
  it("puts namespaces, then definitions, then workloads, then other kinds, keeping the order within a kind", () => {
    const kinds = ["Cluster", "Deployment", "Connection", "ConfigMap", "CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "DaemonSet", "Namespace"];
    const ordered = applyOrder(kinds.map((kind, i) => ({ kind, i })));
    assert.deepEqual(
      ordered.map((o) => `${o.kind}${o.i}`),
      ["Namespace5", "Namespace9", "CustomResourceDefinition4", "ServiceAccount6", "ConfigMap3", "ClusterRole7", "DaemonSet8", "Deployment1", "Cluster0", "Connection2"],
    );
  });
});
