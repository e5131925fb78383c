// The main thread's side of the controllers' thread: a thread that fails once the controllers run is
// reported once (so `slipway up` exits, as it does when a controller fails on its own loop) and /readyz
// says why; a thread stopped as asked is no failure.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import { defaultRegistry } from "../api/kinds.ts";
import { ApiMetrics } from "../apiserver/metrics.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { eventually } from "../../test/support/slipway.ts";
import { ControllerWorkerError, startControllersInWorker } from "./controller-worker.ts";

const store = SqliteStore.open(":memory:");
const objects = new ObjectService(defaultRegistry(), store);
after(() => store.close());

function start(replica: string, failures: Error[]) {
  return startControllersInWorker({
    objects,
    log: pino({ level: "silent" }),
    metrics: new ApiMetrics(),
    replica,
    sim: {},
    url: "https://127.0.0.1:1",
    caPem: "",
    entry: new URL("./testing/controllers-thread.mjs", import.meta.url),
    onFailure: (error) => failures.push(error),
  });
}

describe("the controllers on their thread", () => {
  it("reports a thread that fails once they run, once, and /readyz says why", async () => {
    const failures: Error[] = [];
    const controllers = await start("fails", failures);
    await eventually(() => failures.length > 0, { what: "the failure to be reported", intervalMs: 10 });
    assert.equal(failures.length, 1);
    assert.ok(failures[0] instanceof ControllerWorkerError);
    assert.match(failures[0].message, /the controllers' thread failed: a controller's bug/);
    assert.match((await controllers.unready()) ?? "", /a controller's bug/);
    await controllers.stop();
    assert.equal(failures.length, 1, "stopping what already failed is no second failure");
  });

  it("takes a thread stopped as asked for no failure", async () => {
    const failures: Error[] = [];
    const controllers = await start("stays", failures);
    assert.equal(await controllers.unready(), undefined);
    await controllers.stop();
    assert.equal(await controllers.unready(), "the controllers are stopped");
    assert.deepEqual(failures, []);
  });
});
