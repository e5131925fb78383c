import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../api/meta.ts";
import { DuplicateIndexError, ObjectCache } from "./cache.ts";

function machine(name: string, pool: string, resourceVersion = "1"): KubeObject {
  return { apiVersion: "slipway.dev/v1alpha1", kind: "Machine", metadata: { name, namespace: "default", resourceVersion }, spec: { pool } };
}

const byPool = (o: KubeObject) => [(o.spec as { pool: string }).pool];

describe("ObjectCache", () => {
  it("indexes objects cached before the index was added, and moves them when they change", () => {
    const cache = new ObjectCache<KubeObject>();
    cache.set(machine("m1", "general"));
    cache.set(machine("m2", "general"));
    cache.addIndex("pool", byPool);
    assert.deepEqual(cache.indexKeys("pool", "general").sort(), ["default/m1", "default/m2"]);
    cache.set(machine("m2", "gpu", "2"));
    assert.deepEqual(cache.indexKeys("pool", "general"), ["default/m1"]);
    assert.deepEqual(cache.byIndex("pool", "gpu").map((o) => o.metadata.name), ["m2"]);
    cache.delete("default/m1");
    assert.deepEqual(cache.indexKeys("pool", "general"), []);
    cache.addIndex("pool", byPool);
    assert.deepEqual(cache.indexKeys("pool", "gpu"), ["default/m2"], "the same index added again is the one there");
    assert.throws(() => cache.addIndex("pool", (o) => [o.metadata.name!]), DuplicateIndexError);
  });

  it("hands out the stored object itself, frozen, without copying", () => {
    const cache = new ObjectCache<KubeObject>();
    const stored = machine("m1", "general");
    cache.set(stored);
    assert.equal(cache.get("default/m1"), stored);
    assert.ok(Object.isFrozen(stored.spec));
  });

  it("keeps an object without its managedFields, leaving the object it was given as it was", () => {
    const cache = new ObjectCache<KubeObject>();
    const sent = machine("m1", "general");
    sent.metadata.managedFields = [{ manager: "kubectl", operation: "Update", apiVersion: "slipway.dev/v1alpha1", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:pool": {} } } }];
    cache.set(sent);
    const cached = cache.get("default/m1")!;
    assert.equal(cached.metadata.managedFields, undefined);
    assert.deepEqual(cached.spec, { pool: "general" });
    assert.equal(cached.metadata.resourceVersion, "1");
    assert.equal(sent.metadata.managedFields?.length, 1, "another watcher of the same object still sees them");
  });
});
