import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { RecentChecks } from "./recent-checks.ts";

describe("RecentChecks", () => {
  it("holds a check for the recheck period, then asks for it again", () => {
    const checks = new RecentChecks(1000);
    assert.equal(checks.recent("uid-1/secrets", 0), false);
    checks.mark("uid-1/secrets", 0);
    assert.equal(checks.recent("uid-1/secrets", 999), true);
    assert.equal(checks.recent("uid-1/secrets", 1000), false, "the period is over");
    assert.equal(checks.recent("uid-2/secrets", 10), false, "another cluster's check is its own");
  });

  it("forgets the oldest checks beyond its size, and each controller has its own", () => {
    const checks = new RecentChecks(1000, 2);
    checks.mark("a", 0);
    checks.mark("b", 0);
    checks.mark("a", 1); // a is the newest again
    checks.mark("c", 2);
    assert.equal(checks.size, 2);
    assert.deepEqual(["a", "b", "c"].map((what) => checks.recent(what, 3)), [true, false, true]);
    assert.equal(new RecentChecks().recent("a", 3), false, "nothing is shared between instances");
  });
});
