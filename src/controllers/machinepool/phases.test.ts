import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { deletionPreference, lowestFreeIndexes, machineIndex, planPool, poolMachine, scaleDownVictims, type MachinePoolScope } from "./phases.ts";
import { poolTemplate } from "./template.ts";

function machine(index: number, phase: "Pending" | "Provisioning" | "Running" | "Failed"): MachineObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: { name: `demo-w-${index}`, namespace: "default" },
    spec: { clusterName: "demo", role: "worker", connection: "east", machineType: "s1.medium", pool: "demo-w" },
    status: { phase, ...(phase === "Running" ? { nodeReady: true, bootstrapped: true } : {}) },
  };
}

describe("machine pool phases", () => {
  it("reads the index of a pool machine's name and nothing else", () => {
    assert.equal(machineIndex("demo-w", "demo-w-12"), 12);
    assert.equal(machineIndex("demo-w", "demo-w-0"), 0);
    assert.equal(machineIndex("demo-w", "demo-w-x-1"), undefined);
    assert.equal(machineIndex("demo-w", "demo-w-01"), undefined);
    assert.equal(machineIndex("demo", "demo-w-1"), undefined);
  });

  it("fills the lowest free indexes first", () => {
    assert.deepEqual(lowestFreeIndexes(new Set([0, 2, 3]), 3), [1, 4, 5]);
    assert.deepEqual(lowestFreeIndexes(new Set(), 2), [0, 1]);
  });

  it("scales down failed machines first, then those not Running, then the highest index", () => {
    const machines = [machine(0, "Running"), machine(1, "Running"), machine(2, "Provisioning"), machine(3, "Running"), machine(4, "Failed")];
    assert.deepEqual(deletionPreference("demo-w", machines).map((m) => m.metadata.name), ["demo-w-4", "demo-w-3", "demo-w-2", "demo-w-1", "demo-w-0"]);
    const pool = (replicas: number): MachinePoolObject => ({
      apiVersion: "slipway.dev/v1alpha1",
      kind: "MachinePool",
      metadata: { name: "demo-w", namespace: "default", uid: "p-1" },
      spec: { clusterName: "demo", connection: "east", machineType: "s1.medium", replicas },
    });
    const victims = (replicas: number) => {
      const object = pool(replicas);
      const scope: MachinePoolScope = { original: object, object, timings: { pollMs: 10 }, machines, listMachines: async () => machines, deleted: new Set() };
      return planPool(scope).delete;
    };
    assert.deepEqual(victims(4), ["demo-w-4"], "the failed one is replaced");
    // As a plan of the change names them, before it is made.
    const names = (n: number) => scaleDownVictims("demo-w", machines, n).map((m) => m.metadata.name);
    assert.deepEqual(names(1), ["demo-w-4"]);
    assert.deepEqual(names(2), ["demo-w-4", "demo-w-2"]);
    assert.deepEqual(names(4), ["demo-w-4", "demo-w-2", "demo-w-3", "demo-w-1"]);
    assert.deepEqual(names(0), []);
    assert.deepEqual(victims(3), ["demo-w-4", "demo-w-2"]);
    assert.deepEqual(victims(1), ["demo-w-4", "demo-w-2", "demo-w-3", "demo-w-1"]);
  });

  it("rolls machines made from another template: a new one first, the old ones once it serves", () => {
    const pool: MachinePoolObject = {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "MachinePool",
      metadata: { name: "demo-w", namespace: "default", uid: "p-1" },
      spec: { clusterName: "demo", connection: "east", machineType: "s1.large", replicas: 2 },
    };
    // Machines made before template hashes were recorded are judged by machine type and image.
    const old = [machine(0, "Running"), machine(1, "Running")];
    const scope: MachinePoolScope = { original: pool, object: pool, timings: { pollMs: 10 }, machines: old, listMachines: async () => old, deleted: new Set() };
    assert.deepEqual([planPool(scope).create, planPool(scope).delete], [1, []]);
    const fresh = poolMachine(pool, 2);
    scope.machines = [...old, { ...fresh, status: { phase: "Running", nodeReady: true } }];
    assert.deepEqual(planPool(scope).delete, ["demo-w-1"]);
    // With minReadySeconds the new machine serves once Ready that long, as a Deployment's pods: the old one waits until then.
    const patient = { ...pool, spec: { ...pool.spec, minReadySeconds: 30 } };
    const nodeReady = { type: "NodeReady", status: "True" as const, reason: "NodeReady", lastTransitionTime: "2025-01-01T00:00:00Z" };
    const rolling = { ...scope, object: patient, machines: [...old, { ...fresh, status: { phase: "Running" as const, nodeReady: true, conditions: [nodeReady] } }] };
    const readyAt = Date.parse(nodeReady.lastTransitionTime);
    assert.deepEqual(planPool(rolling, true, readyAt + 29_999).delete, []);
    assert.deepEqual(planPool(rolling, true, readyAt + 30_000).delete, ["demo-w-1"]);
    // The same machine type, image, labels and taints: nothing to roll.
    const same = { ...pool, spec: { ...pool.spec, machineType: "s1.medium" } };
    assert.deepEqual(planPool({ ...scope, object: same, machines: old }), { create: 0, delete: [], updated: 2, updatedAvailable: 2, outdated: 0, complete: true });
    const labelled = { ...pool, spec: { ...pool.spec, machineType: "s1.medium", labels: { tier: "web" } } };
    const labelledOld = old.map((m) => ({ ...m, metadata: { ...m.metadata, labels: { "slipway.dev/template-hash": poolTemplate(same.spec).hash } } }));
    assert.equal(planPool({ ...scope, object: labelled, machines: labelledOld }).outdated, 2, "a label change rolls machines that record their template");
  });

  it("makes worker machines owned and labelled by the pool", () => {
    const pool: MachinePoolObject = {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "MachinePool",
      metadata: { name: "demo-w", namespace: "default", uid: "p-1" },
      spec: { clusterName: "demo", connection: "east", machineType: "s1.large", image: "ubuntu-24.04", replicas: 2 },
    };
    const made = poolMachine(pool, 3);
    assert.equal(made.metadata.name, "demo-w-3");
    assert.deepEqual(made.metadata.labels, {
      "slipway.dev/cluster": "demo",
      "slipway.dev/pool": "demo-w",
      "slipway.dev/role": "worker",
      "slipway.dev/template-hash": poolTemplate(pool.spec).hash,
    });
    assert.deepEqual(made.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]), [["MachinePool", "demo-w", "p-1", true]]);
    assert.deepEqual(made.spec, { clusterName: "demo", role: "worker", connection: "east", machineType: "s1.large", image: "ubuntu-24.04", pool: "demo-w" });
  });
});
