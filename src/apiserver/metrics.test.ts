import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Counter, Registry } from "prom-client";
import { ApiMetrics } from "./metrics.ts";

describe("API server metrics", () => {
  it("serves another registry's metrics (a worker thread's) with its own, and its own when the other fails", async () => {
    const metrics = new ApiMetrics();
    metrics.requests.inc({ verb: "get", resource: "clusters", code: "200" });
    const other = new Registry();
    new Counter({ name: "slipway_reconcile_total", help: "Reconciles.", registers: [other] }).inc(3);
    metrics.include(() => other.metrics());
    const text = await metrics.text();
    assert.match(text, /^apiserver_request_total\{verb="get",resource="clusters",code="200"\} 1$/m);
    assert.match(text, /^slipway_reconcile_total 3$/m);
    metrics.include(() => Promise.reject(new Error("the thread is gone")));
    assert.match(await metrics.text(), /^apiserver_request_total/m);
  });
});
