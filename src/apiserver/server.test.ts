import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { silentLogger } from "../runtime/testing.ts";
import type { HealthCheck } from "./health.ts";
import { ApiMetrics } from "./metrics.ts";
import { createApiServer } from "./server.ts";

function server(readiness: HealthCheck[], version?: object) {
  return createApiServer({ logger: silentLogger, metrics: new ApiMetrics(), route: () => undefined, readiness, ...(version ? { version } : {}) });
}

describe("the API server's health and version endpoints", () => {
  it("answers /readyz from its checks: 503 naming the one that fails, every check listed with ?verbose", async () => {
    let storeDown = true;
    const app = server([
      {
        name: "store",
        check: () => {
          if (storeDown) throw new Error("database is locked");
        },
      },
      { name: "controllers", check: () => undefined },
    ]);
    const failing = await app.inject({ method: "GET", url: "/readyz" });
    assert.equal(failing.statusCode, 503);
    assert.equal(failing.body, "[+]ping ok\n[-]store failed: reason withheld\n[+]controllers ok\nreadyz check failed\n");
    assert.equal((await app.inject({ method: "GET", url: "/readyz/controllers" })).statusCode, 200);
    assert.equal((await app.inject({ method: "GET", url: "/readyz?exclude=store" })).body, "ok");
    assert.equal((await app.inject({ method: "GET", url: "/readyz/nothing" })).statusCode, 404);
    assert.equal((await app.inject({ method: "GET", url: "/healthz" })).body, "ok", "alive all the same");

    storeDown = false;
    const ready = await app.inject({ method: "GET", url: "/readyz" });
    assert.deepEqual([ready.statusCode, ready.body], [200, "ok"]);
    const verbose = await app.inject({ method: "GET", url: "/readyz?verbose" });
    assert.equal(verbose.body, "[+]ping ok\n[+]store ok\n[+]controllers ok\nreadyz check passed\n");
    await app.close();
  });

  it("answers /version with what it is given, without authentication", async () => {
    const app = server([], { major: "1", minor: "31", gitVersion: "v1.31.0-slipway.1.2.3", gitCommit: "abc" });
    const reply = await app.inject({ method: "GET", url: "/version" });
    assert.equal(reply.statusCode, 200);
    assert.equal((JSON.parse(reply.body) as { gitVersion: string }).gitVersion, "v1.31.0-slipway.1.2.3");
    await app.close();
  });
});
