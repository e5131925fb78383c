import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ControllerManager } from "./manager.ts";
import type { ShardCoordinator, ShardSet } from "./shards.ts";
import { memoryObjects, silentLogger } from "./testing.ts";

describe("controller manager readiness", () => {
  it("is ready once started with every shard held (one process), and not before or after", async () => {
    const manager = new ControllerManager({ objects: await memoryObjects(), replica: "a", log: silentLogger });
    assert.equal(manager.unready(), "the controllers have not started");
    await manager.start();
    assert.equal(manager.unready(), undefined);
    await manager.stop();
    assert.equal(manager.unready(), "the controllers are stopped");
  });

  it("says why its shards cannot be worked on", async () => {
    let why: string | undefined = "no shard lease: registering with the store";
    const coordinator = (shards: ShardSet): ShardCoordinator => ({ shards, start: async () => {}, stop: async () => {}, unready: () => why });
    const manager = new ControllerManager({ objects: await memoryObjects(), replica: "a", log: silentLogger, coordinator });
    await manager.start();
    assert.equal(manager.unready(), "no shard lease: registering with the store");
    why = undefined;
    assert.equal(manager.unready(), undefined, "holding no shard is fine when others hold them");
    await manager.stop();
  });
});
