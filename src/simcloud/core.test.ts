import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { SimCloud } from "./cloud.ts";
import { InvalidParameterError } from "./errors.ts";
import { readyNetwork, waitFor } from "./test-support.ts";

const REGION = "sim-east-1";
const clouds: SimCloud[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
});

function open(options: ConstructorParameters<typeof SimCloud>[0] = {}): SimCloud {
  const cloud = new SimCloud({ profile: "instant", ...options });
  clouds.push(cloud);
  return cloud;
}

describe("idempotency tokens", () => {
  it("return the same resource for the same token and create nothing more", async () => {
    const cloud = open();
    const first = await cloud.createNetwork(REGION, { cidr: "10.0.0.0/16", tags: { a: "1", b: "2" }, clientToken: "net-1" });
    const again = await cloud.createNetwork(REGION, { tags: { b: "2", a: "1" }, cidr: "10.0.0.0/16", clientToken: "net-1" });
    assert.equal(again.id, first.id, "field order does not matter");
    assert.equal((await cloud.listNetworks(REGION)).length, 1);
    assert.equal((await cloud.getQuota(REGION)).usage.networks, 1);
  });

  it("refuse a token reused with different parameters", async () => {
    const cloud = open();
    await cloud.createNetwork(REGION, { cidr: "10.0.0.0/16", clientToken: "net-1" });
    await assert.rejects(
      cloud.createNetwork(REGION, { cidr: "10.1.0.0/16", clientToken: "net-1" }),
      (e: unknown) => e instanceof InvalidParameterError && e.message === "idempotency token reused with different parameters",
    );
    await assert.rejects(cloud.createNetwork("sim-west-1", { cidr: "10.0.0.0/16", clientToken: "net-1" }), InvalidParameterError);
  });

  it("are scoped to the account and the kind", async () => {
    const cloud = open();
    const net = await readyNetwork(cloud);
    const a = await cloud.createSubnet(REGION, { networkId: net.network.id, zone: "sim-east-1b", cidr: "10.0.2.0/24", clientToken: "t" });
    const b = await cloud.createSecurityGroup(REGION, { networkId: net.network.id, name: "x", rules: [], clientToken: "t" });
    assert.notEqual(a.id, b.id);
    const other = cloud.forAccount("team-b");
    const theirs = await other.createNetwork(REGION, { cidr: "10.0.0.0/16", clientToken: "t" });
    const mine = await cloud.createNetwork(REGION, { cidr: "10.0.0.0/16", clientToken: "t" });
    assert.notEqual(theirs.id, mine.id);
  });

  it("keep answering after the resource is gone, with its last state", async () => {
    const cloud = open({ terminatedRetentionMs: 0 });
    const network = await cloud.createNetwork(REGION, { cidr: "10.5.0.0/16", clientToken: "gone" });
    await waitFor(async () => (await cloud.getNetwork(REGION, network.id)).state === "available", "available");
    await cloud.deleteNetwork(REGION, network.id);
    const replay = await cloud.createNetwork(REGION, { cidr: "10.5.0.0/16", clientToken: "gone" });
    assert.equal(replay.id, network.id);
    assert.equal(replay.state, "deleted");
    assert.deepEqual(await cloud.listNetworks(REGION), [], "the replay does not bring it back");

    const net = await readyNetwork(cloud);
    const input = { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId, clientToken: "vm" };
    const instance = await cloud.createInstance(REGION, input);
    await cloud.terminateInstance(REGION, instance.id);
    await waitFor(async () => (await cloud.listInstances(REGION)).length === 0, "purged");
    const instanceReplay = await cloud.createInstance(REGION, input);
    assert.equal(instanceReplay.id, instance.id);
    assert.equal(instanceReplay.state, "terminated");
  });
});
