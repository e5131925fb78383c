import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { OperationObject } from "../../api/kinds.ts";
import { applyVerdict, changeProgress, groupsOf, isTerminal, judge, judgeFailed, phaseEvent, progressOf, type TargetObject, type TargetSpec, type TargetStatus } from "./status.ts";

function operation(type: "Create" | "Update" | "Upgrade" | "Delete", generation?: number): OperationObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Operation",
    metadata: { name: "op", namespace: "default", uid: "op-uid" },
    spec: { type, target: { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "demo", uid: "cluster-uid" }, ...(generation ? { generation } : {}) },
  };
}

const READY = [{ type: "Ready", status: "True" as const, lastTransitionTime: "2025-01-01T00:00:00Z" }];
const NOT_READY = [{ type: "Ready", status: "False" as const, lastTransitionTime: "2025-01-01T00:00:00Z" }];
/** One control-plane machine and a pool of three workers. */
const SPEC: TargetSpec = { controlPlane: { replicas: 1 }, workers: [{ replicas: 3 }] };
/** What a cluster that has all of SPEC observes. */
const BUILT: TargetStatus = {
  phase: "Running",
  observedGeneration: 2,
  conditions: READY,
  controlPlane: { desired: 1, ready: 1, updated: 1, replicas: 1 },
  workers: { desired: 3, ready: 3, updated: 3, replicas: 3 },
};

function cluster(status: TargetStatus, extra: Partial<TargetObject["metadata"]> = {}, spec: TargetSpec = SPEC): TargetObject {
  return { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", metadata: { name: "demo", namespace: "default", uid: "cluster-uid", generation: 2, ...extra }, spec, status };
}

const steps = (outcomes: string[]) => outcomes.map((outcome, i) => ({ name: `Step${i}`, outcome }));

describe("judging an operation by its target", () => {
  it("succeeds only once the target applied its generation, runs, is Ready, and has every machine it asks for", () => {
    const op = operation("Create", 2);
    assert.equal(judge(op, cluster({ ...BUILT, phase: "Provisioning" })).phase, "InProgress");
    assert.equal(judge(op, cluster({ ...BUILT, observedGeneration: 1 })).phase, "InProgress", "Running, but for an older spec");
    assert.equal(judge(op, cluster({ ...BUILT, conditions: NOT_READY })).phase, "InProgress", "Running, but not Ready");
    assert.equal(judge(op, cluster({ ...BUILT, workers: { desired: 3, ready: 2, updated: 2, replicas: 3 } })).phase, "InProgress", "a worker is not Ready");
    assert.deepEqual(judge(op, cluster(BUILT)), { phase: "Succeeded", percentComplete: 100, message: "Cluster demo is Running: the change is applied and every node is Ready" });
  });

  it("keeps a scale from 1 to 3 workers in progress while the pool has 1, with honest progress", () => {
    // What was reported: a cloud error during the scale left the status saying Running and Ready.
    const stale = cluster({ ...BUILT, workers: { desired: 1, ready: 1, updated: 1, replicas: 1 } });
    const verdict = judge(operation("Update", 2), stale);
    assert.equal(verdict.phase, "InProgress");
    assert.equal(verdict.percentComplete, 0, "the two workers the change adds are still to make");
    assert.equal(verdict.message, "Cluster demo is Running: worker machines: 1 of 3 in place, 2 to go");
    const retrying = judge(operation("Update", 2), cluster({ ...BUILT, phase: "Updating", reason: "Retrying", message: "retrying after: the cloud answered 503", observedGeneration: 1 }));
    assert.equal(retrying.phase, "InProgress");
    assert.equal(retrying.message, "Cluster demo is Updating: Retrying: retrying after: the cloud answered 503");
  });

  /** Judges an Update against each status in turn, as the controller does, keeping what it records. */
  const following = (op: OperationObject, statuses: TargetStatus[], spec: TargetSpec = SPEC) =>
    statuses.map((status) => {
      const verdict = judge(op, cluster(status, {}, spec));
      op = { ...op, status: applyVerdict(op.status, verdict, "2025-01-01T00:00:00Z") };
      return verdict.percentComplete;
    });

  it("counts an update from 0 %: only the machines its change makes count, not the cluster already built", () => {
    // Sixteen workers in place, a new pool of one added: the change is that one machine.
    const spec: TargetSpec = { controlPlane: { replicas: 1 }, workers: [{ replicas: 8 }, { replicas: 8 }, { replicas: 1 }] };
    const workers = (ready: number) => ({ desired: 17, ready, updated: ready, replicas: ready });
    assert.deepEqual(following(operation("Update", 2), [{ ...BUILT, phase: "Updating", workers: workers(16) }, { ...BUILT, workers: workers(17) }], spec), [0, 100]);
    // A scale from 1 to 3 workers: half done once one of the two new ones is Ready.
    const scaling = (ready: number) => ({ ...BUILT, phase: "Updating", workers: { desired: 3, ready, updated: ready, replicas: ready } });
    assert.deepEqual(following(operation("Update", 2), [scaling(1), scaling(2), BUILT]), [0, 50, 100]);
  });

  it("counts a roll by the machines in place: new ones Ready, old ones gone", () => {
    const rolling = (workers: TargetStatus["workers"]) => ({ ...BUILT, phase: "Updating", workers });
    const percents = following(operation("Update", 2), [
      rolling({ desired: 3, ready: 3, updated: 0, replicas: 4 }),
      rolling({ desired: 3, ready: 4, updated: 1, replicas: 4 }),
      rolling({ desired: 3, ready: 3, updated: 3, replicas: 4 }),
    ]);
    assert.deepEqual(percents, [0, 25, 75], "a surge machine booting: nothing in place yet; then one in place; then an old machine still draining");
    const done = judge(operation("Update", 2), cluster(BUILT));
    assert.equal(done.phase, "Succeeded");
    assert.equal(changeProgress(groupsOf(cluster(BUILT))), undefined, "nothing is changing");
  });

  it("counts an upgrade by every machine Ready at the new version, never going back as machines surge", () => {
    const upgrading = (controlPlane: TargetStatus["controlPlane"], workers: TargetStatus["workers"], observedGeneration = 2) =>
      judge(operation("Upgrade", 2), cluster({ ...BUILT, phase: "Updating", observedGeneration, controlPlane, workers })).percentComplete;
    assert.equal(upgrading({ desired: 1, ready: 1, updated: 1, replicas: 1 }, { desired: 3, ready: 3, updated: 3, replicas: 3 }, 1), undefined, "the cluster has not seen the change yet");
    assert.equal(upgrading({ desired: 1, ready: 2, updated: 1, replicas: 2 }, { desired: 3, ready: 3, updated: 0, replicas: 3 }), 25, "the control plane counts once done");
    assert.equal(upgrading({ desired: 1, ready: 1, updated: 1, replicas: 1 }, { desired: 3, ready: 3, updated: 0, replicas: 4 }), 25, "a surge worker booting takes nothing away");
    assert.equal(upgrading({ desired: 1, ready: 1, updated: 1, replicas: 1 }, { desired: 3, ready: 4, updated: 1, replicas: 4 }), 50);
    assert.equal(upgrading({ desired: 1, ready: 1, updated: 1, replicas: 1 }, { desired: 3, ready: 3, updated: 3, replicas: 4 }), 99, "an old machine still leaving");
  });

  it("judges a MachinePool by its replicas", () => {
    const pool: TargetObject = { apiVersion: "slipway.dev/v1alpha1", kind: "MachinePool", metadata: { name: "demo", uid: "cluster-uid", generation: 2 }, spec: { replicas: 2 }, status: { phase: "Running", observedGeneration: 2, conditions: READY, replicas: 2, readyReplicas: 2, updatedReplicas: 1 } };
    assert.equal(judge(operation("Update", 2), pool).phase, "InProgress", "one machine of an older template");
    assert.equal(judge(operation("Update", 2), { ...pool, status: { ...pool.status, updatedReplicas: 2 } }).phase, "Succeeded");
  });

  it("fails with the target's reason as the error code, once the target judged the generation", () => {
    const failed = { ...BUILT, phase: "Failed", reason: "QuotaExceeded", message: "needs 12 vCPU, 8 left" };
    const verdict = judge(operation("Update", 2), cluster(failed));
    assert.equal(verdict.phase, "Failed");
    assert.deepEqual(verdict.error, { code: "QuotaExceeded", message: "needs 12 vCPU, 8 left" });
    assert.equal(judge(operation("Update", 2), cluster({ ...failed, observedGeneration: 1 })).phase, "InProgress", "a failure of the spec before says nothing of this one");
  });

  it("cancels an update superseded by a later change, naming that change's operation; a create follows the cluster", () => {
    const later = cluster(BUILT, { generation: 3 });
    assert.deepEqual(judge(operation("Update", 2), later), { phase: "Canceled", message: "superseded by a later change of Cluster demo: generation 3 (operation demo-update-3)" });
    assert.equal(judge(operation("Create", 1), later).phase, "InProgress", "the create waits for the latest spec to be applied");
    assert.equal(judge(operation("Create", 1), cluster({ ...BUILT, observedGeneration: 3 }, { generation: 3 })).phase, "Succeeded");
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
    assert.equal(verdict.percentComplete, 12, "1 of 8: the 2 journalled, a step for each of the 4 machines, the network plugin's, Ready");
    assert.equal(verdict.message, "Cluster demo: Step1");
  });

  it("counts a create's steps still to come, so that its percentage rises with the journal and never falls back", () => {
    // The journals one cluster wrote on its way to Running (one control-plane machine, three workers).
    const spec: TargetSpec = { controlPlane: { replicas: 1, connection: "east" }, workers: [{ replicas: 3, connection: "east" }] };
    const infra = { kind: "Infrastructure", name: "demo-east" };
    const step = (name: string, outcome: string, target?: { kind: string; name: string }) => ({ name, outcome, ...(target ? { target } : {}) });
    const validated = [step("Validate", "Succeeded")];
    const cloud = ["Network", "Subnet", "SecurityGroup", "KeyPair", "LoadBalancer"].map((what) => step(`${what} east`, "Succeeded", infra));
    const machine = (name: string, outcome: string) => step(`${name.startsWith("cp") ? "ControlPlane" : "Worker"} demo-${name}`, outcome, { kind: "Machine", name: `demo-${name}` });
    const building = (outcome: string) => ["cp-0", "pool-0", "pool-1", "pool-2"].map((m) => machine(m, outcome));
    const journals = [
      validated,
      [...validated, ...cloud],
      [...validated, ...cloud, ...building("Running")],
      [...validated, ...cloud, ...building("Running"), step("NetworkPlugin", "Running")],
      [...validated, ...cloud, ...building("Running"), step("NetworkPlugin", "Succeeded")],
      [...validated, ...cloud, machine("cp-0", "Succeeded"), ...building("Running").slice(1), step("NetworkPlugin", "Succeeded")],
    ];
    let op = operation("Create", 2);
    const percents = journals.map((journal) => {
      const verdict = judge(op, cluster({ phase: "Provisioning", observedGeneration: 2, steps: journal }, {}, spec));
      op = { ...op, status: applyVerdict(op.status, verdict, "2025-01-01T00:00:00Z") };
      return verdict.percentComplete;
    });
    // Over the journal's own length these were 99, 99, 60, 54, 63, 72.
    assert.deepEqual(percents, [8, 50, 50, 50, 58, 66]);
    assert.equal(judge(op, cluster({ ...BUILT, steps: [...journals.at(-1)!, step("Ready", "Succeeded")] }, {}, spec)).percentComplete, 100);
    // A step that starts later than the count expected (a journal a step longer) holds the percentage where it was.
    const held = judge(op, cluster({ phase: "Provisioning", observedGeneration: 2, steps: [...journals.at(-1)!, step("Extra", "Running")] }, {}, spec));
    assert.equal(held.percentComplete, 66);
  });

  it("notes on a Failed operation that its target applied the same generation after all, and stays Failed", () => {
    const op: OperationObject = { ...operation("Create", 2), status: { phase: "Failed", error: { code: "QuotaExceeded", message: "needs 12 vCPU" }, endTime: "2025-01-01T00:05:00Z" } };
    assert.equal(judgeFailed(op, cluster({ ...BUILT, phase: "Updating", conditions: NOT_READY })), undefined, "not recovered yet");
    assert.equal(judgeFailed(op, cluster(BUILT, { generation: 3 })), undefined, "another generation: that is another operation's business");
    const verdict = judgeFailed(op, cluster(BUILT));
    assert.deepEqual(verdict, { phase: "Failed", recovered: true, message: "Cluster demo failed (QuotaExceeded), then recovered: the change is applied and every node is Ready" });
    const status = applyVerdict(op.status, verdict!, "2025-01-01T00:09:00Z");
    assert.deepEqual([status.phase, status.error?.code, status.endTime, status.recoveredTime], ["Failed", "QuotaExceeded", "2025-01-01T00:05:00Z", "2025-01-01T00:09:00Z"]);
    assert.equal(judgeFailed({ ...op, status }, cluster(BUILT)), undefined, "noted once");
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
