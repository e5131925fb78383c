import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { PING, runHealthChecks, withTimeout, type HealthCheck } from "./health.ts";

const store = (reason?: string): HealthCheck => ({
  name: "store",
  check: async () => {
    if (reason) throw new Error(reason);
  },
});
const controllers: HealthCheck = { name: "controllers", check: () => undefined };

describe("health checks", () => {
  it("answers ok when every check passes, and lists them with verbose", async () => {
    assert.deepEqual(await runHealthChecks("readyz", [PING, store(), controllers]), { code: 200, body: "ok", failed: [] });
    const verbose = await runHealthChecks("readyz", [PING, store(), controllers], { verbose: true });
    assert.equal(verbose?.body, "[+]ping ok\n[+]store ok\n[+]controllers ok\nreadyz check passed\n");
  });

  it("answers 503 naming the failing check, withholding the reason from the caller", async () => {
    const report = await runHealthChecks("readyz", [PING, store("SQLITE_IOERR: disk I/O error at /var/lib/slipway/store.db"), controllers]);
    assert.equal(report?.code, 503);
    assert.equal(report?.body, "[+]ping ok\n[-]store failed: reason withheld\n[+]controllers ok\nreadyz check failed\n");
    assert.deepEqual(report?.failed, [{ name: "store", reason: "SQLITE_IOERR: disk I/O error at /var/lib/slipway/store.db" }]);
  });

  it("runs one check by name, or all but the excluded", async () => {
    const checks = [PING, store("down"), controllers];
    assert.equal((await runHealthChecks("readyz", checks, { only: "controllers" }))?.code, 200);
    assert.equal((await runHealthChecks("readyz", checks, { only: "store" }))?.code, 503);
    assert.equal(await runHealthChecks("readyz", checks, { only: "nope" }), undefined);
    assert.equal((await runHealthChecks("readyz", checks, { exclude: ["store"] }))?.code, 200);
  });

  it("fails a check that does not answer in time", async () => {
    const hanging = withTimeout({ name: "store", check: () => new Promise(() => undefined) }, 20);
    const report = await runHealthChecks("readyz", [hanging]);
    assert.deepEqual(report?.failed, [{ name: "store", reason: "no answer within 20 ms" }]);
  });
});
