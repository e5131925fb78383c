import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { maxUnhealthyCount } from "../../api/slipway/health.ts";
import { decideRemediation, recordReplacement, remediationDelayMs } from "./remediation.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe("remediation", () => {
  it("waits 0, then 10 s doubling up to 5 min between replacements", () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 10].map(remediationDelayMs), [0, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  });

  it("tolerates 40 % of the wanted machines failed at once by default, at least one, or what the set's maxUnhealthy says", () => {
    assert.deepEqual([1, 2, 3, 5, 10].map((desired) => maxUnhealthyCount(undefined, desired)), [1, 1, 1, 2, 4]);
    assert.deepEqual([1, 5, 10].map((desired) => maxUnhealthyCount("100%", desired)), [1, 5, 10]);
    assert.deepEqual([maxUnhealthyCount(2, 10), maxUnhealthyCount(0, 10), maxUnhealthyCount("0%", 10)], [2, 0, 0]);
  });

  it("replaces the first failure at once and backs off on the next ones", () => {
    assert.deepEqual(decideRemediation({ failed: ["w-0"], desired: 3, record: undefined, nowMs: T0 }), { action: "replace" });
    let record = recordReplacement(undefined, at(0));
    assert.deepEqual(decideRemediation({ failed: ["w-3"], desired: 3, record, nowMs: T0 + 4_000 }), {
      action: "wait",
      afterMs: 6_000,
      message: "replacing w-3 in 6s (backing off after 1 replacement(s))",
    });
    assert.deepEqual(decideRemediation({ failed: ["w-3"], desired: 3, record, nowMs: T0 + 10_000 }), { action: "replace" });
    record = recordReplacement(record, at(10_000));
    assert.equal(record.attempts, 2);
    assert.equal(decideRemediation({ failed: ["w-4"], desired: 3, record, nowMs: T0 + 29_000 }).action, "wait");
    assert.equal(decideRemediation({ failed: ["w-4"], desired: 3, record, nowMs: T0 + 30_000 }).action, "replace");
  });

  it("pauses with more machines failed than maxUnhealthy, naming them", () => {
    const decision = decideRemediation({ failed: ["w-0", "w-1"], desired: 3, record: undefined, nowMs: T0 });
    assert.equal(decision.action, "paused");
    assert.match(decision.action === "paused" ? decision.message : "", /2 machines failed \(w-0, w-1\), more than maxUnhealthy 1 of 3/);
    assert.deepEqual(decideRemediation({ failed: [], desired: 3, record: undefined, nowMs: T0 }), { action: "none" });
    assert.deepEqual(decideRemediation({ failed: ["w-0", "w-1"], desired: 3, maxUnhealthy: "100%", record: undefined, nowMs: T0 }), { action: "replace" }, "a set that tolerates all of its machines failed");
    const none = decideRemediation({ failed: ["w-0"], desired: 3, maxUnhealthy: 0, record: undefined, nowMs: T0 });
    assert.match(none.action === "paused" ? none.message : "", /more than maxUnhealthy 0 of 3: not replacing/);
    const percent = decideRemediation({ failed: ["w-0", "w-1", "w-2"], desired: 5, maxUnhealthy: "50%", record: undefined, nowMs: T0 });
    assert.match(percent.action === "paused" ? percent.message : "", /more than maxUnhealthy 2 of 5 \(50%\)/);
  });

  it("does not count machines whose failure was the control plane's, and backs off on them as on any", () => {
    assert.deepEqual(decideRemediation({ failed: ["w-0", "w-1", "w-2"], excused: ["w-0", "w-1", "w-2"], desired: 3, record: undefined, nowMs: T0 }), { action: "replace" });
    const mixed = decideRemediation({ failed: ["w-0", "w-1", "w-2"], excused: ["w-0"], desired: 3, record: undefined, nowMs: T0 });
    assert.match(mixed.action === "paused" ? mixed.message : "", /^2 machines failed \(w-1, w-2\), more than maxUnhealthy 1 of 3/);
    const record = recordReplacement(undefined, new Date(T0).toISOString());
    assert.equal(decideRemediation({ failed: ["w-3"], excused: ["w-3"], desired: 3, record, nowMs: T0 + 1_000 }).action, "wait");
  });
});
