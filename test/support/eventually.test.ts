import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { StopWaiting, eventually } from "./slipway.ts";

describe("eventually", () => {
  it("ends at once with the reason when a check says waiting cannot help", async () => {
    const started = Date.now();
    let calls = 0;
    await assert.rejects(
      eventually(() => {
        calls++;
        throw new StopWaiting("cluster demo failed: QuotaExceeded: needs 8 vCPU, 4 left");
      }, { timeoutMs: 5_000, what: "cluster demo to be Running" }),
      { name: "StopWaiting", message: "cluster demo failed: QuotaExceeded: needs 8 vCPU, 4 left" },
    );
    assert.equal(calls, 1);
    assert.ok(Date.now() - started < 1_000, "not after the timeout");
  });

  it("retries other errors, and names the last one when it times out", async () => {
    let calls = 0;
    const value = await eventually(() => {
      if (++calls < 3) throw new Error("connect ECONNREFUSED");
      return "there";
    }, { intervalMs: 1 });
    assert.equal(value, "there");
    await assert.rejects(
      eventually(() => {
        throw new Error("connect ECONNREFUSED");
      }, { timeoutMs: 50, intervalMs: 5, what: "the API" }),
      { message: "timed out waiting for the API: connect ECONNREFUSED" },
    );
  });
});
