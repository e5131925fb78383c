// Collections as the ecosystem's clients use them: pages that fill under a selector and say how many
// remain, resourceVersion/resourceVersionMatch, watch flags spelled as Go parses booleans,
// deletecollection, orphanDependents, and the OpenAPI v2 document kubectl validates a `v1 List` with.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { defaultRegistry } from "../api/kinds.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { RequestAttributes } from "./authorization/types.ts";
import { FINALIZER_ORPHAN, ObjectService } from "./objects.ts";
import { decodeOpenApiV2, OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_RESPONSE } from "./openapi-v2.ts";
import { testApiServer } from "./testing.ts";

const registry = defaultRegistry();
const CONFIGMAPS = "/api/v1/namespaces/default/configmaps";

interface List {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: { metadata: { name: string; labels?: Record<string, string>; finalizers?: string[]; deletionTimestamp?: string } }[];
}

describe("collections, paging and the OpenAPI v2 document", () => {
  const store = SqliteStore.open(":memory:");
  const asked: RequestAttributes[] = [];
  const objects = new ObjectService(registry, store, {
    authorizer: {
      authorize(request) {
        asked.push(request);
        return request.identity.user === "reader" && request.verb !== "get" && request.verb !== "list" ? { allowed: false, reason: "reads only" } : { allowed: true };
      },
    },
  });
  let app: FastifyInstance;
  const configMaps = registry.byKind("v1", "ConfigMap")!;

  before(async () => {
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
    // 20 config maps; every fifth one is labelled tier=gold.
    for (let i = 0; i < 20; i++) {
      const name = `cm-${String(i).padStart(2, "0")}`;
      await objects.create(configMaps, "default", { metadata: { name, labels: { tier: i % 5 === 0 ? "gold" : "plain" } }, data: { i: String(i) } });
    }
    app = await testApiServer(objects, [
      ["admin-token", { user: "admin", groups: [] }],
      ["reader-token", { user: "reader", groups: [] }],
    ]);
  });

  after(async () => {
    await app.close();
    await store.close();
  });

  const call = (method: "GET" | "DELETE" | "POST", url: string, options: { token?: string; body?: unknown; accept?: string } = {}) =>
    app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${options.token ?? "admin-token"}`,
        "content-type": "application/json",
        ...(options.accept ? { accept: options.accept } : {}),
      },
      ...(options.body ? { payload: JSON.stringify(options.body) } : {}),
    });
  const list = async (query: string) => {
    const reply = await call("GET", `${CONFIGMAPS}?${query}`);
    assert.equal(reply.statusCode, 200, reply.body);
    return reply.json<List>();
  };
  const names = (l: List) => l.items.map((i) => i.metadata.name);

  it("fills every page under a selector and carries on from where the page stopped", async () => {
    const first = await list("labelSelector=tier%3Dgold&limit=2");
    assert.deepEqual(names(first), ["cm-00", "cm-05"]);
    assert.ok(first.metadata.continue, "a full page with more to come carries continue");
    assert.equal(first.metadata.remainingItemCount, undefined, "a filtered list cannot count what remains");
    const second = await list(`labelSelector=tier%3Dgold&limit=2&continue=${first.metadata.continue}`);
    assert.deepEqual(names(second), ["cm-10", "cm-15"]);
    // Nothing matches after cm-15: the last page ends the list.
    if (second.metadata.continue) {
      const third = await list(`labelSelector=tier%3Dgold&limit=2&continue=${second.metadata.continue}`);
      assert.deepEqual(names(third), []);
      assert.equal(third.metadata.continue, undefined);
    }
  });

  it("says how many items remain after an unfiltered page", async () => {
    const first = await list("limit=6");
    assert.equal(first.items.length, 6);
    assert.equal(first.metadata.remainingItemCount, 14);
    const next = await list(`limit=6&continue=${first.metadata.continue}`);
    assert.equal(next.metadata.remainingItemCount, 8);
    const all = await list("limit=20");
    assert.equal(all.metadata.continue, undefined);
    assert.equal(all.metadata.remainingItemCount, undefined);
  });

  it("reads an exact resource version, and refuses what kube-apiserver refuses", async () => {
    const before = await list("");
    await objects.create(configMaps, "default", { metadata: { name: "late" } });
    const then = await list(`resourceVersion=${before.metadata.resourceVersion}&resourceVersionMatch=Exact`);
    assert.equal(then.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.ok(!names(then).includes("late"), "the list of then has no object made after it");
    const now = await list(`resourceVersion=${before.metadata.resourceVersion}&resourceVersionMatch=NotOlderThan`);
    assert.ok(names(now).includes("late"));
    assert.ok(names(await list("resourceVersion=0")).includes("late"));

    const refused = async (query: string, code: number, message: RegExp) => {
      const reply = await call("GET", `${CONFIGMAPS}?${query}`);
      assert.equal(reply.statusCode, code, `${query}: ${reply.body}`);
      assert.match(reply.json<{ message: string }>().message, message);
    };
    await refused("resourceVersionMatch=Exact", 400, /resourceVersionMatch is forbidden unless resourceVersion is provided/);
    await refused("resourceVersion=0&resourceVersionMatch=Exact", 400, /forbidden for resourceVersion "0"/);
    await refused("resourceVersion=1&resourceVersionMatch=Newest", 400, /Unsupported value: "Newest"/);
    await refused("resourceVersion=abc", 400, /invalid resourceVersion "abc"/);
    await refused(`resourceVersion=${Number(before.metadata.resourceVersion) + 1000}`, 504, /Too large resource version/);
    const page = await list("limit=2");
    await refused(`limit=2&continue=${page.metadata.continue}&resourceVersion=1`, 400, /not allowed when using continue/);
    await objects.delete(configMaps, "default", "late");
  });

  it("reads ?watch as Go parses booleans (the Python client sends True)", async () => {
    const plain = await call("GET", `${CONFIGMAPS}?watch=False`);
    assert.equal(plain.statusCode, 200);
    assert.ok(Array.isArray(plain.json<List>().items), "watch=False is a list");
    const bad = await call("GET", `${CONFIGMAPS}?watch=yes`);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json<{ message: string }>().message, /watch must be a boolean/);
  });

  it("sends a watch its last bookmark just before the timeout ends it, and none before on a quiet collection", async () => {
    const listed = await list("");
    const started = Date.now();
    const reply = await call("GET", `${CONFIGMAPS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion=${listed.metadata.resourceVersion}`);
    const elapsed = Date.now() - started;
    assert.equal(reply.statusCode, 200, reply.body);
    const events = reply.body
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; object: { metadata: { resourceVersion: string } } });
    // Bookmarks come about once a minute, as kube-apiserver sends them: within 3 s only the one before the end.
    assert.deepEqual(
      events.map((e) => [e.type, e.object.metadata.resourceVersion]),
      [["BOOKMARK", listed.metadata.resourceVersion]],
    );
    assert.ok(elapsed >= 2900, `the watch lasted its timeout (${elapsed} ms)`);
  });

  it("sends bookmarks at the interval it is given", async () => {
    const frequent = await testApiServer(objects, [["admin-token", { user: "admin", groups: [] }]], { bookmarkIntervalMs: 200 });
    try {
      const reply = await frequent.inject({ method: "GET", url: `${CONFIGMAPS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=0`, headers: { authorization: "Bearer admin-token" } });
      const types = reply.body.split("\n").filter(Boolean).map((line) => (JSON.parse(line) as { type: string }).type);
      const bookmarks = types.filter((t) => t === "BOOKMARK").length;
      assert.ok(bookmarks >= 3 && bookmarks <= 5, `bookmarks every 200 ms of a 1 s watch: ${bookmarks}`);
      const plain = await frequent.inject({ method: "GET", url: `${CONFIGMAPS}?watch=true&timeoutSeconds=1&resourceVersion=0`, headers: { authorization: "Bearer admin-token" } });
      assert.ok(!plain.body.includes('"BOOKMARK"'), "no bookmarks unless asked for");
    } finally {
      await frequent.close();
    }
  });

  it("deletes a collection by selector, authorized once as deletecollection, honouring finalizers", async () => {
    await objects.create(configMaps, "default", { metadata: { name: "held", labels: { tier: "gold" }, finalizers: ["example.com/hold"] } });
    const refused = await call("DELETE", `${CONFIGMAPS}?labelSelector=tier%3Dgold`, { token: "reader-token" });
    assert.equal(refused.statusCode, 403, refused.body);
    asked.length = 0;
    const reply = await call("DELETE", `${CONFIGMAPS}?labelSelector=tier%3Dgold`);
    assert.equal(reply.statusCode, 200, reply.body);
    assert.deepEqual(names(reply.json<List>()).sort(), ["cm-00", "cm-05", "cm-10", "cm-15", "held"]);
    assert.deepEqual(
      asked.map((a) => a.verb),
      ["deletecollection"],
    );
    const left = await list("");
    assert.equal(left.items.length, 17, "the 16 plain ones and the held one are left");
    const held = left.items.find((i) => i.metadata.name === "held");
    assert.ok(held?.metadata.deletionTimestamp, "an object with a finalizer is only marked");
    await objects.patch(configMaps, "default", "held", "merge", { metadata: { finalizers: null } });

    const across = await call("DELETE", "/api/v1/configmaps");
    assert.equal(across.statusCode, 405);
    const discovery = await call("GET", "/api/v1");
    const resource = discovery.json<{ resources: { name: string; verbs: string[] }[] }>().resources.find((r) => r.name === "configmaps");
    assert.ok(resource?.verbs.includes("deletecollection"));
  });

  it("takes orphanDependents as the older spelling of propagationPolicy, never both", async () => {
    await objects.create(configMaps, "default", { metadata: { name: "parent" } });
    const orphaned = await call("DELETE", `${CONFIGMAPS}/parent`, { body: { orphanDependents: true } });
    assert.equal(orphaned.statusCode, 200, orphaned.body);
    assert.deepEqual(orphaned.json<List["items"][number]>().metadata.finalizers, [FINALIZER_ORPHAN]);
    const both = await call("DELETE", `${CONFIGMAPS}/cm-01?orphanDependents=false&propagationPolicy=Foreground`);
    assert.equal(both.statusCode, 422, both.body);
    assert.match(both.json<{ message: string }>().message, /cannot be both set/);
  });

  it("serves OpenAPI v2 as JSON and in the protobuf form kubectl asks for, with every kind's schema", async () => {
    const json = await call("GET", "/openapi/v2");
    assert.equal(json.statusCode, 200);
    const document = json.json<{ swagger: string; definitions: Record<string, { "x-kubernetes-group-version-kind": unknown[]; properties: Record<string, unknown> }> }>();
    assert.equal(document.swagger, "2.0");
    const cluster = document.definitions["dev.slipway.v1alpha1.Cluster"];
    assert.deepEqual(cluster?.["x-kubernetes-group-version-kind"], [{ group: "slipway.dev", kind: "Cluster", version: "v1alpha1" }]);
    assert.ok(cluster?.properties.spec);

    const proto = await call("GET", "/openapi/v2", { accept: OPENAPI_V2_PROTOBUF });
    assert.equal(proto.statusCode, 200);
    assert.equal(proto.headers["content-type"], OPENAPI_V2_PROTOBUF_RESPONSE);
    const decoded = decodeOpenApiV2(proto.rawPayload) as {
      swagger: string;
      definitions: { additionalProperties: { name: string; value: { type?: { value: string[] }; vendorExtension?: { name: string; value: { yaml: string } }[] } }[] };
    };
    assert.equal(decoded.swagger, "2.0");
    const configMap = decoded.definitions.additionalProperties.find((d) => d.name === "io.k8s.api.core.v1.ConfigMap");
    assert.deepEqual(configMap?.value.type?.value, ["object"]);
    const gvk = configMap?.value.vendorExtension?.find((e) => e.name === "x-kubernetes-group-version-kind");
    assert.match(gvk?.value.yaml ?? "", /kind: ConfigMap/);
    assert.equal(decoded.definitions.additionalProperties.length, Object.keys(document.definitions).length);
  });
});

describe("bookmarks of a quiet collection", () => {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(registry, store);
  let app: FastifyInstance;

  before(async () => {
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
    await objects.create(registry.byKind("v1", "ConfigMap")!, "default", { metadata: { name: "quiet" } });
    app = await testApiServer(objects, [["admin-token", { user: "admin", groups: [] }]], { bookmarkIntervalMs: 100 });
  });

  after(async () => {
    await app.close();
    await store.close();
  });

  const watch = (resourceVersion: string) =>
    app.inject({
      method: "GET",
      url: `${CONFIGMAPS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=${resourceVersion}`,
      headers: { authorization: "Bearer admin-token" },
    });
  const events = (body: string) => body.split("\n").filter(Boolean).map((line) => JSON.parse(line) as { type: string; object: { metadata?: { resourceVersion?: string }; code?: number } });

  it("carry the store's revision past other kinds' writes, so a watch resumed from one goes on after they were compacted", async () => {
    const listed = (await app.inject({ method: "GET", url: CONFIGMAPS, headers: { authorization: "Bearer admin-token" } })).json<List>().metadata.resourceVersion;
    // Other kinds change; the config maps do not.
    for (let i = 0; i < 5; i++) await objects.create(registry.byKind("v1", "Secret")!, "default", { metadata: { name: `s-${i}` }, stringData: { i: String(i) } });
    const head = await store.revision();
    assert.ok(head > Number(listed));

    const first = events((await watch(listed)).body);
    assert.ok(first.length > 0 && first.every((e) => e.type === "BOOKMARK"), JSON.stringify(first));
    assert.equal(first.at(-1)!.object.metadata?.resourceVersion, String(head), "the bookmark is as far as the store, not the collection's last change");

    // History up to the head is forgotten: a watch from the collection's own last version is too old, one
    // from the bookmark is not.
    await store.compact(head);
    const stale = events((await watch(listed)).body);
    assert.deepEqual(stale.map((e) => [e.type, e.object.code]), [["ERROR", 410]]);
    const resumed = events((await watch(String(head))).body);
    assert.ok(resumed.length > 0 && resumed.every((e) => e.type === "BOOKMARK"), JSON.stringify(resumed));
  });
});
