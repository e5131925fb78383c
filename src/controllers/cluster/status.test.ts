import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, InfrastructureObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { getCondition } from "../../runtime/conditions.ts";
import { InternalReconcileError } from "../../runtime/failures.ts";
import { reconcileContext } from "../../runtime/testing.ts";
import type { ProviderResolver } from "../providers.ts";
import type { WorkloadClients } from "../workload.ts";
import { poolMachine } from "../machinepool/phases.ts";
import { KubeconfigTargets } from "./kubeconfig.ts";
import { RecentChecks } from "./recent-checks.ts";
import type { ClusterScope } from "./scope.ts";
import { clusterProgressOnly, desiredWorkerMachines, journal, summarizeCluster, nodesOf } from "./status.ts";

const ctx = reconcileContext();
const T = "2025-01-01T00:00:00Z";

function cluster(workers = 2, machineType = "s1.small"): ClusterObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: "demo", namespace: "default", uid: "c-1", generation: 2 },
    spec: { controlPlane: { connection: "east", machineType: "s1.medium", replicas: 1 }, workers: [{ name: "w", connection: "east", machineType, replicas: workers }] },
    status: {
      phase: "Running",
      observedGeneration: 1,
      conditions: ["Validated", "NetworkPluginInstalled"].map((type) => ({ type, status: "True" as const, lastTransitionTime: T })),
    },
  };
}

const infra: InfrastructureObject = {
  apiVersion: "slipway.dev/v1alpha1",
  kind: "Infrastructure",
  metadata: { name: "demo-east", namespace: "default", generation: 1 },
  spec: { clusterName: "demo", connection: "east", region: "sim-east-1", nodeCIDR: "10.0.0.0/20", controlPlane: true, machineTypes: ["s1.small"], images: ["ubuntu-22.04"] },
  status: { phase: "Ready", ready: true, observedGeneration: 1, conditions: [{ type: "Ready", status: "True", lastTransitionTime: T }] },
};

function running<T extends MachineObject>(machine: T, deleting = false): T {
  return { ...machine, metadata: { ...machine.metadata, ...(deleting ? { deletionTimestamp: T } : {}) }, status: { phase: "Running", nodeReady: true, bootstrapped: true, instanceId: `i-${machine.metadata.name}` } };
}

function controlPlane(index: number): MachineObject {
  return running({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: { name: `demo-cp-${index}`, namespace: "default" },
    spec: { clusterName: "demo", role: "control-plane", connection: "east", machineType: "s1.medium" },
  });
}

function pool(machineType = "s1.small", status: MachinePoolObject["status"] = { phase: "Running", observedGeneration: 1 }): MachinePoolObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "MachinePool",
    metadata: { name: "demo-w", namespace: "default", uid: "p-1", generation: 1, labels: { "slipway.dev/pool": "w" } },
    spec: { clusterName: "demo", connection: "east", machineType, replicas: 2 },
    status,
  };
}

function worker(index: number, machineType = "s1.small"): MachineObject {
  return running(poolMachine(pool(machineType), index));
}

function scope(object: ClusterObject, machines: MachineObject[], pools: MachinePoolObject[] = [pool()]): ClusterScope {
  return {
    original: object,
    object,
    deps: { providers: undefined as unknown as ProviderResolver, workloads: undefined as unknown as WorkloadClients },
    timing: { pollMs: 1000, recheckMs: 120_000, revalidateMs: 30_000 },
    memory: { checks: new RecentChecks(), kubeconfigs: new KubeconfigTargets() },
    connections: new Map(),
    infrastructures: [infra],
    pools,
    controlPlane: machines.filter((m) => m.spec.role === "control-plane"),
    machines,
    changedChildren: new Set(),
  };
}

const condition = (c: ClusterObject, type: string) => getCondition(c.status?.conditions, type);

describe("cluster status", () => {
  it("is Running and Ready with every node Ready and every worker from its pool's template", () => {
    const s = scope(cluster(), [controlPlane(0), worker(0), worker(1)]);
    summarizeCluster(ctx, s, undefined);
    assert.equal(s.object.status?.phase, "Running");
    assert.equal(condition(s.object, "Ready")?.status, "True");
    assert.deepEqual(s.object.status?.workers, { desired: 2, ready: 2, updated: 2, replicas: 2 });
  });

  it("does not stay Running after a reconcile that failed: Updating, retrying, with the error", () => {
    const s = scope(cluster(3), [controlPlane(0), worker(0), worker(1)]);
    summarizeCluster(ctx, s, new Error("create instance in sim-east-1: the cloud answered 503"));
    assert.equal(s.object.status?.phase, "Updating");
    assert.equal(s.object.status?.reason, "Retrying");
    assert.equal(s.object.status?.message, "retrying after: create instance in sim-east-1: the cloud answered 503");
    assert.equal(condition(s.object, "WorkersReady")?.status, "False");
    assert.equal(condition(s.object, "WorkersReady")?.message, "2/3 worker nodes Ready");
  });

  it("fails with InternalError once a step failed with an unexpected error, saying to report it", () => {
    const s = scope(cluster(), [controlPlane(0), worker(0), worker(1)]);
    const error = new InternalReconcileError("ensureWorkerPools", 5, new TypeError("x is undefined"));
    summarizeCluster(ctx, s, error);
    assert.equal(s.object.status?.phase, "Failed");
    assert.equal(s.object.status?.reason, "InternalError");
    assert.match(s.object.status?.message ?? "", /^step ensureWorkerPools failed 5 times in a row with an unexpected error: TypeError: x is undefined\. This is a defect in Slipway: please report it/);
  });

  it("is not Ready while a pool's machines are rolled to a new template, however many nodes are Ready", () => {
    const s = scope(cluster(2, "s1.medium"), [controlPlane(0), worker(0), worker(1), worker(2, "s1.medium")]);
    summarizeCluster(ctx, s, undefined);
    assert.equal(s.object.status?.phase, "Updating");
    assert.deepEqual(s.object.status?.workers, { desired: 2, ready: 3, updated: 1, replicas: 3 });
    const workers = condition(s.object, "WorkersReady");
    assert.deepEqual([workers?.status, workers?.reason, workers?.message], ["False", "Rolling", "3/2 worker nodes Ready, 1 from their pool's current template, 1 more machine(s) to remove"]);
    assert.equal(condition(s.object, "Ready")?.status, "False");
  });

  it("is not Ready while a control-plane machine beyond the wanted number is still there", () => {
    const s = scope(cluster(), [controlPlane(0), running(controlPlane(1), true), worker(0), worker(1)]);
    summarizeCluster(ctx, s, undefined);
    assert.deepEqual(s.object.status?.controlPlane, { desired: 1, ready: 1, updated: 1, replicas: 2 });
    assert.equal(condition(s.object, "ControlPlaneReady")?.message, "1/1 control-plane nodes Ready, 1 to remove");
    assert.equal(s.object.status?.phase, "Updating");
  });

  it("names the failed step and machine while it is replaced, and keeps the control plane's backoff until all are Ready", () => {
    const failed: MachineObject = { ...worker(1), status: { phase: "Failed", failureReason: "JoinWorkerFailed", failureMessage: "kubeadm join exited 1" } };
    const c = cluster();
    c.status!.controlPlane = { desired: 1, ready: 0, remediation: { attempts: 2, lastTime: T } };
    const s = scope(c, [{ ...controlPlane(0), status: { phase: "Provisioning" } }, worker(0), failed]);
    s.waitingOn = "the control plane: replacing demo-cp-0 in 10s (backing off after 2 replacement(s))";
    summarizeCluster(ctx, s, undefined);
    assert.equal(s.object.status?.phase, "Updating");
    assert.equal(s.object.status?.reason, "JoinWorkerFailed");
    assert.equal(s.object.status?.message, "JoinWorkerFailed on machine demo-w-1: kubeadm join exited 1; waiting for the control plane: replacing demo-cp-0 in 10s (backing off after 2 replacement(s))");
    assert.deepEqual(s.object.status?.controlPlane?.remediation, { attempts: 2, lastTime: T });

    const healed = scope(s.object, [controlPlane(0), worker(0), worker(1)]);
    summarizeCluster(ctx, healed, undefined);
    assert.equal(healed.object.status?.phase, "Running");
    assert.deepEqual(healed.object.status?.controlPlane, { desired: 1, ready: 1, updated: 1, replicas: 1 });
  });

  it("fails with ControlPlaneLost, naming the machine, once an initialised cluster has no control-plane machine left", () => {
    const c = cluster();
    const built = scope(c, [controlPlane(0), worker(0), worker(1)]);
    summarizeCluster(ctx, built, undefined);
    assert.equal(built.object.status?.phase, "Running");
    // Its only control-plane instance died: the machine failed and is being replaced, the replacement waits.
    const dead: MachineObject = { ...controlPlane(0), metadata: { ...controlPlane(0).metadata, deletionTimestamp: T }, status: { phase: "Failed", failureReason: "InstanceLost", failureMessage: "instance i-demo-cp-0 terminated" } };
    const replacement: MachineObject = { ...controlPlane(1), status: { phase: "Pending" } };
    const lost = scope(built.object, [dead, replacement, worker(0), worker(1)]);
    summarizeCluster(ctx, lost, undefined);
    assert.equal(lost.object.status?.phase, "Failed");
    assert.equal(lost.object.status?.reason, "ControlPlaneLost");
    assert.match(lost.object.status?.message ?? "", /^no control-plane machine is left serving the cluster: demo-cp-0 \(InstanceLost: instance i-demo-cp-0 terminated\);/);
    // One Ready control-plane machine among the others (a roll, a 3-machine control plane) is no loss.
    const rolling = scope(built.object, [{ ...dead, status: undefined }, controlPlane(1), worker(0), worker(1)]);
    summarizeCluster(ctx, rolling, undefined);
    assert.notEqual(rolling.object.status?.reason, "ControlPlaneLost");
  });

  it("takes a pool's failure as its own only when the pool's status speaks of the spec the cluster wants", () => {
    const failed = pool("s1.small", { phase: "Failed", reason: "CreateMachineFailed", message: "Machine demo-w-0: insufficient capacity", observedGeneration: 1 });
    const machines = [controlPlane(0), worker(0), worker(1)];
    const failing = scope(cluster(), machines, [failed]);
    summarizeCluster(ctx, failing, undefined);
    assert.equal(failing.object.status?.phase, "Failed");
    assert.equal(failing.object.status?.reason, "CreateMachineFailed");

    // The spec was just fixed: this reconcile changed the pool, whose status is of its old spec.
    const fixed = scope(cluster(2, "s1.medium"), machines, [failed]);
    fixed.changedChildren.add("demo-w");
    summarizeCluster(ctx, fixed, undefined);
    assert.equal(fixed.object.status?.phase, "Updating");
    // The pool has its new spec but has not looked at it yet.
    const pending = scope(cluster(2, "s1.medium"), machines, [{ ...failed, metadata: { ...failed.metadata, generation: 2 } }]);
    summarizeCluster(ctx, pending, undefined);
    assert.equal(pending.object.status?.phase, "Updating");
  });

  it("journals the network plugin from the control plane's initialisation until its pods run on every node", () => {
    const initialized = "2025-01-01T00:01:00Z";
    const installed = "2025-01-01T00:01:20Z";
    const c = cluster();
    c.status!.conditions = [
      { type: "ControlPlaneInitialized", status: "True", lastTransitionTime: initialized },
      { type: "NetworkPluginInstalled", status: "False", reason: "Applied", lastTransitionTime: initialized },
    ];
    const s = scope(c, [controlPlane(0)]);
    const step = () => journal(c, s, installed).find((j) => j.name === "NetworkPlugin");
    assert.deepEqual([step()?.startedAt, step()?.finishedAt, step()?.outcome], [initialized, undefined, "Running"]);
    c.status!.conditions[1] = { type: "NetworkPluginInstalled", status: "True", reason: "PodsReady", lastTransitionTime: installed };
    assert.deepEqual([step()?.startedAt, step()?.finishedAt, step()?.outcome], [initialized, installed, "Succeeded"]);
  });
});

describe("progress-only changes of a cluster's status", () => {
  const at = "2025-01-01T00:00:00Z";
  const status = (): NonNullable<ClusterObject["status"]> => ({
    phase: "Provisioning",
    conditions: [{ type: "Ready", status: "False", reason: "NotReady", message: "waiting for the control plane", lastTransitionTime: at }],
    controlPlane: { desired: 1, ready: 0, updated: 0, replicas: 1 },
    workers: { desired: 3, ready: 0, updated: 0, replicas: 0 },
    steps: [{ name: "ControlPlane demo-cp-0", startedAt: at, outcome: "Running" }],
  });
  it("are a step started or ended, a machine counted, a message", () => {
    const next = status();
    next.workers = { desired: 3, ready: 1, updated: 1, replicas: 3 };
    next.steps = [{ name: "ControlPlane demo-cp-0", startedAt: at, finishedAt: at, outcome: "Succeeded" }, { name: "Worker demo-w-0", startedAt: at, outcome: "Running" }];
    next.conditions![0]!.message = "waiting for worker machines";
    assert.equal(clusterProgressOnly(status(), next), true);
  });
  it("are not a phase, a condition's status or reason, a failed step, a remediation record", () => {
    const changes: ((s: NonNullable<ClusterObject["status"]>) => void)[] = [
      (s) => void (s.phase = "Running"),
      (s) => void (s.conditions![0]!.reason = "Retrying"),
      (s) => void s.conditions!.push({ type: "ControlPlaneInitialized", status: "True", reason: "Initialized", lastTransitionTime: at }),
      (s) => void (s.steps = [{ name: "ControlPlane demo-cp-0", startedAt: at, finishedAt: at, outcome: "Failed", message: "boot failed" }]),
      (s) => void (s.controlPlane = { ...s.controlPlane!, remediation: { replacedAt: [at] } as never }),
      (s) => void (s.observedGeneration = 2),
    ];
    for (const change of changes) {
      const next = status();
      change(next);
      assert.equal(clusterProgressOnly(status(), next), false, JSON.stringify(next));
    }
  });
});

describe("the cluster's nodes", () => {
  const machine = (name: string, role: string, status: Record<string, unknown>, deleting = false) =>
    ({ apiVersion: "slipway.dev/v1alpha1", kind: "Machine", metadata: { name, namespace: "default", ...(deleting ? { deletionTimestamp: "2026-11-26T10:00:00Z" } : {}) }, spec: { role, clusterName: "demo" }, status }) as unknown as MachineObject;

  it("lists each node with its role, machine, readiness and kubelet version, control plane first, and none of machines gone or without a node", () => {
    const nodes = nodesOf([
      machine("demo-work-1", "worker", { nodeName: "demo-work-1", nodeReady: false, kubeletVersion: "v1.31.2" }),
      machine("demo-cp-0", "control-plane", { nodeName: "demo-cp-0", nodeReady: true, kubeletVersion: "v1.31.2" }),
      machine("demo-work-2", "worker", { phase: "Provisioning" }),
      machine("demo-work-0", "worker", { nodeName: "demo-work-0", nodeReady: true }, true),
    ]);
    assert.deepEqual(nodes, [
      { name: "demo-cp-0", role: "control-plane", machine: "demo-cp-0", ready: true, version: "v1.31.2" },
      { name: "demo-work-1", role: "worker", machine: "demo-work-1", ready: false, version: "v1.31.2" },
    ]);
  });
});

describe("worker machines a cluster wants", () => {
  it("counts declared pools from the spec, an externally scaled one and adopted ones from their own replicas", () => {
    const declared = pool();
    assert.equal(desiredWorkerMachines(scope(cluster(3), [], [declared])), 3);
    const external = { ...declared, metadata: { ...declared.metadata, annotations: { "cluster.x-k8s.io/replicas-managed-by": "autoscaler" } }, spec: { ...declared.spec, replicas: 5 } };
    assert.equal(desiredWorkerMachines(scope(cluster(3), [], [external])), 5);
    const adopted = { ...declared, metadata: { name: "batch", namespace: "default", uid: "p-2" }, spec: { ...declared.spec, replicas: 4 } };
    assert.equal(desiredWorkerMachines(scope(cluster(3), [], [declared, adopted])), 7);
  });

  it("is Ready with an adopted pool's machines Ready too", () => {
    const adopted: MachinePoolObject = { ...pool(), metadata: { name: "batch", namespace: "default", uid: "p-2", generation: 1 }, spec: { ...pool().spec, replicas: 1 } };
    const s = scope(cluster(), [controlPlane(0), worker(0), worker(1), running(poolMachine(adopted, 0))], [pool(), adopted]);
    summarizeCluster(ctx, s, undefined);
    assert.deepEqual(s.object.status?.workers, { desired: 3, ready: 3, updated: 3, replicas: 3 });
    assert.equal(condition(s.object, "Ready")?.status, "True");
  });
});
