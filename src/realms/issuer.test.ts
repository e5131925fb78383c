import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FailedSignIns } from "./issuer.ts";

describe("failed sign-ins", () => {
  it("refuses a user name for the rest of the window after five failures, and forgets them after a success", () => {
    const failed = new FailedSignIns();
    const t0 = 1_000_000;
    for (let i = 0; i < 4; i++) failed.fail("corp/dave", t0 + i);
    assert.equal(failed.blockedFor("corp/dave", t0 + 10), 0, "four failures: may try again");
    failed.fail("corp/dave", t0 + 10);
    assert.equal(failed.blockedFor("corp/dave", t0 + 20), 5 * 60_000 - 20);
    assert.equal(failed.blockedFor("corp/carol", t0 + 20), 0, "other names are not held back");
    assert.equal(failed.blockedFor("partners/dave", t0 + 20), 0, "nor the same name in another realm");
    assert.equal(failed.blockedFor("corp/dave", t0 + 5 * 60_000 + 1), 0, "the first failure left the window");
    failed.succeed("corp/dave");
    failed.fail("corp/dave", t0 + 30);
    assert.equal(failed.blockedFor("corp/dave", t0 + 40), 0);
  });
});
