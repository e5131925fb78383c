import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../api/meta.ts";
import { getCondition, isTrue, mirrorCondition, removeCondition, setCondition, summarize, type ConditionHolder } from "./conditions.ts";

const T1 = "2025-01-01T00:00:00Z";
const T2 = "2025-01-01T00:05:00Z";
const T3 = "2025-01-01T00:10:00Z";

describe("conditions", () => {
  it("moves lastTransitionTime only when the status changes", () => {
    const status: ConditionHolder = {};
    setCondition(status, { type: "InfrastructureReady", status: "False", reason: "CreatingNetwork", message: "network 1 of 2" }, T1);
    setCondition(status, { type: "InfrastructureReady", status: "False", reason: "CreatingSubnet", message: "subnet 1 of 2" }, T2);
    const stillFalse = getCondition(status.conditions, "InfrastructureReady");
    assert.equal(stillFalse?.lastTransitionTime, T1, "a new reason or message is no transition");
    assert.equal(stillFalse?.reason, "CreatingSubnet");
    assert.equal(stillFalse?.message, "subnet 1 of 2");
    setCondition(status, { type: "InfrastructureReady", status: "True", reason: "Ready" }, T3);
    const nowTrue = getCondition(status.conditions, "InfrastructureReady");
    assert.equal(nowTrue?.lastTransitionTime, T3);
    assert.equal(nowTrue?.message, undefined, "a message that no longer applies is dropped");
    assert.equal(status.conditions?.length, 1);
    assert.ok(isTrue(status.conditions, "InfrastructureReady"));
  });

  it("keeps the order conditions were first set in, and removes one by type", () => {
    const status: ConditionHolder = {};
    setCondition(status, { type: "Validated", status: "True" }, T1);
    setCondition(status, { type: "InfrastructureReady", status: "Unknown" }, T1);
    setCondition(status, { type: "Validated", status: "False", reason: "QuotaExceeded" }, T2);
    assert.deepEqual(status.conditions?.map((c) => c.type), ["Validated", "InfrastructureReady"]);
    removeCondition(status, "Validated");
    assert.deepEqual(status.conditions?.map((c) => c.type), ["InfrastructureReady"]);
  });

  it("mirrors a child's condition onto its parent, naming the child", () => {
    const pool: KubeObject = {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "MachinePool",
      metadata: { name: "demo-general" },
      status: { conditions: [{ type: "Ready", status: "False", reason: "CreateMachineFailed", message: "quota exceeded", lastTransitionTime: T1 }] },
    };
    assert.deepEqual(mirrorCondition(pool, "Ready", "WorkersReady"), {
      type: "WorkersReady",
      status: "False",
      reason: "CreateMachineFailed",
      message: "MachinePool demo-general: quota exceeded",
    });
    const silent: KubeObject = { ...pool, status: {} };
    assert.equal(mirrorCondition(silent, "Ready", "WorkersReady").status, "Unknown");
    assert.equal(mirrorCondition(undefined, "Ready", "WorkersReady").reason, "NotFound");
  });

  it("summarises conditions into Ready: False wins over Unknown, and the message says what is missing", () => {
    const status: ConditionHolder = {};
    setCondition(status, { type: "Validated", status: "True" }, T1);
    setCondition(status, { type: "InfrastructureReady", status: "Unknown", reason: "Provisioning" }, T1);
    setCondition(status, { type: "ControlPlaneReady", status: "False", reason: "ControlPlaneInitFailed", message: "kubeadm init failed" }, T1);
    const ready = summarize(status.conditions, ["Validated", "InfrastructureReady", "ControlPlaneReady", "WorkersReady"]);
    assert.equal(ready.type, "Ready");
    assert.equal(ready.status, "False");
    assert.equal(ready.reason, "ControlPlaneInitFailed");
    assert.equal(
      ready.message,
      "InfrastructureReady is Unknown; ControlPlaneReady is False: kubeadm init failed; WorkersReady is Unknown",
    );
    setCondition(status, { type: "ControlPlaneReady", status: "True" }, T2);
    assert.equal(summarize(status.conditions, ["Validated", "InfrastructureReady", "ControlPlaneReady"]).reason, "Provisioning");
    setCondition(status, { type: "InfrastructureReady", status: "True" }, T2);
    assert.deepEqual(summarize(status.conditions, ["Validated", "InfrastructureReady", "ControlPlaneReady"]), {
      type: "Ready",
      status: "True",
      reason: "AllTrue",
    });
  });
});
