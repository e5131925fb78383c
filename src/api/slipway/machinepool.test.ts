import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MachinePoolSpecSchema, machinePoolKind, type MachinePoolObject } from "./machinepool.ts";
import { admit, admitted, cell, manifest } from "../testing.ts";

function pool(spec: Partial<MachinePoolObject["spec"]> = {}): MachinePoolObject {
  return manifest(machinePoolKind, "demo-general", { clusterName: "demo", connection: "sim-east", machineType: "m.medium", ...spec });
}

describe("MachinePool", () => {
  it("defaults to one machine of the default image", () => {
    const object = admitted(machinePoolKind, pool());
    assert.equal(object.spec.replicas, 1);
    assert.equal(object.spec.image, "ubuntu-22.04");
  });

  it("accepts zero to 1000 replicas (the cluster's limit for a worker pool) and refuses others naming spec.replicas", () => {
    assert.deepEqual(admit(machinePoolKind, pool({ replicas: 0 })).schemaErrors, []);
    assert.deepEqual(admit(machinePoolKind, pool({ replicas: 1000 })).schemaErrors, []);
    assert.deepEqual(admit(machinePoolKind, pool({ replicas: -1 })).schemaErrors.map(([p]) => p), ["/spec/replicas"]);
    assert.deepEqual(admit(machinePoolKind, pool({ replicas: 1001 })).schemaErrors.map(([p]) => p), ["/spec/replicas"]);
  });

  it("defaults its selector to the cluster and pool labels of its machines, and no minimum ready time", () => {
    const { object, errors } = admit(machinePoolKind, pool());
    assert.deepEqual(errors, []);
    assert.deepEqual(object.spec.selector, { matchLabels: { "slipway.dev/cluster": "demo", "slipway.dev/pool": "demo-general" } });
    assert.equal(object.spec.minReadySeconds, 0);
    // A narrower selector of the same machines is fine; one that does not choose them is refused.
    const byRole = admit(machinePoolKind, pool({ selector: { matchExpressions: [{ key: "slipway.dev/role", operator: "In", values: ["worker"] }] } }));
    assert.deepEqual(byRole.errors, []);
    const other = admit(machinePoolKind, pool({ selector: { matchLabels: { "slipway.dev/pool": "other" } } }));
    assert.deepEqual(other.errors.map((e) => e.field), ["spec.selector"]);
    assert.match(other.errors[0]!.message, /must select the pool's machines, which carry slipway\.dev\/cluster=demo, slipway\.dev\/pool=demo-general, slipway\.dev\/role=worker/);
    assert.deepEqual(admit(machinePoolKind, pool({ minReadySeconds: -1 })).schemaErrors.map(([p]) => p), ["/spec/minReadySeconds"]);
  });

  it("refuses an unknown phase", () => {
    const input = { ...pool(), status: { phase: "Resizing" } };
    assert.deepEqual(admit(machinePoolKind, input).schemaErrors.map(([p]) => p), ["/status/phase"]);
  });

  it("checks labels and taints", () => {
    const errors = admit(machinePoolKind, pool({ labels: { "bad key": "x" }, taints: [{ key: "-x", effect: "NoSchedule" }] })).errors;
    assert.deepEqual(errors.map((e) => e.field), ["spec.labels", "spec.taints[0].key"]);
  });

  it("can be scaled, re-typed, re-imaged and re-labelled (its machines roll), but not moved to another cluster or connection", () => {
    const old = admit(machinePoolKind, pool()).object;
    const changed = { replicas: 5, machineType: "m.large", image: "ubuntu-24.04", labels: { tier: "web" }, taints: [{ key: "gpu", effect: "NoSchedule" as const }], strategy: { maxSurge: 2, maxUnavailable: 1 }, maxUnhealthy: "50%", version: "v1.31.2", minReadySeconds: 30, providerIDList: ["sim://sim-east-1/i-1"] };
    assert.deepEqual(admit(machinePoolKind, { ...old, spec: { ...old.spec, ...changed } }, old).errors, []);
    const upgraded = admit(machinePoolKind, { ...old, spec: { ...old.spec, version: "v1.31.2" } }, old).object;
    const downgraded = admit(machinePoolKind, { ...upgraded, spec: { ...upgraded.spec, version: "v1.30.4" } }, upgraded);
    assert.match(downgraded.errors.map((e) => `${e.field}: ${e.message}`).join(), /spec.version: .*version skew rule "no downgrade"/);
    // Every field of the spec is either applied above or refused below.
    assert.deepEqual(Object.keys(MachinePoolSpecSchema.properties).sort(), ["clusterName", "connection", "selector", "template", ...Object.keys(changed)].sort());
    const moved = admit(machinePoolKind, { ...old, spec: { ...old.spec, clusterName: "other", connection: "sim-west" } }, old);
    assert.deepEqual(moved.errors.map((e) => e.field), ["spec.selector", "spec.clusterName", "spec.connection"]);
    assert.match(moved.errors[2]!.message, /field is immutable: a pool cannot move to another connection/);
    const stuck = admit(machinePoolKind, { ...old, spec: { ...old.spec, strategy: { maxSurge: 0, maxUnavailable: 0 } } }, old);
    assert.deepEqual(stuck.errors.map((e) => e.field), ["spec.strategy.maxSurge"]);
  });

  it("takes a template naming a SimMachinePool and a BootstrapConfig, refuses other kinds naming the field, and keeps the references", () => {
    const ref = (kind: string, name: string) => ({ apiVersion: "slipway.dev/v1alpha1", kind, name });
    const template = { infrastructureRef: ref("SimMachinePool", "w-set"), bootstrap: { configRef: ref("BootstrapConfig", "w-join") } };
    const old = admit(machinePoolKind, { ...pool(), spec: { ...pool().spec, template } });
    assert.deepEqual(old.errors, []);
    const unknown = admit(machinePoolKind, { ...pool(), spec: { ...pool().spec, template: { ...template, infrastructureRef: ref("AWSMachinePool", "x"), bootstrap: { configRef: { ...ref("BootstrapConfig", "y"), apiVersion: "v1" } } } } });
    assert.deepEqual(unknown.errors.map((e) => e.field), ["spec.template.infrastructureRef.kind", "spec.template.bootstrap.configRef.apiVersion"]);
    assert.match(unknown.errors[0]!.message, /Unsupported value: "AWSMachinePool": supported values: "SimMachinePool"/);
    // The pool keeps its scale set: another reference, or none, is refused; the copied data's Secret may change.
    const swapped = admit(machinePoolKind, { ...old.object, spec: { ...old.object.spec, template: { ...template, infrastructureRef: ref("SimMachinePool", "other") } } }, old.object);
    assert.deepEqual(swapped.errors.map((e) => e.field), ["spec.template.infrastructureRef"]);
    const dropped = admit(machinePoolKind, { ...old.object, spec: { ...old.object.spec, template: undefined } }, old.object);
    assert.deepEqual(dropped.errors.map((e) => e.field), ["spec.template"]);
    const copied = admit(machinePoolKind, { ...old.object, spec: { ...old.object.spec, template: { ...template, bootstrap: { ...template.bootstrap, dataSecretName: "w-join-bootstrap-data" } } } }, old.object);
    assert.deepEqual(copied.errors, []);
  });

  it("takes maxUnhealthy as a number or a percentage, and refuses anything else naming the field", () => {
    for (const maxUnhealthy of [0, 2, "0%", "40%", "100%"]) assert.deepEqual(admit(machinePoolKind, pool({ maxUnhealthy })).errors, [], String(maxUnhealthy));
    for (const maxUnhealthy of [-1, 1.5, "40", "forty%", "101%", "4.5%", true, { percent: 40 }] as unknown as (number | string)[]) {
      const errors = admit(machinePoolKind, pool({ maxUnhealthy })).errors;
      assert.deepEqual(errors.map((e) => e.field), ["spec.maxUnhealthy"], String(maxUnhealthy));
    }
    assert.match(admit(machinePoolKind, pool({ maxUnhealthy: "40" })).errors[0]!.message, /a number of machines or a percentage such as "40%"/);
  });

  it("shows desired, existing, ready, available and updated replicas and the phase, as Cluster API's columns", () => {
    const p = admit(machinePoolKind, pool({ replicas: 3 })).object;
    assert.deepEqual(["DESIRED", "REPLICAS", "READY", "AVAILABLE", "UPDATED"].map((name) => cell(machinePoolKind, name, p)), [3, 0, 0, 0, 0]);
    p.status = { phase: "ScalingUp", replicas: 3, readyReplicas: 2, availableReplicas: 1, updatedReplicas: 3 };
    assert.deepEqual(
      ["NAME", "CLUSTER", "DESIRED", "REPLICAS", "READY", "AVAILABLE", "UPDATED", "PHASE", "MACHINETYPE", "CONNECTION"].map((name) => cell(machinePoolKind, name, p)),
      ["demo-general", "demo", 3, 3, 2, 1, 3, "ScalingUp", "m.medium", "sim-east"],
    );
    assert.deepEqual(
      machinePoolKind.printerColumns.map((c) => [c.name, c.priority ?? 0]),
      [["NAME", 0], ["CLUSTER", 0], ["DESIRED", 0], ["REPLICAS", 0], ["READY", 0], ["AVAILABLE", 0], ["UPDATED", 0], ["PHASE", 0], ["AGE", 0], ["MACHINETYPE", 1], ["CONNECTION", 1]],
    );
  });
});
