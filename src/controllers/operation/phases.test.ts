import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { OperationObject } from "../../api/kinds.ts";
import { ManualClock, reconcileContext } from "../../runtime/testing.ts";
import { followTarget, skipEnded, startOperation, type OperationScope } from "./phases.ts";

const clock = new ManualClock();
const ctx = reconcileContext({ key: "default/op", name: "op", clock });

function scope(status?: OperationObject["status"], followed = true): OperationScope {
  const object: OperationObject = {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Operation",
    metadata: { name: "op", namespace: "default" },
    spec: { type: "Create", target: { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "demo", uid: "u" }, generation: 1 },
    ...(status ? { status } : {}),
  };
  return { original: object, object, followed };
}

describe("operation phases", () => {
  it("leaves an operation that ended untouched", () => {
    assert.deepEqual(skipEnded(ctx, scope({ phase: "Succeeded" })), { halt: true });
    assert.equal(skipEnded(ctx, scope({ phase: "InProgress" })), undefined);
  });

  it("starts a new operation's clock once", () => {
    const s = scope();
    startOperation(ctx, s);
    assert.deepEqual(s.object.status, { phase: "InProgress", startTime: "2025-01-01T00:00:00Z" });
    clock.advance(60_000);
    startOperation(ctx, s);
    assert.equal(s.object.status?.startTime, "2025-01-01T00:00:00Z");
  });

  it("cancels an operation whose target does not exist, and says so", () => {
    const s = scope({ phase: "InProgress", startTime: "2025-01-01T00:00:00Z" });
    followTarget(ctx, s);
    assert.equal(s.object.status?.phase, "Canceled");
    assert.equal(s.object.status?.message, "Cluster demo was deleted");
    assert.ok(s.object.status?.endTime);
  });

  it("does not pretend to know about targets of kinds it does not follow", () => {
    const s = scope({ phase: "InProgress", startTime: "2025-01-01T00:00:00Z" }, false);
    assert.deepEqual(followTarget(ctx, s), { halt: true });
    assert.equal(s.object.status?.phase, "InProgress");
    assert.match(s.object.status?.message ?? "", /does not follow Cluster objects/);
  });
});
