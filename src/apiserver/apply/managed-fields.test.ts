import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FieldSet } from "./field-set.ts";
import { conflictCauses, conflictMessage, decodeManagedFields, encodeManagedFields, fieldsOfManager, recordApply, recordUpdate, type Manager } from "./managed-fields.ts";

const set = (fieldsV1: Record<string, unknown>) => FieldSet.fromFieldsV1(fieldsV1);
const none = () => new FieldSet();
const manager = (name: string, operation: "Apply" | "Update", fieldsV1: Record<string, unknown>, extra: Partial<Manager> = {}): Manager => ({
  manager: name,
  operation,
  apiVersion: "v1",
  time: "2026-01-01T00:00:00Z",
  fieldsV1,
  ...extra,
});

describe("managed fields records", () => {
  it("decode what they encode, applies first, records without fields left out", () => {
    const encoded = encodeManagedFields([
      manager("ctl", "Update", { "f:status": { "f:phase": {} } }, { subresource: "status" }),
      manager("ci", "Apply", { "f:spec": { "f:a": {} } }),
      manager("gone", "Update", {}),
    ]);
    assert.deepEqual(
      encoded.map((e) => [e.manager, e.operation, e.subresource]),
      [
        ["ci", "Apply", undefined],
        ["ctl", "Update", "status"],
      ],
    );
    assert.equal(encoded[0]!.fieldsType, "FieldsV1");
    const decoded = decodeManagedFields(encoded)!;
    assert.ok(fieldsOfManager(decoded[1]!).equals(set({ "f:status": { "f:phase": {} } })));
  });

  it("are ignored when they do not decode, and a single empty record clears them", () => {
    assert.equal(decodeManagedFields([{ manager: "x", operation: "Steal", fieldsV1: {} }]), undefined);
    assert.equal(decodeManagedFields([{ manager: "x", operation: "Apply", fieldsV1: { bad: {} } }], true), undefined);
    assert.deepEqual(decodeManagedFields([{}]), []);
  });

  it("give an update's manager the fields it changed and take them from the others", () => {
    const before = [manager("ci", "Apply", { "f:spec": { "f:a": {}, "f:b": {} } })];
    const after = recordUpdate(before, { manager: "edit", apiVersion: "v1", time: "2026-02-02T00:00:00Z" }, {
      modified: set({ "f:spec": { "f:a": {} } }),
      added: set({ "f:spec": { "f:c": {} } }),
      removed: set({ "f:spec": { "f:b": {} } }),
    });
    assert.deepEqual(
      after.map((m) => [m.manager, m.operation, m.fieldsV1, m.time]),
      [
        ["ci", "Apply", {}, "2026-01-01T00:00:00Z"],
        ["edit", "Update", { "f:spec": { "f:a": {}, "f:c": {} } }, "2026-02-02T00:00:00Z"],
      ],
    );
  });

  it("keep an update's time when it only removed fields", () => {
    const before = [manager("edit", "Update", { "f:spec": { "f:a": {}, "f:b": {} } })];
    const [after] = recordUpdate(before, { manager: "edit", apiVersion: "v1", time: "2026-02-02T00:00:00Z" }, { modified: none(), added: none(), removed: set({ "f:spec": { "f:b": {} } }) });
    assert.equal(after!.time, "2026-01-01T00:00:00Z");
    assert.deepEqual(after!.fieldsV1, { "f:spec": { "f:a": {} } });
  });

  it("refuse an apply that changes another manager's field, and hand the field over when forced", () => {
    const before = [manager("ci", "Apply", { "f:spec": { "f:a": {} } }), manager("kubectl-edit", "Update", { "f:spec": { "f:b": {} } })];
    const changes = { modified: set({ "f:spec": { "f:a": {}, "f:b": {} } }), added: none(), removed: none() };
    const writer = { manager: "me", apiVersion: "v1", time: "2026-03-03T00:00:00Z" };
    const applied = set({ "f:spec": { "f:a": {}, "f:b": {} } });
    const refused = recordApply(before, writer, applied, changes, false);
    assert.equal(
      conflictMessage(refused.conflicts),
      'Apply failed with 2 conflicts: conflicts with "ci":\n- .spec.a\nconflicts with "kubectl-edit" using v1:\n- .spec.b',
    );
    assert.deepEqual(conflictCauses(refused.conflicts), [
      { message: 'conflict with "ci"', field: ".spec.a" },
      { message: 'conflict with "kubectl-edit" using v1', field: ".spec.b" },
    ]);
    const forced = recordApply(before, writer, applied, changes, true);
    assert.deepEqual(forced.conflicts, []);
    assert.deepEqual(forced.managers.map((m) => [m.manager, m.fieldsV1]), [
      ["ci", {}],
      ["kubectl-edit", {}],
      ["me", { "f:spec": { "f:a": {}, "f:b": {} } }],
    ]);
  });

  it("let two appliers share a field they set to the same value", () => {
    const before = [manager("ci", "Apply", { "f:spec": { "f:a": {} } })];
    const result = recordApply(before, { manager: "me", apiVersion: "v1", time: "t" }, set({ "f:spec": { "f:a": {} } }), { modified: none(), added: none(), removed: none() }, false);
    assert.deepEqual(result.conflicts, []);
    assert.deepEqual(result.managers.map((m) => m.manager), ["ci", "me"]);
  });

  it("word a single conflict as kube-apiserver does, with the subresource of the manager", () => {
    const conflicts = [{ manager: manager("ctl", "Update", {}, { subresource: "status", apiVersion: "slipway.dev/v1alpha1" }), path: ["f:status", "f:phase"] }];
    assert.equal(conflictMessage(conflicts), 'Apply failed with 1 conflict: conflict with "ctl" with subresource "status" using slipway.dev/v1alpha1: .status.phase');
  });
});
