import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ResourceRecord } from "./records.ts";
import { StateStore } from "./state.ts";
import { TagIndex } from "./tag-index.ts";

function network(id: string, tags: Record<string, string>): ResourceRecord {
  return { id, kind: "network", account: "a", region: "sim-east-1", tags } as unknown as ResourceRecord;
}

describe("TagIndex", () => {
  it("finds resources carrying every wanted tag, following changes and removals", () => {
    const state = new StateStore(":memory:");
    state.put(network("vpc-0", { cluster: "c1" }));
    const index = new TagIndex(state); // indexes what is already there
    state.put(network("vpc-1", { cluster: "c1", role: "nodes" }));
    state.put(network("vpc-2", { cluster: "c2", role: "nodes" }));
    const ids = (tags?: Record<string, string>) => index.find("network", tags).map((r) => r.id);

    assert.deepEqual(ids({ cluster: "c1" }), ["vpc-0", "vpc-1"]);
    assert.deepEqual(ids({ cluster: "c1", role: "nodes" }), ["vpc-1"]);
    assert.deepEqual(ids({ cluster: "c3" }), []);
    assert.deepEqual(ids(), ["vpc-0", "vpc-1", "vpc-2"]);
    assert.deepEqual(index.find("instance", { cluster: "c1" }), [], "another kind's tags do not count");

    state.put(network("vpc-1", { cluster: "c2" }));
    state.remove("vpc-0", {});
    assert.deepEqual(ids({ cluster: "c1" }), []);
    assert.deepEqual(ids({ cluster: "c2" }).sort(), ["vpc-1", "vpc-2"]);
  });
});
