import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { clusterKeyOf, olderClustersFirst } from "./contract.ts";

describe("olderClustersFirst", () => {
  it("orders keys by their cluster's creation second, older first, and a key of an unknown cluster before all", () => {
    const clusters = new Map([
      ["team-a/old", { metadata: { creationTimestamp: "2026-11-28T10:00:00Z" } }],
      ["team-b/young", { metadata: { creationTimestamp: "2026-11-28T10:00:07Z" } }],
    ]);
    const clusterOf = (key: string) => key.slice(0, key.lastIndexOf("-"));
    const priority = olderClustersFirst(clusters, clusterOf);
    const keys = ["team-b/young-cp", "team-a/old-w1", "team-z/gone-w2", "team-a/old-cp"];
    const ordered = [...keys].sort((a, b) => priority(a) - priority(b));
    assert.deepEqual(ordered, ["team-z/gone-w2", "team-a/old-w1", "team-a/old-cp", "team-b/young-cp"]);
    assert.equal(priority("team-b/young-cp") - priority("team-a/old-cp"), 7, "whole seconds, so that a controller can order the keys of one second by a fraction");
  });
});

describe("clusterKeyOf", () => {
  it("names the cluster of a cached object made for it, and keeps the key of one not cached", () => {
    const machines = new Map([["team-a/demo-cp-0", { metadata: { namespace: "team-a" }, spec: { clusterName: "demo" } }]]);
    const clusterOf = clusterKeyOf(machines);
    assert.equal(clusterOf("team-a/demo-cp-0"), "team-a/demo");
    assert.equal(clusterOf("team-a/gone-w-1"), "team-a/gone-w-1");
  });
});
