import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConflictError } from "../apiserver/errors.ts";
import { describeError, InternalReconcileError, isUnexpectedError, judgeFailure, UNEXPECTED_ERROR_ATTEMPTS } from "./failures.ts";
import { ShardLostError } from "./shards.ts";

class QuotaExceededError extends Error {
  override readonly name = "QuotaExceededError";
}

describe("reconcile failures", () => {
  it("expects named errors and system errors; JavaScript's own error classes and thrown values are unexpected", () => {
    assert.equal(isUnexpectedError(new QuotaExceededError("needs 8 vCPU")), false);
    assert.equal(isUnexpectedError(new ConflictError({ group: "slipway.dev", plural: "clusters", kind: "Cluster", name: "a" }, "stale")), false);
    assert.equal(isUnexpectedError(new ShardLostError(3)), false);
    assert.equal(isUnexpectedError(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6443"), { code: "ECONNREFUSED" })), false);
    for (const error of [new TypeError("x is not a function"), new RangeError("bad length"), new Error("no free slice"), "a string", undefined]) {
      assert.equal(isUnexpectedError(error), true, String(error));
    }
  });

  it("retries an unexpected error a few times, then turns it into an InternalError naming the step", () => {
    const error = new TypeError("Cannot read properties of undefined (reading 'spec')");
    assert.equal(judgeFailure(error, UNEXPECTED_ERROR_ATTEMPTS - 2, "ensureWorkerPools"), error);
    const judged = judgeFailure(error, UNEXPECTED_ERROR_ATTEMPTS - 1, "ensureWorkerPools");
    assert.ok(judged instanceof InternalReconcileError);
    assert.equal(judged.reason, "InternalError");
    assert.match(judged.message, /^step ensureWorkerPools failed 5 times in a row with an unexpected error: TypeError: Cannot read properties of undefined \(reading 'spec'\)\. This is a defect in Slipway: please report it/);
    const named = new QuotaExceededError("needs 8 vCPU");
    assert.equal(judgeFailure(named, 1000, "ensureWorkerPools"), named, "a named error stays as it is");
  });

  it("describes an error on one line, without its stack", () => {
    assert.equal(describeError(new TypeError("a\n    at x (y.ts:1:1)")), "TypeError: a");
    assert.equal(describeError(new Error("plain")), "plain");
    assert.equal(describeError(42), "42");
  });
});
