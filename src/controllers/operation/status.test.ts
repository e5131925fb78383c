import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { OperationObject } from "../../api/kinds.ts";
import { applyVerdict, isTerminal, judge, phaseEvent, progressOf, type TargetObject, type TargetStatus } from "./status.ts";

function operation(type: "Create" | "Update" | "Delete", generation?: number): OperationObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Operation",
    metadata: { name: "op", namespace: "default", uid: "op-uid" },
    spec: { type, target: { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "demo", uid: "cluster-uid" }, ...(generation ? { generation } : {}) },
  };
}

function cluster(status: TargetStatus, extra: Partial<TargetObject["metadata"]> = {}): TargetObject {
  return { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", metadata: { name: "demo", namespace: "default", uid: "cluster-uid", generation: 2, ...extra }, status };
}

const steps = (outcomes: string[]) => outcomes.map((outcome, i) => ({ name: `Step${i}`, outcome }));

describe("judging an operation by its target", () => {
  it("keeps a create in progress until the target observed its generation and runs", () => {
    const op = operation("Create", 2);
    assert.equal(judge(op, cluster({ phase: "Provisioning", observedGeneration: 2 })).phase, "InProgress");
    assert.equal(judge(op, cluster({ phase: "Running", observedGeneration: 1 })).phase, "InProgress", "Running, but for an older spec");
    assert.deepEqual(judge(op, cluster({ phase: "Running", observedGeneration: 2 })), { phase: "Succeeded", percentComplete: 100, message: "Cluster demo is Running" });
  });

  it("fails with the target's reason as the error code", () => {
    const verdict = judge(operation("Update", 2), cluster({ phase: "Failed", observedGeneration: 2, reason: "QuotaExceeded", message: "needs 12 vCPU, 8 left" }));
    assert.equal(verdict.phase, "Failed");
    assert.deepEqual(verdict.error, { code: "QuotaExceeded", message: "needs 12 vCPU, 8 left" });
  });

  it("cancels a create or update whose target is gone, replaced or being deleted; a delete then succeeds", () => {
    assert.equal(judge(operation("Create"), undefined).phase, "Canceled");
    assert.match(judge(operation("Update"), cluster({ phase: "Running" }, { uid: "another-uid" })).message, /replaced/);
    assert.equal(judge(operation("Update"), cluster({ phase: "Running" }, { uid: "another-uid" })).phase, "Canceled");
    assert.equal(judge(operation("Create"), cluster({ phase: "Deleting" }, { deletionTimestamp: "2025-01-01T00:00:00Z" })).phase, "Canceled");
    assert.equal(judge(operation("Delete"), cluster({ phase: "Deleting" }, { deletionTimestamp: "2025-01-01T00:00:00Z" })).phase, "InProgress");
    assert.equal(judge(operation("Delete"), undefined).phase, "Succeeded");
    assert.equal(judge(operation("Delete"), cluster({}, { uid: "another-uid" })).phase, "Succeeded");
  });

  it("reports progress as finished steps over all steps, below 100 until done, and names the running step", () => {
    assert.equal(progressOf(undefined), undefined);
    assert.equal(progressOf(steps(["Succeeded", "Succeeded", "Running", "Running"])), 50);
    assert.equal(progressOf(steps(["Succeeded", "Failed", "Succeeded"])), 99);
    const verdict = judge(operation("Create", 2), cluster({ phase: "Provisioning", observedGeneration: 2, steps: steps(["Succeeded", "Running"]) }));
    assert.equal(verdict.percentComplete, 50);
    assert.equal(verdict.message, "Cluster demo: Step1");
  });
});

describe("applying a verdict", () => {
  it("sets the start time once and the end time when the operation ends", () => {
    const started = applyVerdict(undefined, { phase: "InProgress", percentComplete: 10, message: "working" }, "2025-01-01T00:00:00Z");
    assert.deepEqual(started, { phase: "InProgress", startTime: "2025-01-01T00:00:00Z", percentComplete: 10, message: "working" });
    const ended = applyVerdict(started, { phase: "Failed", error: { code: "QuotaExceeded", message: "m" }, message: "failed" }, "2025-01-01T00:05:00Z");
    assert.equal(ended.startTime, "2025-01-01T00:00:00Z");
    assert.equal(ended.endTime, "2025-01-01T00:05:00Z");
    assert.equal(ended.percentComplete, 10, "progress stays where it stopped");
    assert.ok(isTerminal(ended.phase));
  });

  it("describes each phase an operation enters in an event", () => {
    const op = { ...operation("Create"), status: { phase: "Failed" as const, error: { code: "QuotaExceeded", message: "needs more vCPU" } } };
    assert.deepEqual(phaseEvent(op, "InProgress"), { type: "Normal", reason: "Started", message: "Create of Cluster demo started" });
    assert.deepEqual(phaseEvent(op, "Failed"), { type: "Warning", reason: "Failed", message: "Create of Cluster demo failed: QuotaExceeded: needs more vCPU" });
    assert.equal(phaseEvent(op, "Succeeded").reason, "Succeeded");
  });
});
