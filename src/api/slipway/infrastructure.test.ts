import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { infrastructureKind, type InfrastructureObject } from "./infrastructure.ts";
import { admit, admitted, cell, manifest } from "../testing.ts";

function infrastructure(): InfrastructureObject {
  return manifest(infrastructureKind, "demo-sim-east", { clusterName: "demo", connection: "sim-east", region: "east-1", nodeCIDR: "10.0.0.0/16" });
}

describe("Infrastructure", () => {
  it("defaults to a worker-only connection with nothing to resolve", () => {
    const object = admitted(infrastructureKind, infrastructure());
    assert.equal(object.spec.controlPlane, false);
    assert.deepEqual(object.spec.machineTypes, []);
    assert.deepEqual(object.spec.images, []);
  });

  it("refuses a bad node range", () => {
    const input = infrastructure();
    input.spec.nodeCIDR = "10.0.0.0/99";
    assert.deepEqual(admit(infrastructureKind, input).errors.map((e) => e.field), ["spec.nodeCIDR"]);
  });

  it("accepts the resolved resources in status and rejects malformed ones", () => {
    const input = infrastructure();
    input.status = {
      phase: "Ready",
      ready: true,
      networkId: "net-1",
      images: { "ubuntu-22.04": "img-7" },
      machineTypes: { "m.large": { vcpu: 2, memoryMiB: 4096 } },
      loadBalancer: { id: "lb-1", host: "203.0.113.5", port: 6443 },
    };
    assert.deepEqual(admit(infrastructureKind, input).schemaErrors, []);
    (input.status.machineTypes as Record<string, unknown>)["m.large"] = { vcpu: "two", memoryMiB: 4096 };
    assert.deepEqual(admit(infrastructureKind, input).schemaErrors.map(([p]) => p), ["/status/machineTypes/m.large/vcpu"]);
  });

  it("keeps cluster, connection, region and node range fixed", () => {
    const old = admit(infrastructureKind, infrastructure()).object;
    const next = structuredClone(old);
    next.spec.connection = "sim-west";
    next.spec.nodeCIDR = "10.1.0.0/16";
    next.spec.machineTypes = ["m.large"];
    assert.deepEqual(admit(infrastructureKind, next, old).errors.map((e) => e.field), ["spec.connection", "spec.nodeCIDR"]);
  });

  it("shows the cluster, connection, region and phase, and the network and load balancer when wide", () => {
    const infra = admit(infrastructureKind, infrastructure()).object;
    infra.status = { phase: "Ready", networkId: "net-1", loadBalancer: { id: "lb-1", host: "203.0.113.5", port: 6443 } };
    const columns = infrastructureKind.printerColumns;
    assert.deepEqual(columns.filter((c) => !c.priority).map((c) => c.name), ["NAME", "CLUSTER", "CONNECTION", "REGION", "PHASE", "AGE"]);
    assert.deepEqual(columns.filter((c) => c.priority).map((c) => c.name), ["NETWORK", "LB"]);
    assert.deepEqual(
      ["CLUSTER", "CONNECTION", "REGION", "PHASE", "NETWORK", "LB"].map((name) => cell(infrastructureKind, name, infra)),
      ["demo", "sim-east", "east-1", "Ready", "net-1", "203.0.113.5:6443"],
    );
  });
});
