import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { InstanceEventLog } from "./instance-events.ts";
import type { ResourceRecord } from "./records.ts";
import { StateStore } from "./state.ts";

function instance(id: string, state: string, region = "sim-east-1"): ResourceRecord {
  return { id, kind: "instance", account: "a", region, state } as unknown as ResourceRecord;
}

describe("InstanceEventLog", () => {
  it("numbers each state change, answers the changes after a number, and tells a reader it fell behind once they wrap", () => {
    const state = new StateStore(":memory:");
    const log = new InstanceEventLog(state, 4);
    const { epoch } = log.since("a", "sim-east-1", undefined, undefined);
    assert.equal(log.last, 0);

    state.put(instance("i-1", "pending"));
    state.put(instance("i-1", "pending")); // a write that changes no state is not a change
    state.put(instance("i-2", "pending", "sim-west-1"));
    state.put(instance("i-1", "running"));
    assert.equal(log.last, 3);
    assert.deepEqual(log.since("a", "sim-east-1", 0, epoch), {
      epoch,
      cursor: 3,
      events: [
        { instanceId: "i-1", state: "pending" },
        { instanceId: "i-1", state: "running" },
      ],
      reset: false,
    });
    assert.deepEqual(log.since("a", "sim-east-1", 0, epoch, 1).events, [{ instanceId: "i-1", state: "pending" }], "a limit stops the answer early");
    assert.equal(log.since("a", "sim-east-1", 0, epoch, 1).cursor, 1);

    // Past the capacity the ring overwrites its oldest changes: after seven, 4 to 7 are kept.
    state.put(instance("i-3", "pending"));
    state.put(instance("i-3", "running"));
    state.put(instance("i-2", "running", "sim-west-1"));
    state.remove("i-1", {});
    assert.equal(log.last, 7);
    assert.equal(log.since("a", "sim-east-1", 2, epoch).reset, true, "change 3 was overwritten");
    assert.deepEqual(log.since("a", "sim-east-1", 3, epoch), {
      epoch,
      cursor: 7,
      events: [
        { instanceId: "i-3", state: "pending" },
        { instanceId: "i-3", state: "running" },
        { instanceId: "i-1", state: "gone" },
      ],
      reset: false,
    });
    assert.deepEqual(log.since("a", "sim-west-1", 3, epoch).events, [{ instanceId: "i-2", state: "running" }]);
    assert.equal(log.since("a", "sim-east-1", 8, epoch).reset, true, "a number not given yet");
    assert.equal(log.since("a", "sim-east-1", 3, "another-epoch").reset, true, "a number from another start of the cloud");
  });
});
