import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { RecordIndex } from "./record-index.ts";
import type { ResourceRecord } from "./records.ts";
import { StateStore } from "./state.ts";

function instance(id: string, subnetId: string, state: string): ResourceRecord {
  return { id, kind: "instance", account: "a", region: "sim-east-1", subnetId, state } as unknown as ResourceRecord;
}

describe("RecordIndex", () => {
  it("keeps records by key as they are written, changed in place and removed", () => {
    const state = new StateStore(":memory:");
    state.put(instance("i-0", "subnet-1", "running"));
    const live = new RecordIndex(state, "instance", (i) => (i.state === "terminated" ? [] : [i.subnetId]));
    state.put(instance("i-1", "subnet-1", "pending"));
    state.put(instance("i-2", "subnet-2", "running"));
    state.put({ id: "subnet-1", kind: "subnet" } as unknown as ResourceRecord); // another kind: not indexed
    assert.deepEqual(live.get("subnet-1").map((i) => i.id), ["i-0", "i-1"]);
    assert.equal(live.count("subnet-2"), 1);

    const i1 = state.get("instance", "i-1")!;
    (i1 as { state: string }).state = "terminated";
    state.put(i1);
    state.remove("i-2", {});
    assert.deepEqual(live.get("subnet-1").map((i) => i.id), ["i-0"]);
    assert.equal(live.count("subnet-2"), 0);
  });
});
