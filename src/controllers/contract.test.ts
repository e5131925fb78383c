import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { olderClustersFirst } from "./contract.ts";

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
