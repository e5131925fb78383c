import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { operationKind, type OperationObject } from "./operation.ts";
import { admit, admitted, cell, manifest } from "../testing.ts";

function operation(): OperationObject {
  return manifest(operationKind, "demo-create-1", {
    type: "Create",
    target: { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "demo", uid: "u-1" },
    generation: 1,
  });
}

describe("Operation", () => {
  it("accepts a create operation and its progress", () => {
    const op = operation();
    op.status = { phase: "InProgress", startTime: "2025-01-01T00:00:00Z", percentComplete: 40 };
    admitted(operationKind, op);
  });

  it("refuses an unknown type or phase and progress outside 0–100", () => {
    const op = operation() as unknown as { spec: { type: string }; status: Record<string, unknown> };
    op.spec.type = "Scale";
    op.status = { phase: "Done", percentComplete: 101 };
    assert.deepEqual(
      admit(operationKind, op).schemaErrors.map(([p]) => p),
      ["/spec/type", "/status/phase", "/status/percentComplete"],
    );
  });

  it("never changes what it is about", () => {
    const old = admit(operationKind, operation()).object;
    const retargeted = structuredClone(old);
    retargeted.spec.target.name = "other";
    assert.deepEqual(admit(operationKind, retargeted, old).errors.map((e) => e.field), ["spec"]);
  });

  it("shows type, target, status and percent", () => {
    const op = operation();
    op.status = { phase: "Failed", percentComplete: 60, error: { code: "QuotaExceeded", message: "vCPU quota" } };
    assert.deepEqual(
      operationKind.printerColumns.filter((c) => c.name !== "AGE").map((c) => [c.name, cell(operationKind, c.name, op)]),
      [
        ["NAME", "demo-create-1"],
        ["TYPE", "Create"],
        ["TARGET", "Cluster/demo"],
        ["STATUS", "Failed"],
        ["PERCENT", 60],
      ],
    );
  });
});
