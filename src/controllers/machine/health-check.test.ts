// When a Running machine is looked at again: often where nothing follows it, rarely where the cloud's feed
// follows its instance, and — where its node is watched too — at a rate over the fleet that does not grow
// with it (the check is only a safety net).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MACHINE_DEFAULTS } from "./controller.ts";
import { healthCheckDelay, type MachineScope } from "./phases.ts";

function scope(fleetMachines: number, followed: boolean, watched: boolean): MachineScope {
  return {
    object: { metadata: { namespace: "default" }, spec: { clusterName: "demo" } },
    timings: MACHINE_DEFAULTS,
    instancesFollowed: followed,
    nodes: { watching: () => watched },
    fleetMachines,
  } as unknown as MachineScope;
}

describe("a Running machine's next check", () => {
  it("comes after the health check period where nothing follows the machine, whatever the fleet", () => {
    assert.equal(healthCheckDelay(scope(40_000, false, false)), MACHINE_DEFAULTS.healthCheckMs);
    assert.equal(healthCheckDelay(scope(40_000, true, false)), MACHINE_DEFAULTS.followedHealthCheckMs);
  });

  it("comes every 30 minutes where both its instance and its node are followed, and later in a fleet of more than 3,600 machines", () => {
    assert.equal(healthCheckDelay(scope(4, true, true)), 30 * 60_000);
    assert.equal(healthCheckDelay(scope(3_600, true, true)), 30 * 60_000);
    assert.equal(healthCheckDelay(scope(40_000, true, true)), 20_000_000, "40,000 machines, two a second: each every 20,000 s");
  });
});
