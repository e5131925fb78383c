import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { InfrastructureObject } from "../../api/kinds.ts";
import { getCondition, setCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import { InternalReconcileError } from "../../runtime/failures.ts";
import {
  mayHaveCloudResources,
  readyForMachines,
  collapseRepeats,
  statusEvents,
  stepFailed,
  stepInProgress,
  stepReady,
  summarizeInfrastructure,
  type Status,
} from "./status.ts";

const T0 = "2025-01-01T00:00:00Z";
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
const TEN_MINUTES = 600_000;

function infra(status: Status = {}, extra: { controlPlane?: boolean; deleting?: boolean } = {}): InfrastructureObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Infrastructure",
    metadata: { name: "demo-east", namespace: "default", generation: 1, ...(extra.deleting ? { deletionTimestamp: T0 } : {}) },
    spec: { clusterName: "demo", connection: "east", region: "sim-east-1", nodeCIDR: "10.0.0.0/20", controlPlane: extra.controlPlane ?? true },
    status,
  };
}

function contextAt(seconds: number): ReconcileContext {
  return { clock: { now: () => Date.parse(at(seconds)), setTimer: () => () => {} } } as unknown as ReconcileContext;
}

function allReady(status: Status, kinds: ("network" | "subnet" | "securityGroup" | "keyPair" | "loadBalancer")[]): void {
  setCondition(status, { type: "CatalogResolved", status: "True", reason: "Resolved" }, T0);
  for (const kind of kinds) stepReady(status, kind, `${kind} is ready`, T0);
}

describe("step deadlines", () => {
  it("start when the step starts and fail it with DeadlineExceeded once passed", () => {
    const status: Status = {};
    assert.equal(stepInProgress(status, "network", "Creating", "waiting", T0, TEN_MINUTES).state, "waiting");
    assert.equal(stepInProgress(status, "network", "Retrying", "retrying: boom", at(599), TEN_MINUTES).state, "waiting");
    const condition = getCondition(status.conditions, "NetworkReady");
    assert.equal(condition?.lastTransitionTime, T0, "retries do not restart the clock");
    assert.equal(condition?.reason, "Retrying");

    assert.equal(stepInProgress(status, "network", "Creating", "waiting for network vpc-1", at(601), TEN_MINUTES).state, "expired");
    const expired = getCondition(status.conditions, "NetworkReady");
    assert.equal(expired?.status, "False");
    assert.equal(expired?.reason, "DeadlineExceeded");
    assert.match(expired?.message ?? "", /not ready within 600 s: waiting for network vpc-1/);

    // Still expired on the next look, until the resource is ready.
    assert.equal(stepInProgress(status, "network", "Creating", "waiting", at(700), TEN_MINUTES).state, "expired");
    stepReady(status, "network", "network vpc-1 is ready", at(710));
    assert.equal(getCondition(status.conditions, "NetworkReady")?.status, "True");
    assert.equal(getCondition(status.conditions, "NetworkReady")?.lastTransitionTime, at(710));
  });

  it("start again after a permanent failure was fixed", () => {
    const status: Status = {};
    stepInProgress(status, "loadBalancer", "Creating", "waiting", T0, TEN_MINUTES);
    stepFailed(status, "loadBalancer", "quota exceeded", at(60));
    assert.equal(getCondition(status.conditions, "LoadBalancerReady")?.reason, "CreateLoadBalancerFailed");
    // An hour later the quota was raised: a fresh clock, not an instant DeadlineExceeded.
    assert.equal(stepInProgress(status, "loadBalancer", "Creating", "waiting", at(3600), TEN_MINUTES).state, "waiting");
    assert.equal(getCondition(status.conditions, "LoadBalancerReady")?.lastTransitionTime, at(3600));
  });
});

describe("summarizeInfrastructure", () => {
  it("is Pending before anything started and Provisioning while resources are on their way", () => {
    const pending = infra();
    summarizeInfrastructure(contextAt(0), { original: pending, object: pending }, undefined);
    assert.equal(pending.status?.phase, "Pending");
    assert.equal(pending.status?.ready, false);

    const provisioning = infra();
    setCondition(provisioning.status!, { type: "CatalogResolved", status: "True", reason: "Resolved" }, T0);
    stepInProgress(provisioning.status!, "network", "Creating", "waiting for network vpc-1 to be ready (pending)", T0, TEN_MINUTES);
    summarizeInfrastructure(contextAt(1), { original: provisioning, object: provisioning }, new Error("cloud hiccup"));
    assert.equal(provisioning.status?.phase, "Provisioning");
    assert.match(provisioning.status?.message ?? "", /vpc-1/);
    assert.match(provisioning.status?.message ?? "", /retrying after: cloud hiccup/);
    assert.equal(getCondition(provisioning.status?.conditions, "Ready")?.status, "Unknown");
  });

  it("is Failed with the failing step's reason and message", () => {
    const failed = infra();
    setCondition(failed.status!, { type: "CatalogResolved", status: "True", reason: "Resolved" }, T0);
    stepReady(failed.status!, "network", "ready", T0);
    stepFailed(failed.status!, "subnet", "subnet.cidr overlaps", T0);
    summarizeInfrastructure(contextAt(1), { original: failed, object: failed }, undefined);
    assert.equal(failed.status?.phase, "Failed");
    assert.equal(failed.status?.reason, "CreateSubnetFailed");
    assert.equal(failed.status?.message, "subnet.cidr overlaps");
    assert.equal(getCondition(failed.status?.conditions, "Ready")?.status, "False");
  });

  it("is Failed with InternalError once a step failed with an unexpected error", () => {
    const broken = infra();
    stepInProgress(broken.status!, "network", "Creating", "creating", T0, TEN_MINUTES);
    const error = new InternalReconcileError("ensureNetwork", 5, new TypeError("cidr.split is not a function"));
    summarizeInfrastructure(contextAt(1), { original: broken, object: broken }, error);
    assert.deepEqual([broken.status?.phase, broken.status?.reason], ["Failed", "InternalError"]);
    assert.match(broken.status?.message ?? "", /^step ensureNetwork failed 5 times in a row with an unexpected error: TypeError: cidr\.split is not a function\. This is a defect in Slipway: please report it/);
  });

  it("is Ready when every resource is, and needs a load balancer only in the control plane's connection", () => {
    const worker = infra({}, { controlPlane: false });
    allReady(worker.status!, ["network", "subnet", "securityGroup", "keyPair"]);
    summarizeInfrastructure(contextAt(1), { original: worker, object: worker }, undefined);
    assert.equal(worker.status?.phase, "Ready");
    assert.equal(worker.status?.ready, true);

    const controlPlane = infra({}, { controlPlane: true });
    allReady(controlPlane.status!, ["network", "subnet", "securityGroup", "keyPair"]);
    summarizeInfrastructure(contextAt(1), { original: controlPlane, object: controlPlane }, undefined);
    assert.equal(controlPlane.status?.phase, "Provisioning");
    assert.match(controlPlane.status?.message ?? "", /LoadBalancerReady/);
  });

  it("is Deleting once deletion was asked for", () => {
    const deleting = infra({ message: "waiting for load balancer lb-1 to be deleted" }, { deleting: true });
    allReady(deleting.status!, ["network", "subnet", "securityGroup", "keyPair", "loadBalancer"]);
    summarizeInfrastructure(contextAt(1), { original: deleting, object: deleting }, undefined);
    assert.equal(deleting.status?.phase, "Deleting");
    assert.equal(deleting.status?.ready, false);
    assert.equal(getCondition(deleting.status?.conditions, "Ready")?.message, "waiting for load balancer lb-1 to be deleted");
  });
});

describe("statusEvents", () => {
  it("tells what became ready or failed, once", () => {
    const before: Status = {};
    stepInProgress(before, "network", "Creating", "waiting", T0, TEN_MINUTES);
    const after: Status = structuredClone(before);
    stepReady(after, "network", "network vpc-1 is ready", at(1));
    stepFailed(after, "keyPair", "the key is not valid", at(1));
    after.phase = "Failed";
    assert.deepEqual(statusEvents(before, after), [
      { type: "Normal", reason: "NetworkReady", message: "network vpc-1 is ready" },
      { type: "Warning", reason: "CreateKeyPairFailed", message: "the key is not valid" },
    ]);
    assert.deepEqual(statusEvents(after, structuredClone(after)), []);
  });

  it("announces the infrastructure Ready when its phase becomes Ready", () => {
    const events = statusEvents({ phase: "Provisioning" }, { phase: "Ready" });
    assert.deepEqual(events.map((e) => e.reason), ["InfrastructureReady"]);
  });
});

describe("collapseRepeats", () => {
  it("records an event said several times in one reconcile once, saying how many times", () => {
    const creating = { type: "Normal" as const, reason: "CreatingSubnet", message: "creating the subnet" };
    const network = { type: "Normal" as const, reason: "NetworkReady", message: "network net-1 is ready" };
    assert.deepEqual(collapseRepeats([network, creating, creating, creating]), [network, { ...creating, message: "creating the subnet (×3)" }]);
    assert.deepEqual(collapseRepeats([creating, { ...creating, type: "Warning" }]), [creating, { ...creating, type: "Warning" }]);
  });
});

describe("mayHaveCloudResources", () => {
  it("is false until a step that makes resources was recorded", () => {
    assert.equal(mayHaveCloudResources(undefined), false);
    const status: Status = {};
    setCondition(status, { type: "CatalogResolved", status: "False", reason: "ValidationFailed" }, T0);
    assert.equal(mayHaveCloudResources(status), false);
    stepInProgress(status, "network", "Pending", "the network is made next", T0, TEN_MINUTES);
    assert.equal(mayHaveCloudResources(status), true);
    assert.equal(mayHaveCloudResources({ keyPairId: "key-1" }), true);
  });
});

describe("readyForMachines", () => {
  const provisioned = (kinds: string[]) => kinds.map((type) => ({ type, status: "True" as const, lastTransitionTime: T0 }));
  const base = provisioned(["CatalogResolved", "NetworkReady", "SubnetReady", "SecurityGroupReady", "KeyPairReady"]);
  const lb = { id: "lb-1", host: "demo-api-1.sim-east-1.lb.simcloud.internal", port: 6443 };
  const provisioning = { type: "LoadBalancerReady", status: "Unknown" as const, reason: "Provisioning", lastTransitionTime: T0 };

  it("lets machines be made while the load balancer is provisioned, once its address is known", () => {
    assert.equal(readyForMachines(infra({ loadBalancer: lb, conditions: [...base, provisioning] })), true);
    assert.equal(readyForMachines(infra({ ready: true, loadBalancer: lb, conditions: base })), true);
  });

  it("waits for everything else, for the load balancer's address, and not past a failure or a deletion", () => {
    assert.equal(readyForMachines(infra({ conditions: [...base, provisioning] })), false);
    assert.equal(readyForMachines(infra({ loadBalancer: lb, conditions: [...base.filter((c) => c.type !== "SubnetReady"), provisioning] })), false);
    assert.equal(readyForMachines(infra({ loadBalancer: lb, conditions: [...base, { ...provisioning, status: "False", reason: "CreateLoadBalancerFailed" }] })), false);
    assert.equal(readyForMachines(infra({ loadBalancer: lb, conditions: [...base, provisioning] }, { deleting: true })), false);
    assert.equal(readyForMachines(infra({ conditions: base }, { controlPlane: false })), false);
    assert.equal(readyForMachines(infra({ ready: true, conditions: base }, { controlPlane: false })), true);
  });
});
