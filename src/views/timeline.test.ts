import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { T0, at, journalled as cluster, step } from "./testing.ts";
import { clusterTimeline, criticalPath } from "./timeline.ts";

describe("criticalPath", () => {
  it("follows back from the last step through the step that ended last before each began", () => {
    const steps = [step("Validate", 0, 1), step("Network", 1, 3), step("KeyPair", 1, 2), step("Subnet", 3, 4), step("Worker", 4, 8), step("ControlPlane", 4, 10), step("Ready", 10, 10)];
    assert.deepEqual(
      criticalPath(steps, T0).map((s) => s.name),
      ["Validate", "Network", "Subnet", "ControlPlane", "Ready"],
    );
  });

  it("counts a running step up to now", () => {
    const steps = [step("Validate", 0, 1), step("Network", 1), step("KeyPair", 1, 2)];
    assert.deepEqual(
      criticalPath(steps, T0 + 5000).map((s) => s.name),
      ["Validate", "Network"],
    );
  });
});

describe("clusterTimeline", () => {
  it("puts the steps on one axis from the cluster's creation, marking the critical path, what runs and what failed", () => {
    const failed = { ...step("Worker q-east-0", 3, undefined, "Failed"), message: "BootFailed" };
    const view = clusterTimeline(cluster([step("Validate", 0, 1), step("Network east", 1, 3), failed, step("Worker q-east-1", 9)]), T0 + 12_000);
    assert.equal(view.origin, T0);
    assert.equal(view.spanMs, 12_000);
    assert.equal(view.spanEnds, "so far");
    assert.deepEqual(
      view.steps.map((s) => [s.name, s.end - T0, s.finished, s.critical]),
      [
        ["Validate", 1000, true, true],
        ["Network east", 3000, true, true],
        ["Worker q-east-0", 9000, true, true],
        ["Worker q-east-1", 12_000, false, true],
      ],
    );
    assert.deepEqual(view.failed.map((s) => s.message), ["BootFailed"]);
    assert.equal(view.criticalMs, 12_000);
  });

  it("ends a failed step without a finish time where the status last changed, and reads a Running cluster as done", () => {
    const failed = step("Network", 1, undefined, "Failed");
    const c = cluster([step("Validate", 0, 1), failed], "Running");
    c.status!.conditions = [{ type: "Ready", status: "False", reason: "NetworkFailed", lastTransitionTime: at(4) }];
    const view = clusterTimeline(c, T0 + 60_000);
    assert.equal(view.steps[1]!.end - T0, 4000, "not now");
    assert.equal(view.spanEnds, "to Ready");
  });
});
