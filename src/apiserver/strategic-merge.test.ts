import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultRegistry } from "../api/kinds.ts";
import { BadRequestError } from "./errors.ts";
import { listStrategy, strategicMerge, type PatchSchema } from "./strategic-merge.ts";

const cluster = defaultRegistry().byKind("slipway.dev/v1alpha1", "Cluster")!.schema as PatchSchema;

const live = {
  metadata: { name: "c", labels: { team: "a" } },
  spec: {
    kubernetesVersion: "v1.31.2",
    workers: [
      { name: "east", connection: "sim-east", machineType: "s1.large", replicas: 2, zones: ["a"] },
      { name: "west", connection: "sim-west", machineType: "s1.large", replicas: 2 },
    ],
  },
};

describe("strategic merge patch", () => {
  it("merges a keyed list item by item: a changed pool leaves its defaulted fields and the other pools alone", () => {
    const merged = strategicMerge(live, { spec: { workers: [{ name: "west", replicas: 5 }] } }, cluster) as typeof live;
    assert.deepEqual(merged.spec.workers, [
      { name: "east", connection: "sim-east", machineType: "s1.large", replicas: 2, zones: ["a"] },
      { name: "west", connection: "sim-west", machineType: "s1.large", replicas: 5 },
    ]);
    assert.deepEqual(live.spec.workers[1]!.replicas, 2, "the original is not changed");
  });

  it("adds, deletes and orders items as the directives kubectl sends say", () => {
    const patch = {
      spec: {
        "$setElementOrder/workers": [{ name: "north" }, { name: "east" }],
        workers: [{ name: "north", connection: "sim-east", machineType: "s1.small", replicas: 1 }, { name: "west", $patch: "delete" }],
      },
    };
    const merged = strategicMerge(live, patch, cluster) as typeof live;
    assert.deepEqual(
      merged.spec.workers.map((w) => w.name),
      ["north", "east"],
    );
  });

  it("replaces lists without a strategy, removes nulls, and honours $patch: replace and $retainKeys", () => {
    const withZones = strategicMerge(live, { spec: { workers: [{ name: "east", zones: ["b", "c"] }] } }, cluster) as typeof live;
    assert.deepEqual(withZones.spec.workers[0]!.zones, ["b", "c"], "a list of primitives without a strategy is replaced");
    const nulled = strategicMerge(live, { metadata: { labels: { team: null } } }, cluster) as typeof live;
    assert.deepEqual(nulled.metadata.labels, {});
    const replaced = strategicMerge(live, { spec: { workers: [{ $patch: "replace" }, { name: "only", connection: "x", machineType: "m", replicas: 1 }] } }, cluster) as typeof live;
    assert.deepEqual(
      replaced.spec.workers.map((w) => w.name),
      ["only"],
    );
    const replacedMap = strategicMerge(live, { metadata: { labels: { $patch: "replace", tier: "gold" } } }, cluster) as typeof live;
    assert.deepEqual(replacedMap.metadata.labels, { tier: "gold" });
    const retained = strategicMerge(live, { spec: { $retainKeys: ["workers"], workers: [] } }, cluster) as typeof live;
    assert.deepEqual(Object.keys(retained.spec), ["workers"]);
  });

  it("removes values from a list of primitives with $deleteFromPrimitiveList, and unions set lists", () => {
    const schema = { properties: { tags: { type: "array", items: { type: "string" }, "x-kubernetes-list-type": "set" } } };
    const merged = strategicMerge({ tags: ["a", "b"] }, { tags: ["c", "a"], "$deleteFromPrimitiveList/tags": ["b"] }, schema);
    assert.deepEqual(merged, { tags: ["a", "c"] });
  });

  it("refuses unknown directives and keyed items without their key, naming where", () => {
    assert.throws(() => strategicMerge(live, { spec: { $bogus: 1 } }, cluster), (e: unknown) => e instanceof BadRequestError && /\.spec\.\$bogus/.test(e.message));
    assert.throws(() => strategicMerge(live, { spec: { workers: [{ replicas: 3 }] } }, cluster), (e: unknown) => e instanceof BadRequestError && /\.spec\.workers: an item has no "name"/.test(e.message));
    assert.throws(() => strategicMerge(live, [], cluster), BadRequestError);
  });

  it("reads the strategy from patch extensions or a single-key map-type list", () => {
    assert.deepEqual(listStrategy({ "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "type" }), { merge: true, mergeKey: "type" });
    assert.deepEqual(listStrategy({ type: "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] }), { merge: true, mergeKey: "name" });
    assert.deepEqual(listStrategy({ type: "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key", "effect"] }), { merge: false });
    assert.deepEqual(listStrategy({ type: "array" }), { merge: false });
    assert.deepEqual(listStrategy({ type: "array", "x-kubernetes-list-type": "set" }), { merge: true });
    // A union is read for its list variant, as server-side apply reads it.
    assert.deepEqual(listStrategy({ anyOf: [{ type: "string" }, { type: "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] }] }), { merge: true, mergeKey: "name" });
  });
});
