import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ConnectionObject, MachineObject } from "../../api/kinds.ts";
import { ObjectCache } from "../../runtime/cache.ts";
import type { InstanceChanges, InstanceInfo } from "../../providers/provider.ts";
import type { ProviderResolver } from "../providers.ts";
import { InstanceWatch } from "./instance-watch.ts";

const NS = "default";

function connection(): ConnectionObject {
  return { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: "east", namespace: NS, resourceVersion: "1" }, spec: { provider: "sim", region: "sim-east-1" } } as ConnectionObject;
}

function machine(name: string, instanceId: string): MachineObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: { name, namespace: NS },
    spec: { clusterName: "demo", connection: "east", role: "worker", machineType: "s1.medium", version: "v1.31.0" },
    status: { instanceId },
  } as MachineObject;
}

function instance(id: string, state: InstanceInfo["state"] = "ready"): InstanceInfo {
  return { id, kind: "instance", state, cloudState: state === "ready" ? "running" : "terminated", tags: {}, zone: "sim-east-1a", providerId: `sim://sim-east-1/${id}` };
}

/** A watch over one connection whose feed answers what `changes` holds next, and a clock moved by hand. */
function setup(runningForMs = 60_000) {
  const connections = new ObjectCache<ConnectionObject>();
  connections.set(connection());
  const machines = new ObjectCache<MachineObject>();
  const queued: string[] = [];
  const changes: InstanceChanges[] = [];
  let cursor = 0;
  const providers = {
    capability: async () => ({
      instanceChanges: async () => changes.shift() ?? { cursor: String(++cursor), changed: [] },
    }),
  } as unknown as ProviderResolver;
  let now = 1_000;
  const watch = new InstanceWatch({ connections, machines, providers, enqueue: (key) => queued.push(key), intervalMs: 1_000_000, runningForMs, now: () => now });
  machines.set(machine("m1", "i-1"));
  let reads = 0;
  const read = (info: InstanceInfo) => async () => {
    reads++;
    return info;
  };
  return {
    watch,
    changes,
    queued,
    read,
    reads: () => reads,
    advance: (ms: number) => (now += ms),
  };
}

describe("InstanceWatch", () => {
  it("answers an instance seen running without the cloud while its feed tells of no change, for runningForMs", async () => {
    const { watch, read, reads, advance } = setup();
    await watch.pollAll(); // the feed's first answer: it follows the connection from here on
    advance(1);
    assert.equal((await watch.instance(NS, "east", "i-1", read(instance("i-1"))))?.state, "ready");
    advance(1);
    assert.equal((await watch.instance(NS, "east", "i-1", read(instance("i-1", "gone"))))?.state, "ready", "taken from the sighting");
    assert.equal(reads(), 1);
    advance(60_000);
    assert.equal((await watch.instance(NS, "east", "i-1", read(instance("i-1", "gone"))))?.state, "gone", "past runningForMs the cloud is asked");
    assert.equal(reads(), 2);
    assert.equal((await watch.instance(NS, "east", "i-1", read(instance("i-1", "gone"))))?.state, "gone", "an instance not running is not remembered");
    assert.equal(reads(), 3);
  });

  it("asks the cloud again once the feed told of a change to the instance, or lost track of the connection", async () => {
    const { watch, changes, queued, read, reads, advance } = setup();
    await watch.pollAll();
    advance(1);
    await watch.instance(NS, "east", "i-1", read(instance("i-1")));
    advance(1);
    changes.push({ cursor: "c2", changed: ["i-1"] });
    await watch.pollAll();
    assert.deepEqual(queued, ["default/m1"]);
    advance(1);
    assert.equal((await watch.instance(NS, "east", "i-1", read(instance("i-1", "gone"))))?.state, "gone");
    assert.equal(reads(), 2);
    // Seen running again, then the feed says anything may have changed.
    advance(1);
    await watch.instance(NS, "east", "i-1", read(instance("i-1")));
    advance(1);
    changes.push({ cursor: "c3", changed: "all" });
    await watch.pollAll();
    advance(1);
    await watch.instance(NS, "east", "i-1", read(instance("i-1")));
    assert.equal(reads(), 4);
  });

  it("does not remember a read that a change told of meanwhile may have overtaken", async () => {
    const { watch, changes, read, reads, advance } = setup();
    await watch.pollAll();
    advance(1);
    // The feed tells of a change while the read is on its way: what the read answers may be older.
    const answered = await watch.instance(NS, "east", "i-1", async () => {
      changes.push({ cursor: "c2", changed: ["i-1"] });
      await watch.pollAll();
      return read(instance("i-1"))();
    });
    assert.equal(answered?.state, "ready");
    advance(1);
    await watch.instance(NS, "east", "i-1", read(instance("i-1")));
    assert.equal(reads(), 2, "the next reconcile asks the cloud");
  });

  it("asks the cloud every time before its feed answered, and with no time to remember", async () => {
    const unfollowed = setup();
    await unfollowed.watch.instance(NS, "east", "i-1", unfollowed.read(instance("i-1")));
    await unfollowed.watch.instance(NS, "east", "i-1", unfollowed.read(instance("i-1")));
    assert.equal(unfollowed.reads(), 2);
    const forgetful = setup(0);
    await forgetful.watch.pollAll();
    forgetful.advance(1);
    await forgetful.watch.instance(NS, "east", "i-1", forgetful.read(instance("i-1")));
    await forgetful.watch.instance(NS, "east", "i-1", forgetful.read(instance("i-1")));
    assert.equal(forgetful.reads(), 2);
  });
});
