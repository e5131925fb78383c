import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { isMachineReady, machineKind, type MachineObject } from "./machine.ts";
import { admit, admitted, cell, manifest } from "../testing.ts";

function machine(spec: Partial<MachineObject["spec"]> = {}): MachineObject {
  return manifest(machineKind, "demo-general-x7k2p", { clusterName: "demo", role: "worker", connection: "sim-east", machineType: "m.medium", pool: "demo-general", ...spec });
}

describe("Machine", () => {
  it("accepts a worker and a control-plane machine", () => {
    admitted(machineKind, machine());
    admitted(machineKind, machine({ role: "control-plane", pool: undefined }));
  });

  it("refuses an unknown role and an unknown address type", () => {
    assert.deepEqual(admit(machineKind, machine({ role: "etcd" as "worker" })).schemaErrors.map(([p]) => p), ["/spec/role"]);
    const input = { ...machine(), status: { addresses: [{ type: "PublicIP", address: "203.0.113.9" }] } };
    assert.deepEqual(admit(machineKind, input).schemaErrors.map(([p]) => p), ["/status/addresses/0/type"]);
  });

  it("lets the provider ID be set once, and nothing else change", () => {
    const old = admit(machineKind, machine()).object;
    const withId = { ...old, spec: { ...old.spec, providerID: "sim://east-1/i-1" } };
    assert.deepEqual(admit(machineKind, withId, old).errors, []);
    const settled = admit(machineKind, withId).object;
    const changed = admit(machineKind, { ...settled, spec: { ...settled.spec, providerID: "sim://east-1/i-2", machineType: "m.large" } }, settled);
    assert.deepEqual(changed.errors.map((e) => e.field), ["spec.machineType", "spec.providerID"]);
  });

  it("shows role, phase, node and instance, and connection, zone and internal address when wide", () => {
    const m = admit(machineKind, machine()).object;
    m.status = {
      phase: "Running",
      nodeName: "demo-general-x7k2p",
      instanceId: "i-1",
      zone: "sim-east-1b",
      addresses: [
        { type: "ExternalIP", address: "203.0.113.9" },
        { type: "InternalIP", address: "10.0.1.5" },
      ],
    };
    assert.deepEqual(
      machineKind.printerColumns.map((c) => [c.name, cell(machineKind, c.name, m)]),
      [
        ["NAME", "demo-general-x7k2p"],
        ["CLUSTER", "demo"],
        ["ROLE", "worker"],
        ["PHASE", "Running"],
        ["NODE", "demo-general-x7k2p"],
        ["INSTANCE", "i-1"],
        ["AGE", undefined],
        ["CONNECTION", "sim-east"],
        ["ZONE", "sim-east-1b"],
        ["ADDRESS", "10.0.1.5"],
      ],
    );
    assert.deepEqual(machineKind.printerColumns.filter((c) => c.priority).map((c) => c.name), ["CONNECTION", "ZONE", "ADDRESS"]);
  });

  it("counts a machine ready only while it runs with a Ready node and is not being deleted", () => {
    const base = manifest(machineKind, "demo-cp-0", { clusterName: "demo", role: "control-plane", connection: "east", machineType: "s1.medium" });
    assert.equal(isMachineReady({ ...base, status: { phase: "Running", nodeReady: true } }), true);
    assert.equal(isMachineReady({ ...base, status: { phase: "Running", nodeReady: false } }), false, "its node is not Ready");
    assert.equal(isMachineReady({ ...base, status: { phase: "Provisioned", nodeReady: true } }), false, "it does not run (yet)");
    assert.equal(isMachineReady(base), false, "no status yet");
    const leaving = { ...base, metadata: { ...base.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" }, status: { phase: "Running" as const, nodeReady: true } };
    assert.equal(isMachineReady(leaving), false, "it is being deleted");
  });
});
