import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { MachineObject } from "../../api/kinds.ts";
import { getCondition } from "../../runtime/conditions.ts";
import { InternalReconcileError } from "../../runtime/failures.ts";
import { ANNOTATION_BOOTSTRAP } from "../../api/slipway/machine.ts";
import {
  BOOTSTRAP_READY,
  INSTANCE_READY,
  LOAD_BALANCER_TARGET,
  NODE_JOINED,
  NODE_READY,
  bootstrapFailureReason,
  createFailure,
  kubeadmFailure,
  kubeadmRetrying,
  machinePhase,
  summarizeMachine,
} from "./status.ts";

const NOW = "2025-01-01T00:00:00Z";

function machine(overrides: { role?: "control-plane" | "worker"; init?: boolean; status?: MachineObject["status"]; deleting?: boolean } = {}): MachineObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: {
      name: "demo-cp-0",
      namespace: "default",
      uid: "u-1",
      ...(overrides.init ? { annotations: { [ANNOTATION_BOOTSTRAP]: "init" } } : {}),
      ...(overrides.deleting ? { deletionTimestamp: NOW } : {}),
    },
    spec: { clusterName: "demo", role: overrides.role ?? "worker", connection: "east", machineType: "s1.medium" },
    ...(overrides.status ? { status: overrides.status } : {}),
  };
}

const trueCondition = (type: string) => ({ type, status: "True" as const, reason: "Ok", lastTransitionTime: NOW });

describe("machine status", () => {
  it("reads kubeadm's failure from the console, without the cloud's timestamps, with its detail lines", () => {
    const console = [
      "2025-01-01T00:00:01Z cloud-init: running kubeadm join",
      "2025-01-01T00:00:02Z error execution phase preflight: [preflight] Some fatal errors occurred:",
      "2025-01-01T00:00:02Z \t[ERROR Config]: bad token",
      "2025-01-01T00:00:02Z \t[ERROR Config]: bad hash",
      "2025-01-01T00:00:02Z To see the stack trace of this error execute with --v=5 or higher",
    ];
    assert.equal(
      kubeadmFailure(console),
      "error execution phase preflight: [preflight] Some fatal errors occurred: [ERROR Config]: bad token [ERROR Config]: bad hash",
    );
    assert.equal(kubeadmFailure(["2025-01-01T00:00:01Z [discovery] the API server does not answer yet; retrying"]), undefined);
  });

  it("reads the endpoint kubeadm join cannot reach from its last discovery retry", () => {
    const endpoint = "api.c.sim-east-1.sim.slipway.internal:6443";
    const console = [
      `2025-01-01T00:00:01Z [discovery] Failed to request cluster-info, will try again: Get "https://${endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info": dial tcp ${endpoint}: connect: connection refused`,
      `2025-01-01T00:00:06Z [discovery] Failed to request cluster-info, will try again: Get "https://${endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info": dial tcp ${endpoint}: i/o timeout`,
    ];
    assert.equal(kubeadmRetrying(console), `kubeadm cannot reach the control-plane endpoint: Get "https://${endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info": dial tcp ${endpoint}: i/o timeout`);
    assert.equal(kubeadmRetrying(["2025-01-01T00:00:01Z cloud-init: running kubeadm join"]), undefined);
  });

  it("reads a kubeadm that was never installed as a failure, with apt's errors", () => {
    const console = [
      "2025-01-01T00:00:01Z E: Unable to locate package kubelet",
      "2025-01-01T00:00:01Z cc_package_update_upgrade_install.py[WARNING]: failed to install packages: containerd kubelet=1.31.2-*",
      "2025-01-01T00:00:02Z /var/lib/cloud/instance/scripts/runcmd: 11: kubeadm: not found",
    ];
    assert.equal(kubeadmFailure(console), "kubeadm is not installed on the machine: /var/lib/cloud/instance/scripts/runcmd: 11: kubeadm: not found E: Unable to locate package kubelet");
  });

  it("names a bootstrap failure by what the machine was doing", () => {
    assert.equal(bootstrapFailureReason(machine({ role: "control-plane", init: true })), "ControlPlaneInitFailed");
    assert.equal(bootstrapFailureReason(machine({ role: "control-plane" })), "JoinControlPlaneFailed");
    assert.equal(bootstrapFailureReason(machine({ role: "worker" })), "JoinWorkerFailed");
  });

  it("derives the phase from how far the machine got", () => {
    assert.equal(machinePhase(machine()), "Pending");
    assert.equal(machinePhase(machine({ status: { instanceId: "i-1" } })), "Provisioning");
    assert.equal(machinePhase(machine({ status: { instanceId: "i-1", bootstrapped: true } })), "Provisioned");
    assert.equal(machinePhase(machine({ status: { instanceId: "i-1", bootstrapped: true, nodeReady: true } })), "Running");
    assert.equal(machinePhase(machine({ status: { instanceId: "i-1", failureReason: "BootFailed" } })), "Failed");
    assert.equal(machinePhase(machine({ deleting: true, status: { instanceId: "i-1", nodeReady: true } })), "Deleting");
  });

  it("reports a refused create as Failed but retryable (no failure reason: the owner keeps the machine)", () => {
    const refused = machine({ status: { conditions: [{ type: INSTANCE_READY, status: "False", reason: "QuotaExceeded", message: "vCPU quota", lastTransitionTime: NOW }] } });
    assert.deepEqual(createFailure(refused), { reason: "QuotaExceeded", message: "vCPU quota" });
    assert.equal(machinePhase(refused), "Failed");
    assert.equal(refused.status?.failureReason, undefined);
  });

  it("shows a step that failed with an unexpected error on Ready, without failing the machine for good", () => {
    const m = machine({ status: { instanceId: "i-1", conditions: [trueCondition(BOOTSTRAP_READY), trueCondition(INSTANCE_READY)] } });
    summarizeMachine(m, NOW, new InternalReconcileError("observeNode", 5, new TypeError("node.status is undefined")));
    const ready = getCondition(m.status?.conditions, "Ready");
    assert.deepEqual([ready?.status, ready?.reason], ["False", "InternalError"]);
    assert.match(ready?.message ?? "", /please report it/);
    assert.equal(m.status?.failureReason, undefined, "its owner does not replace it: a new machine would meet the same defect");
    assert.equal(m.status?.phase, "Provisioning");
  });

  it("is Ready only when every stage is, and shows the failure as Ready's reason", () => {
    const worker = machine({
      status: { instanceId: "i-1", bootstrapped: true, nodeReady: true, conditions: [BOOTSTRAP_READY, INSTANCE_READY, NODE_JOINED, NODE_READY].map(trueCondition) },
    });
    summarizeMachine(worker, NOW);
    assert.equal(getCondition(worker.status?.conditions, "Ready")?.status, "True");
    assert.equal(worker.status?.phase, "Running");

    // A control-plane machine also needs its load balancer target.
    const cp = machine({ role: "control-plane", status: structuredClone(worker.status) });
    summarizeMachine(cp, NOW);
    assert.equal(getCondition(cp.status?.conditions, "Ready")?.status, "Unknown");
    assert.equal(getCondition(cp.status?.conditions, "Ready")?.reason, `${LOAD_BALANCER_TARGET}NotReported`);

    worker.status!.failureReason = "JoinWorkerFailed";
    worker.status!.failureMessage = "error execution phase preflight: token invalid";
    summarizeMachine(worker, NOW);
    const ready = getCondition(worker.status?.conditions, "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, "JoinWorkerFailed");
    assert.match(ready?.message ?? "", /token invalid/);
    assert.equal(worker.status?.phase, "Failed");
  });
});
