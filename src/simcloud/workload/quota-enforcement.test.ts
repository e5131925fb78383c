// The ResourceQuota enforcement of a workload cluster's API (src/apiserver/quota/enforcement.ts) over a
// real object service: a write in a namespace without a quota reads no quota, and a quota is enforced
// from its create on, and on a server that finds it already stored.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ForbiddenError } from "../../apiserver/errors.ts";
import { ObjectService } from "../../apiserver/objects.ts";
import { QuotaEnforcement } from "../../apiserver/quota/enforcement.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import type { ListOptions, ListResult, Store } from "../../store/store.ts";
import { workloadRegistry } from "./kinds.ts";

const registry = workloadRegistry();
const configMaps = registry.byKind("v1", "ConfigMap")!;
const quotas = registry.byKind("v1", "ResourceQuota")!;
const namespaces = registry.byKind("v1", "Namespace")!;

/** A store that counts the lists of quotas made through it. */
function countingQuotaLists(store: Store): { store: Store; lists: () => number } {
  let lists = 0;
  const counted = Object.create(store) as Store;
  counted.list = (prefix: string, options?: ListOptions): Promise<ListResult> => {
    if (prefix.includes("/resourcequotas/")) lists++;
    return store.list(prefix, options);
  };
  return { store: counted, lists: () => lists };
}

/** The object service of a cluster's API over `store`, its namespaces made. */
async function serve(store: Store): Promise<ObjectService> {
  const enforcement = new QuotaEnforcement(() => new Date("2026-01-01T00:00:00Z"));
  const objects = new ObjectService(registry, store, { admission: [enforcement.admission], postWrite: [enforcement.hook] });
  for (const name of ["default", "team", "elsewhere"]) {
    if (!(await objects.tryGet(namespaces, undefined, name))) await objects.create(namespaces, undefined, { metadata: { name } });
  }
  return objects;
}

const configMap = (name: string) => ({ metadata: { name }, data: { key: "value" } });

async function refusal(write: Promise<unknown>): Promise<string> {
  try {
    await write;
  } catch (error) {
    assert.ok(error instanceof ForbiddenError, `refused as forbidden, not ${String(error)}`);
    return error.message;
  }
  assert.fail("the write was admitted");
}

describe("a workload cluster's ResourceQuota enforcement", () => {
  it("reads the quotas once, not at every write in a namespace that holds none", async () => {
    const { store, lists } = countingQuotaLists(SqliteStore.open(":memory:"));
    const objects = await serve(store);
    for (let i = 0; i < 5; i++) await objects.create(configMaps, "default", configMap(`cm-${i}`));
    await objects.update(configMaps, "default", "cm-0", { ...(await objects.get(configMaps, "default", "cm-0")), data: { key: "other" } });
    await objects.delete(configMaps, "default", "cm-1");
    assert.equal(lists(), 1, "one list of every quota, when the first write was admitted");
  });

  it("enforces a quota from its create on, in its namespace only", async () => {
    const objects = await serve(SqliteStore.open(":memory:"));
    await objects.create(configMaps, "team", configMap("before"));
    await objects.create(quotas, "team", { metadata: { name: "few" }, spec: { hard: { "count/configmaps": "2" } } });
    await objects.create(configMaps, "team", configMap("second"));
    assert.match(await refusal(objects.create(configMaps, "team", configMap("third"))), /exceeded quota: few, requested: count\/configmaps=1, used: count\/configmaps=2, limited: count\/configmaps=2/);
    for (let i = 0; i < 3; i++) await objects.create(configMaps, "elsewhere", configMap(`cm-${i}`));
    await objects.delete(configMaps, "team", "before");
    const status = (await objects.get(quotas, "team", "few")).status as { used: Record<string, string> };
    assert.deepEqual(status.used, { "count/configmaps": "1" }, "the delete gave its unit back");
    await objects.create(configMaps, "team", configMap("third"));
  });

  it("enforces a quota it finds stored when it starts (a restarted server)", async () => {
    const store = SqliteStore.open(":memory:");
    const before = await serve(store);
    await before.create(quotas, "team", { metadata: { name: "one" }, spec: { hard: { "count/configmaps": "1" } } });
    await before.create(configMaps, "team", configMap("only"));
    const after = await serve(store);
    assert.match(await refusal(after.create(configMaps, "team", configMap("more"))), /exceeded quota: one/);
    await after.create(configMaps, "elsewhere", configMap("free"));
  });
});
