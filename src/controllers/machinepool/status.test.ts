import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import type { MachinePoolPhase } from "../../api/slipway/machinepool.ts";
import { getCondition } from "../../runtime/conditions.ts";
import { InternalReconcileError } from "../../runtime/failures.ts";
import { availability, countMachines, nodeRefs, poolPhase, providerIDList, summarizePool } from "./status.ts";

const NOW = "2025-01-01T00:00:00Z";

function pool(replicas: number, extra: { deleting?: boolean; phase?: MachinePoolPhase } = {}): MachinePoolObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "MachinePool",
    metadata: { name: "demo-w", namespace: "default", uid: "p-1", ...(extra.deleting ? { deletionTimestamp: NOW } : {}) },
    spec: { clusterName: "demo", connection: "east", machineType: "s1.medium", replicas },
    ...(extra.phase ? { status: { phase: extra.phase } } : {}),
  };
}

/** The labels the pool gives its machines, which its default selector chooses. */
const LABELS = { "slipway.dev/cluster": "demo", "slipway.dev/pool": "demo-w", "slipway.dev/role": "worker" };

type Stage = "pending" | "provisioning" | "joined" | "running" | "failed" | "refused";

function machine(index: number, stage: Stage, deleting = false, machineType = "s1.medium"): MachineObject {
  const status: MachineObject["status"] = {};
  if (stage !== "pending" && stage !== "refused") status.instanceId = `i-${index}`;
  if (stage === "joined" || stage === "running") status.bootstrapped = true;
  if (stage === "running") {
    status.nodeReady = true;
    status.phase = "Running";
  }
  if (stage === "failed") {
    status.failureReason = "JoinWorkerFailed";
    status.failureMessage = "error execution phase preflight: token invalid";
    status.phase = "Failed";
  }
  if (stage === "refused") {
    status.phase = "Failed";
    status.conditions = [{ type: "InstanceReady", status: "False", reason: "QuotaExceeded", message: "vCPU quota of sim-east-1 exceeded", lastTransitionTime: NOW }];
  }
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: { name: `demo-w-${index}`, namespace: "default", uid: `m-${index}`, labels: { ...LABELS }, ...(deleting ? { deletionTimestamp: NOW } : {}) },
    spec: { clusterName: "demo", role: "worker", connection: "east", machineType, pool: "demo-w" },
    status,
  };
}

const none = new Set<string>();

describe("machine pool status", () => {
  it("counts the machines that exist and those whose node is Ready", () => {
    const p = pool(3);
    summarizePool(p, { machines: [machine(0, "running"), machine(1, "joined"), machine(2, "provisioning"), machine(3, "running", true)], deleted: none }, NOW);
    assert.equal(p.status?.replicas, 3);
    assert.equal(p.status?.readyReplicas, 1);
    assert.equal(p.status?.availableReplicas, 1);
    assert.equal(p.status?.unavailableReplicas, 2);
  });

  it("goes Pending → Provisioning → Provisioned → Running the first time", () => {
    const phase = (machines: MachineObject[], previous?: MachinePoolPhase) => poolPhase(pool(2), countMachines(pool(2), { machines, deleted: none }), previous);
    assert.equal(phase([machine(0, "pending"), machine(1, "pending")]), "Pending");
    assert.equal(phase([machine(0, "provisioning"), machine(1, "pending")], "Pending"), "Provisioning");
    assert.equal(phase([machine(0, "joined"), machine(1, "joined")], "Provisioning"), "Provisioned");
    assert.equal(phase([machine(0, "running"), machine(1, "running")], "Provisioned"), "Running");
  });

  it("scales up and down after it first ran, and is Running again once the count is right", () => {
    const running = [machine(0, "running"), machine(1, "running")];
    assert.equal(poolPhase(pool(3), countMachines(pool(3), { machines: [...running, machine(2, "pending")], deleted: none }), "Running"), "ScalingUp");
    assert.equal(poolPhase(pool(1), countMachines(pool(1), { machines: running, deleted: none }), "Running"), "ScalingDown");
    // A machine leaving (being drained) keeps the pool ScalingDown until it is gone.
    assert.equal(poolPhase(pool(1), countMachines(pool(1), { machines: running, deleted: new Set(["demo-w-1"]) }), "ScalingDown"), "ScalingDown");
    assert.equal(poolPhase(pool(1), countMachines(pool(1), { machines: [machine(0, "running")], deleted: none }), "ScalingDown"), "Running");
    assert.equal(poolPhase(pool(0), countMachines(pool(0), { machines: [], deleted: none }), undefined), "Running");
  });

  it("shows a failed machine's reason while it is replaced, without failing the pool", () => {
    const p = pool(2, { phase: "Running" });
    summarizePool(p, { machines: [machine(0, "running"), machine(1, "failed", true), machine(2, "pending")], deleted: none }, NOW);
    assert.equal(p.status?.phase, "ScalingUp");
    assert.equal(p.status?.reason, "JoinWorkerFailed");
    assert.match(p.status?.message ?? "", /demo-w-1: error execution phase preflight: token invalid/);
    const ready = getCondition(p.status?.conditions, "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, "JoinWorkerFailed");

    // Once the failed machine is gone the pool says nothing of it any more.
    summarizePool(p, { machines: [machine(0, "running"), machine(2, "running")], deleted: none }, NOW);
    assert.equal(p.status?.phase, "Running");
    assert.equal(p.status?.reason, undefined);
    assert.equal(getCondition(p.status?.conditions, "Ready")?.status, "True");
  });

  it("fails while the cloud refuses to create a machine (replacing it would not help)", () => {
    const p = pool(2, { phase: "Provisioning" });
    summarizePool(p, { machines: [machine(0, "running"), machine(1, "refused")], deleted: none }, NOW);
    assert.equal(p.status?.phase, "Failed");
    assert.equal(p.status?.reason, "QuotaExceeded");
  });

  it("rolls to a new template: ScalingUp until new machines serve, ScalingDown as old ones go, Running only when all are new", () => {
    const rolled = (machines: MachineObject[], phase: MachinePoolPhase = "Running") => {
      const p = pool(2, { phase });
      p.spec.machineType = "s1.large";
      summarizePool(p, { machines, deleted: none }, NOW);
      return p;
    };
    const old = [machine(0, "running"), machine(1, "running")];
    const started = rolled([...old, machine(2, "provisioning", false, "s1.large")]);
    assert.equal(started.status?.phase, "ScalingUp");
    assert.equal(started.status?.updatedReplicas, 1);
    const upToDate = getCondition(started.status?.conditions, "MachinesUpToDate");
    assert.equal(upToDate?.status, "False");
    assert.equal(upToDate?.reason, "Rolling");
    assert.match(upToDate?.message ?? "", /^0 of 2 machines Ready from the current template \([0-9a-f]{10}: machine type s1\.large, image ubuntu-22\.04\); 2 of an older template to replace$/);
    assert.equal(getCondition(started.status?.conditions, "Ready")?.status, "False");

    const halfway = rolled([machine(0, "running"), machine(2, "running", false, "s1.large"), machine(3, "running", false, "s1.large")]);
    assert.equal(halfway.status?.phase, "ScalingDown");
    assert.equal(getCondition(halfway.status?.conditions, "Ready")?.status, "False", "all machines Ready is not enough: one is old");

    const done = rolled([machine(2, "running", false, "s1.large"), machine(3, "running", false, "s1.large")]);
    assert.equal(done.status?.phase, "Running");
    assert.deepEqual([done.status?.replicas, done.status?.readyReplicas, done.status?.updatedReplicas], [2, 2, 2]);
    assert.equal(getCondition(done.status?.conditions, "MachinesUpToDate")?.status, "True");
    assert.equal(getCondition(done.status?.conditions, "Ready")?.status, "True");
  });

  it("does not fail for machines of an older template the cloud refused: the roll replaces them", () => {
    const p = pool(1, { phase: "Failed" });
    p.spec.machineType = "s1.large";
    summarizePool(p, { machines: [machine(0, "refused"), machine(1, "provisioning", false, "s1.large")], deleted: none }, NOW);
    assert.equal(p.status?.phase, "ScalingUp");
    assert.equal(p.status?.reason, "QuotaExceeded", "what the old machine met is still shown");
    // The new template refused as well: that is the pool's failure now.
    summarizePool(p, { machines: [machine(0, "refused"), { ...machine(1, "refused"), spec: { ...machine(1, "refused").spec, machineType: "s1.large" } }], deleted: none }, NOW);
    assert.equal(p.status?.phase, "Failed");
    assert.match(p.status?.message ?? "", /^Machine demo-w-1:/, "the current template's failure comes first");
  });

  it("fails with InternalError once a step failed with an unexpected error", () => {
    const p = pool(2, { phase: "Running" });
    summarizePool(p, { machines: [machine(0, "running"), machine(1, "running")], deleted: none }, NOW, new InternalReconcileError("rollOut", 5, new TypeError("plan.delete is undefined")));
    assert.deepEqual([p.status?.phase, p.status?.reason], ["Failed", "InternalError"]);
    assert.match(p.status?.message ?? "", /^step rollOut failed 5 times in a row with an unexpected error: TypeError: plan\.delete is undefined\. This is a defect in Slipway: please report it/);
    assert.equal(getCondition(p.status?.conditions, "Ready")?.status, "False");
  });

  it("is Deleting once deleted", () => {
    const p = pool(2, { deleting: true });
    summarizePool(p, { machines: [machine(0, "running", true)], deleted: none }, NOW);
    assert.equal(p.status?.phase, "Deleting");
    assert.equal(p.status?.replicas, 0);
  });
});

/** A Running machine whose node turned Ready at `since`, with its instance's provider ID and its node's UID. */
function readyAt(index: number, since: string): MachineObject {
  const m = machine(index, "running");
  m.spec.providerID = `sim://sim-east-1/i-${index}`;
  m.status = { ...m.status, nodeName: `demo-w-${index}`, nodeUID: `uid-${index}`, conditions: [{ type: "NodeReady", status: "True", reason: "NodeReady", lastTransitionTime: since }] };
  return m;
}

const at = (iso: string) => Date.parse(iso);

describe("machine pool status as Cluster API reports it", () => {
  it("counts a machine available once its node has been Ready for exactly minReadySeconds, and says when the next one will be", () => {
    const machines = [readyAt(0, "2025-01-01T00:00:00Z"), readyAt(1, "2025-01-01T00:00:20Z"), machine(2, "joined")];
    assert.deepEqual(availability(machines, 30, at("2025-01-01T00:00:29.999Z")), { available: 0, nextInMs: 1 });
    assert.deepEqual(availability(machines, 30, at("2025-01-01T00:00:30Z")), { available: 1, nextInMs: 20_000 });
    assert.deepEqual(availability(machines, 30, at("2025-01-01T00:00:50Z")), { available: 2 });
    // Without minReadySeconds every Ready machine is available at once; a machine not Ready never is.
    assert.deepEqual(availability(machines, 0, at("2025-01-01T00:00:20Z")), { available: 2 });
    // A Ready machine that never recorded when (made before it did) has been Ready long enough.
    assert.deepEqual(availability([machine(3, "running")], 600, at("2025-01-01T00:00:00Z")), { available: 1 });
  });

  it("reports available and unavailable replicas against the wanted number, and runs only once all are available", () => {
    const p = pool(2, { phase: "Provisioned" });
    p.spec.minReadySeconds = 30;
    const machines = [readyAt(0, "2025-01-01T00:00:00Z"), readyAt(1, "2025-01-01T00:00:10Z")];
    summarizePool(p, { machines, deleted: none }, "2025-01-01T00:00:35Z");
    assert.deepEqual([p.status?.replicas, p.status?.readyReplicas, p.status?.availableReplicas, p.status?.unavailableReplicas], [2, 2, 1, 1]);
    assert.equal(p.status?.phase, "Provisioned", "Ready is not yet available");
    summarizePool(p, { machines, deleted: none }, "2025-01-01T00:00:40Z");
    assert.deepEqual([p.status?.availableReplicas, p.status?.unavailableReplicas, p.status?.phase], [2, 0, "Running"]);
    // Scaling up to 4: the two machines not made yet are unavailable too.
    p.spec.replicas = 4;
    summarizePool(p, { machines, deleted: none }, "2025-01-01T00:01:00Z");
    assert.deepEqual([p.status?.unavailableReplicas, p.status?.phase], [2, "ScalingUp"]);
  });

  it("is Scaling, not ScalingUp or ScalingDown, when its replicas are set from outside", () => {
    const external = (replicas: number) => {
      const p = pool(replicas, { phase: "Running" });
      p.metadata.annotations = { "cluster.x-k8s.io/replicas-managed-by": "cluster-autoscaler" };
      return p;
    };
    const running = [machine(0, "running"), machine(1, "running")];
    assert.equal(poolPhase(external(3), countMachines(external(3), { machines: running, deleted: none }), "Running"), "Scaling");
    assert.equal(poolPhase(external(1), countMachines(external(1), { machines: running, deleted: none }), "Running"), "Scaling");
    assert.equal(poolPhase(external(2), countMachines(external(2), { machines: running, deleted: none }), "Scaling"), "Running");
    const p = external(3);
    summarizePool(p, { machines: running, deleted: none }, NOW);
    assert.equal(getCondition(p.status?.conditions, "ReplicasReady")?.reason, "Scaling");
  });

  it("lists provider IDs sorted, of machines with an instance that are not going away, and their nodes by name", () => {
    const machines = [readyAt(10, NOW), readyAt(2, NOW), machine(3, "pending"), { ...readyAt(4, NOW), metadata: { ...readyAt(4, NOW).metadata, deletionTimestamp: NOW } }];
    const p = pool(3);
    summarizePool(p, { machines, deleted: none }, NOW);
    assert.deepEqual(providerIDList(machines.slice(0, 3)), ["sim://sim-east-1/i-10", "sim://sim-east-1/i-2"]);
    assert.deepEqual(p.status?.nodeRefs, [
      { apiVersion: "v1", kind: "Node", name: "demo-w-10", uid: "uid-10" },
      { apiVersion: "v1", kind: "Node", name: "demo-w-2", uid: "uid-2" },
    ]);
    // A machine whose instance exists but whose node has not joined has a provider ID and no node.
    const provisioning = { ...machine(5, "provisioning"), status: { instanceId: "i-5", providerID: "sim://sim-east-1/i-5" } };
    assert.deepEqual(providerIDList([provisioning]), ["sim://sim-east-1/i-5"]);
    assert.deepEqual(nodeRefs([provisioning]), []);
  });

  it("counts only the machines its selector chooses", () => {
    const p = pool(2);
    const relabelled = machine(1, "running");
    relabelled.metadata.labels = { ...LABELS, "slipway.dev/pool": "elsewhere" };
    summarizePool(p, { machines: [machine(0, "running"), relabelled], deleted: none }, NOW);
    assert.deepEqual([p.status?.replicas, p.status?.readyReplicas], [1, 1]);
    assert.equal(p.status?.selector, "slipway.dev/cluster=demo,slipway.dev/pool=demo-w");
  });

  it("is bootstrapReady when every machine has its bootstrap data, and infrastructureReady as told", () => {
    const p = pool(2);
    const rendered = machine(1, "pending");
    rendered.status = { conditions: [{ type: "BootstrapReady", status: "True", reason: "BootstrapDataReady", lastTransitionTime: NOW }] };
    summarizePool(p, { machines: [machine(0, "joined"), rendered], deleted: none }, NOW, undefined, { infrastructureReady: true });
    assert.deepEqual([p.status?.bootstrapReady, p.status?.infrastructureReady], [true, true]);
    summarizePool(p, { machines: [machine(0, "joined"), machine(1, "pending")], deleted: none }, NOW);
    assert.deepEqual([p.status?.bootstrapReady, p.status?.infrastructureReady], [false, false]);
    summarizePool(p, { machines: [], deleted: none }, NOW, undefined, { waitingForCluster: "spec.clusterName: Cluster \"demo\" does not exist" });
    assert.deepEqual([p.status?.bootstrapReady, p.status?.phase], [false, "Pending"]);
  });
});
