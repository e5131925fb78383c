// Tables as `kubectl get` receives them: the rows made from the stored text and kept by object version
// say exactly what a Table made of the decoded objects says, follow every write, and age with the clock.
import { after, afterEach, before, describe, it, mock } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { defaultRegistry } from "../api/kinds.ts";
import type { KubeObject } from "../api/meta.ts";
import type { KindDefinition } from "../api/registry.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { Store } from "../store/store.ts";
import { ObjectService, storedHead } from "./objects.ts";
import { TableRows, toTable, type IncludeObject, type Table } from "./table.ts";
import { testApiServer } from "./testing.ts";

const registry = defaultRegistry();
const clusters = registry.byKind("slipway.dev/v1alpha1", "Cluster")!;
const CLUSTERS = "/apis/slipway.dev/v1alpha1/namespaces/default/clusters";
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json";
const START = Date.UTC(2026, 10, 1, 12, 0, 0);

function cluster(name: string, labels: Record<string, string> = {}) {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name, labels },
    spec: { kubernetesVersion: "v1.31.2", controlPlane: { connection: "east", machineType: "s1.medium", replicas: 1 }, workers: [{ name: "pool", connection: "east", machineType: "s1.small", replicas: 3 }] },
  };
}

describe("Tables of lists", () => {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(registry, store);
  let app: FastifyInstance;

  before(async () => {
    mock.timers.enable({ apis: ["Date"], now: START });
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
    for (let i = 0; i < 5; i++) await objects.create(clusters, "default", cluster(`c-${i}`, { tier: i % 2 === 0 ? "gold" : "plain" }), { context: { identity: { user: "admin", groups: [] }, fieldManager: "kubectl" } });
    await objects.patch(clusters, "default", "c-1", "merge", { status: { phase: "Provisioning" } }, { subresource: "status" });
    app = await testApiServer(objects, [["admin-token", { user: "admin", groups: [] }]]);
  });

  after(async () => {
    mock.timers.reset();
    await app.close();
    await store.close();
  });

  const table = async (query = "", include?: IncludeObject) => {
    const reply = await app.inject({
      method: "GET",
      url: `${CLUSTERS}?${query}${include ? `&includeObject=${include}` : ""}`,
      headers: { authorization: "Bearer admin-token", accept: TABLE },
    });
    assert.equal(reply.statusCode, 200, reply.body);
    assert.match(String(reply.headers["content-type"]), /^application\/json/);
    return reply.json<Table>();
  };
  const made = async (include: IncludeObject, options: { labelSelector?: string } = {}) => {
    const list = await objects.list(clusters, "default", options);
    return JSON.parse(JSON.stringify(toTable(clusters, list.items, { includeObject: include, resourceVersion: list.metadata.resourceVersion }))) as Table;
  };
  const phases = (t: Table) => t.rows.map((r) => [r.cells[0], r.cells[1]]);

  it("says what a Table of the decoded objects says, for each includeObject, asked twice", async () => {
    for (const include of ["Metadata", "Object", "None"] as const) {
      for (let round = 0; round < 2; round++) assert.deepEqual(await table("", include), await made(include), `${include}, round ${round}`);
    }
    const rows = (await table()).rows;
    const metadata = (rows[0]!.object as { metadata: KubeObject["metadata"] }).metadata;
    assert.equal(metadata.name, "c-0");
    assert.ok(metadata.managedFields?.length, "the row's metadata is the whole of it, managed fields too");
    assert.equal(metadata.resourceVersion, (await objects.get(clusters, "default", "c-0")).metadata.resourceVersion);
  });

  it("follows a write: the row of the new version, not the one kept", async () => {
    await table();
    await objects.patch(clusters, "default", "c-3", "merge", { status: { phase: "Running" } }, { subresource: "status" });
    await objects.patch(clusters, "default", "c-4", "merge", { metadata: { labels: { tier: "silver" } } });
    const after = await table();
    assert.deepEqual(phases(after), [["c-0", "Pending"], ["c-1", "Provisioning"], ["c-2", "Pending"], ["c-3", "Running"], ["c-4", "Pending"]]);
    assert.deepEqual(after, await made("Metadata"));
    const labels = (after.rows[4]!.object as { metadata: KubeObject["metadata"] }).metadata.labels;
    assert.deepEqual(labels, { tier: "silver" });
  });

  it("ages with the clock while the rows are kept", async () => {
    const ageColumn = (await table()).columnDefinitions.findIndex((c) => c.name === "AGE");
    assert.ok(ageColumn > 0);
    assert.equal((await table()).rows[0]!.cells[ageColumn], "0s");
    mock.timers.tick(3 * 60_000);
    assert.equal((await table()).rows[0]!.cells[ageColumn], "3m");
    mock.timers.tick(2 * 86_400_000);
    assert.equal((await table()).rows[0]!.cells[ageColumn], "2d");
  });

  it("keeps selectors, pages and their continue tokens", async () => {
    assert.deepEqual(
      (await table("labelSelector=tier%3Dgold")).rows.map((r) => r.cells[0]),
      (await made("Metadata", { labelSelector: "tier=gold" })).rows.map((r) => r.cells[0]),
    );
    const first = await table("limit=2");
    assert.deepEqual(first.rows.map((r) => r.cells[0]), ["c-0", "c-1"]);
    assert.ok(first.metadata.continue);
    const second = await table(`limit=2&continue=${encodeURIComponent(first.metadata.continue)}`);
    assert.deepEqual(second.rows.map((r) => r.cells[0]), ["c-2", "c-3"]);
    assert.equal(second.metadata.resourceVersion, first.metadata.resourceVersion);
    const bad = await app.inject({ method: "GET", url: `${CLUSTERS}?labelSelector=tier%3D%3D%3D`, headers: { authorization: "Bearer admin-token", accept: TABLE } });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json<{ kind: string }>().kind, "Status");
  });
});

describe("Tables read sparsely", () => {
  const sqlite = SqliteStore.open(":memory:");
  let valuesRead = 0;
  // The store as the object service sees it, counting the values its lists read.
  const store = new Proxy(sqlite, {
    get(target, property) {
      if (property === "list") {
        return async (...args: Parameters<Store["list"]>) => {
          const result = await target.list(...args);
          valuesRead += result.items.length;
          return result;
        };
      }
      if (property === "listSparse") {
        return async (...args: Parameters<NonNullable<Store["listSparse"]>>) => {
          const result = await target.listSparse(...args);
          valuesRead += result.items.filter((kv) => kv.value !== undefined).length;
          return result;
        };
      }
      const value = Reflect.get(target, property) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  const objects = new ObjectService(registry, store);
  let app: FastifyInstance;

  before(async () => {
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
    for (let i = 0; i < 4; i++) await objects.create(clusters, "default", cluster(`s-${i}`, { tier: i % 2 === 0 ? "gold" : "plain" }));
    app = await testApiServer(objects, [["admin-token", { user: "admin", groups: [] }]]);
  });
  after(async () => {
    await app.close();
    await sqlite.close();
  });

  const read = async (query = "") => {
    valuesRead = 0;
    const reply = await app.inject({ method: "GET", url: `${CLUSTERS}?${query}`, headers: { authorization: "Bearer admin-token", accept: TABLE } });
    assert.equal(reply.statusCode, 200, reply.body);
    return { table: reply.json<Table>(), valuesRead };
  };
  const made = async () => {
    const list = await objects.list(clusters, "default");
    return JSON.parse(JSON.stringify(toTable(clusters, list.items, { includeObject: "Metadata", resourceVersion: list.metadata.resourceVersion }))) as Table;
  };

  it("reads the values of the rows not kept only, and says the same as a Table of the decoded objects", async () => {
    const first = await read();
    assert.equal(first.valuesRead, 4, "nothing kept yet");
    assert.deepEqual(first.table, await made());
    const again = await read();
    assert.equal(again.valuesRead, 0, "every row kept");
    assert.deepEqual(again.table, await made());

    await objects.patch(clusters, "default", "s-2", "merge", { status: { phase: "Running" } }, { subresource: "status" });
    await objects.patch(clusters, "default", "s-3", "merge", { metadata: { labels: { tier: "silver" } } });
    const changed = await read();
    assert.equal(changed.valuesRead, 2, "the two written since");
    assert.deepEqual(changed.table, await made());
    assert.deepEqual(
      changed.table.rows.map((r) => [r.cells[0], r.cells[1], (r.object as { metadata: KubeObject["metadata"] }).metadata.labels?.tier]),
      [["s-0", "Pending", "gold"], ["s-1", "Pending", "plain"], ["s-2", "Running", "gold"], ["s-3", "Pending", "silver"]],
    );

    const page = await read("limit=3");
    assert.deepEqual([page.table.rows.length, page.valuesRead], [3, 0]);
    assert.deepEqual((await read(`limit=3&continue=${encodeURIComponent(page.table.metadata.continue!)}`)).table.rows.map((r) => r.cells[0]), ["s-3"]);
    // A selector decodes every object, and a row that carries the whole object needs its value.
    assert.deepEqual((await read("labelSelector=tier%3Dgold")).valuesRead, 4);
    assert.deepEqual((await read("includeObject=Object")).valuesRead, 4);
    // A version listed at a past revision is read whole (the store keeps no key index of the past).
    const past = await read(`limit=2&resourceVersion=${first.table.metadata.resourceVersion}&resourceVersionMatch=Exact`);
    assert.deepEqual(past.table.rows.map((r) => r.cells[1]), ["Pending", "Pending"]);
  });
});

describe("TableRows", () => {
  const configMaps = registry.byKind("v1", "ConfigMap")!;
  const head = storedHead(configMaps);
  const stored = (revision: number, data: Record<string, string>) => {
    const object = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "default", uid: "u-1", creationTimestamp: "2026-11-01T12:00:00Z" }, data };
    return { key: "/registry/core/configmaps/default/cm", revision, text: JSON.stringify(object), object };
  };
  let decodes = 0;
  const decoder = (text: string, revision: number) => () => {
    decodes++;
    const object = JSON.parse(text) as KubeObject;
    object.metadata.resourceVersion = String(revision);
    return object;
  };
  const row = (rows: TableRows, def: KindDefinition, revision: number, data: Record<string, string>, now = START) => {
    const { key, text } = stored(revision, data);
    return JSON.parse(rows.rowsOf(def, head, "Metadata", now)({ key, revision, text }, decoder(text, revision), () => text)) as { cells: unknown[]; object: { metadata: Record<string, unknown> } };
  };
  afterEach(() => {
    decodes = 0;
  });

  it("parses a version once, and again once it changes", () => {
    const rows = new TableRows();
    const first = row(rows, configMaps, 7, { a: "1" });
    assert.deepEqual(first.cells, ["cm", 1, "0s"]);
    assert.deepEqual(first.object.metadata, { resourceVersion: "7", name: "cm", namespace: "default", uid: "u-1", creationTimestamp: "2026-11-01T12:00:00Z" });
    assert.equal(decodes, 1);
    assert.deepEqual(row(rows, configMaps, 7, { a: "1" }, START + 90_000).cells, ["cm", 1, "90s"]);
    assert.equal(decodes, 1, "the kept row is used");
    assert.deepEqual(row(rows, configMaps, 9, { a: "1", b: "2" }).cells, ["cm", 2, "0s"]);
    assert.equal(decodes, 2);
  });

  it("makes a column that reads the clock anew every time", () => {
    let clock = 0;
    const ticking: KindDefinition = {
      ...configMaps,
      printerColumns: [...configMaps.printerColumns, { name: "TICK", type: "integer", jsonPath: ".data", description: "", value: () => ++clock, readsClock: true }],
    };
    const rows = new TableRows();
    assert.equal(row(rows, ticking, 7, {}).cells.at(-1), 1);
    assert.equal(row(rows, ticking, 7, {}).cells.at(-1), 2);
    assert.equal(decodes, 2);
  });

  it("makes a kept row without the text, and refuses a row it neither keeps nor is given the text of", () => {
    const rows = new TableRows();
    const made = row(rows, configMaps, 7, { a: "1" });
    const kept = rows.kept("/registry/core/configmaps/default/cm", 7);
    assert.ok(kept);
    assert.equal(rows.kept("/registry/core/configmaps/default/cm", 8), undefined, "another version is not kept");
    const render = rows.rowsOf(configMaps, head, "Metadata", START);
    const fromKept = JSON.parse(render({ key: "/registry/core/configmaps/default/cm", revision: 7, kept }, () => assert.fail("not decoded"), () => assert.fail("no text")));
    assert.deepEqual(fromKept, made);
    assert.throws(() => render({ key: "/registry/core/configmaps/default/other", revision: 3 }, () => assert.fail("not decoded"), () => assert.fail("no text")), /neither kept nor read/);
  });

  it("forgets the oldest rows past its size", () => {
    const rows = new TableRows(1);
    row(rows, configMaps, 7, {});
    const other = stored(8, {});
    rows.rowsOf(configMaps, head, "None", START)({ key: "/registry/core/configmaps/default/other", revision: 8, text: other.text }, decoder(other.text, 8), () => other.text);
    row(rows, configMaps, 7, {});
    assert.equal(decodes, 3);
  });
});
