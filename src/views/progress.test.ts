import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, ClusterStep, MachineObject } from "../api/kinds.ts";
import { ProgressTracker, clusterOutcome, clusterProgress, progressChanges, type ClusterProgress, type ProgressChange } from "./progress.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();
const running = (name: string, start: number): ClusterStep => ({ name, startedAt: at(start), outcome: "Running" });
const done = (step: ClusterStep, end: number): ClusterStep => ({ ...step, finishedAt: at(end), outcome: "Succeeded" });

function moment(steps: ClusterStep[], overrides: Partial<ClusterProgress> = {}): ClusterProgress {
  return { label: "cluster/q", phase: "Provisioning", deleting: false, steps, machines: { desired: 3, created: 0, booted: 0, joined: 0, ready: 0 }, ...overrides };
}

/** `kind[:detail]` per change, `!` when it lasts. */
const brief = (changes: ProgressChange[]) =>
  changes.map((c) => {
    const detail = c.kind === "phase" ? c.phase : c.kind === "reason" ? c.reason : c.kind === "stepsDone" ? c.count : c.kind === "step" ? `${c.step.name}=${c.step.outcome}${c.durationMs === undefined ? "" : `/${c.durationMs}`}` : c.machines.created;
    return `${c.kind}:${detail}${c.lasting ? "!" : ""}`;
  });

describe("progressChanges", () => {
  const validate = running("Validate", 0);

  it("tells a step's start, then its end with how long it took; the same moment twice tells nothing", () => {
    assert.deepEqual(brief(progressChanges(undefined, moment([validate]), T0)), ["phase:Provisioning!", "step:Validate=Running", "machines:0"]);
    const next = moment([done(validate, 1.2), running("Network", 1.2)]);
    assert.deepEqual(brief(progressChanges(moment([validate]), next, T0)), ["step:Validate=Succeeded/1200!", "step:Network=Running"]);
    assert.deepEqual(progressChanges(next, next, T0), []);
  });

  it("sums up the steps already done when following a cluster under way", () => {
    assert.deepEqual(brief(progressChanges(undefined, moment([done(validate, 1), done(running("Network", 1), 2), running("Worker", 2)]), T0)), [
      "phase:Provisioning!",
      "stepsDone:2!",
      "step:Worker=Running",
      "machines:0",
    ]);
  });

  it("tells a new reason, a failed step without a finish time, and machines left while deleting", () => {
    const failed: ClusterStep = { ...running("Network", 1), outcome: "Failed", message: "quota" };
    assert.deepEqual(brief(progressChanges(moment([running("Network", 1)]), moment([failed], { reason: "ReplacingMachine" }), T0)), ["reason:ReplacingMachine!", "step:Network=Failed!"]);
    const retried = brief(progressChanges(moment([]), moment([], { phase: "Failed", reason: "QuotaExceeded", message: "needs 12 vCPU" }), T0));
    assert.deepEqual(retried, ["phase:Failed!", "reason:QuotaExceeded!"], "a failure the wait goes on through is told as it happens");
    assert.deepEqual(brief(progressChanges(moment([]), moment([], { phase: "Failed", reason: "ValidationFailed" }), T0)), ["phase:Failed!"], "one that ends the wait is told by its outcome");
    const deleting = moment([], { phase: "Deleting", deleting: true, machines: { desired: 3, created: 2, booted: 2, joined: 2, ready: 2 } });
    assert.deepEqual(brief(progressChanges(moment([]), deleting, T0)), ["phase:Deleting!", "machines:2"]);
    assert.deepEqual(progressChanges(deleting, { ...deleting, machines: { ...deleting.machines, ready: 0 } }, T0), [], "while deleting, only machines left count");
  });
});

describe("ProgressTracker", () => {
  it("leaves the steps of a cluster's making out once its deletion began", () => {
    const tracker = new ProgressTracker();
    const made = [done(running("Validate", 0), 1), done(running("Worker q-0", 1), 2)];
    tracker.track(moment(made), T0);
    const deleting = { phase: "Deleting", deleting: true };
    // The journal shows a step of the making running again while machines go: not news.
    const changes = tracker.track(moment([...made.slice(0, 1), running("Worker q-0", 9), running("DeleteNetwork", 10)], deleting), T0);
    assert.deepEqual(brief(changes), ["phase:Deleting!", "step:DeleteNetwork=Running", "machines:0"]);
    assert.deepEqual([...tracker.moments()].map(([label, p]) => [label, p.steps.map((s) => s.name)]), [["cluster/q", ["DeleteNetwork"]]]);
  });
});

describe("clusterProgress and clusterOutcome", () => {
  const cluster = (status: ClusterObject["status"], generation = 1): ClusterObject =>
    ({ apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", metadata: { name: "q", generation }, spec: { controlPlane: { connection: "e", machineType: "m", replicas: 1 }, workers: [{ name: "w", connection: "e", machineType: "m", replicas: 2 }] }, status }) as ClusterObject;
  const machine = (status: MachineObject["status"]) => ({ metadata: { name: "m" }, status }) as MachineObject;

  it("counts machines by how far they got", () => {
    const p = clusterProgress(cluster({ phase: "Provisioning" }), [machine({ phase: "Pending" }), machine({ phase: "Provisioned", instanceId: "i-1" }), machine({ phase: "Running", instanceId: "i-2", bootstrapped: true, nodeReady: true })]);
    assert.deepEqual(p.machines, { desired: 3, created: 3, booted: 2, joined: 1, ready: 1 });
    assert.equal(p.label, "cluster/q");
  });

  it("ends a wait for Ready only on the latest spec, and a wait for deletion when the cluster is gone", () => {
    const ready = { type: "Ready", status: "True" as const, reason: "Ready", lastTransitionTime: at(1) };
    assert.deepEqual(clusterOutcome(cluster({ phase: "Running", conditions: [ready], observedGeneration: 1 }), "ready"), { result: "ready" });
    assert.equal(clusterOutcome(cluster({ phase: "Running", conditions: [ready], observedGeneration: 1 }, 2), "ready"), undefined, "the controllers have not seen the change yet");
    assert.deepEqual(clusterOutcome(cluster({ phase: "Failed", reason: "ValidationFailed", message: "no machine type m" }), "ready"), { result: "failed", reason: "ValidationFailed", message: "no machine type m" });
    assert.equal(clusterOutcome(cluster({ phase: "Failed", reason: "QuotaExceeded", message: "needs 12 vCPU" }), "ready"), undefined, "the controllers retry: quota may be freed");
    assert.deepEqual(clusterOutcome(undefined, "ready"), { result: "failed", reason: "Deleted", message: "the cluster was deleted while it was being made" });
    assert.deepEqual(clusterOutcome(undefined, "deleted"), { result: "deleted" });
    assert.equal(clusterOutcome(cluster({ phase: "Deleting" }), "deleted"), undefined);
  });
});
