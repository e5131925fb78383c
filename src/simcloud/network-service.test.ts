import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { ManualClock } from "./clock.ts";
import { SimCloud } from "./cloud.ts";
import { DependencyViolationError, InvalidParameterError, NotFoundError } from "./errors.ts";
import { readyNetwork, sshPublicKey, waitFor } from "./test-support.ts";

const REGION = "sim-east-1";
const clouds: SimCloud[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
});

function open(): SimCloud {
  const cloud = new SimCloud({ profile: "instant" });
  clouds.push(cloud);
  return cloud;
}

describe("networks, subnets and security groups", () => {
  it("refuse to be deleted while something still uses them, and go once it is gone", async () => {
    const cloud = open();
    const net = await readyNetwork(cloud);
    const instance = await cloud.createInstance(REGION, {
      subnetId: net.subnet.id,
      machineType: "s1.small",
      imageId: net.imageId,
      securityGroupIds: [net.securityGroup.id],
    });

    await assert.rejects(cloud.deleteNetwork(REGION, net.network.id), (e: unknown) => {
      assert.ok(e instanceof DependencyViolationError);
      assert.equal(e.status, 409);
      assert.match(e.message, new RegExp(`network ${net.network.id} is still used by subnet ${net.subnet.id}`));
      return true;
    });
    await assert.rejects(cloud.deleteSubnet(REGION, net.subnet.id), new RegExp(`used by instance ${instance.id}`));
    await assert.rejects(cloud.deleteSecurityGroup(REGION, net.securityGroup.id), DependencyViolationError);

    await cloud.terminateInstance(REGION, instance.id);
    await waitFor(async () => (await cloud.getInstance(REGION, instance.id)).state === "terminated", "terminated");
    await cloud.deleteSecurityGroup(REGION, net.securityGroup.id);
    await cloud.deleteSubnet(REGION, net.subnet.id);
    await cloud.deleteNetwork(REGION, net.network.id);
    await assert.rejects(cloud.getNetwork(REGION, net.network.id), NotFoundError);
    assert.deepEqual(await cloud.listSubnets(REGION), []);
  });

  it("cannot build on a network that is still pending", async () => {
    const clock = new ManualClock();
    const cloud = new SimCloud({ profile: "realistic", clock });
    clouds.push(cloud);
    const network = await cloud.createNetwork(REGION, { cidr: "10.1.0.0/16" });
    await assert.rejects(
      cloud.createSubnet(REGION, { networkId: network.id, zone: "sim-east-1a", cidr: "10.1.0.0/24" }),
      (e: unknown) => e instanceof DependencyViolationError && /is pending; retry once it is available/.test(e.message),
    );
    clock.advance(3_000);
    assert.equal((await cloud.createSubnet(REGION, { networkId: network.id, zone: "sim-east-1a", cidr: "10.1.0.0/24" })).state, "pending");
  });

  it("check ranges: valid CIDRs, subnets inside their network and not overlapping", async () => {
    const cloud = open();
    const net = await readyNetwork(cloud);
    const subnet = (cidr: string, zone = "sim-east-1b") => cloud.createSubnet(REGION, { networkId: net.network.id, zone, cidr });
    await assert.rejects(cloud.createNetwork(REGION, { cidr: "10.0.0.0/8" }), /between \/16 and \/28/);
    await assert.rejects(cloud.createNetwork(REGION, { cidr: "10.0.0.1/16" }), /host bits set \(did you mean 10.0.0.0\/16\?\)/);
    await assert.rejects(cloud.createNetwork(REGION, { cidr: "300.0.0.0/16" }), /not an IPv4 CIDR/);
    await assert.rejects(subnet("10.9.0.0/24"), /not inside the network's 10.0.0.0\/16/);
    await assert.rejects(subnet("10.0.1.128/25"), new RegExp(`overlaps subnet ${net.subnet.id}`));
    await assert.rejects(subnet("10.0.2.0/24", "sim-west-1a"), /zone "sim-west-1a" is not in sim-east-1/);
    await assert.rejects(
      cloud.createSecurityGroup(REGION, {
        networkId: net.network.id,
        name: "api",
        rules: [{ direction: "ingress", protocol: "tcp", fromPort: 7000, toPort: 6000, cidr: "0.0.0.0/0" }],
      }),
      /fromPort 7000 is above toPort 6000/,
    );
    await assert.rejects(
      cloud.createSecurityGroup(REGION, { networkId: net.network.id, name: "nodes", rules: [] }),
      /"nodes" already exists/,
    );
    assert.equal((await subnet("10.0.2.0/24")).cidr, "10.0.2.0/24");
  });

  it("list by tags, and keep each account's resources to itself", async () => {
    const cloud = open();
    cloud.setAccount("team-b", "team-b-token");
    const teamB = cloud.forAccount("team-b");
    const mine = await cloud.createNetwork(REGION, { cidr: "10.0.0.0/16", tags: { cluster: "a", owner: "x" } });
    await cloud.createNetwork(REGION, { cidr: "10.1.0.0/16", tags: { cluster: "b" } });
    const theirs = await teamB.createNetwork(REGION, { cidr: "10.0.0.0/16", tags: { cluster: "a" } });
    assert.deepEqual((await cloud.listNetworks(REGION, { tags: { cluster: "a" } })).map((n) => n.id), [mine.id]);
    assert.deepEqual((await cloud.listNetworks(REGION, { tags: { cluster: "a", owner: "y" } })).map((n) => n.id), []);
    assert.deepEqual((await teamB.listNetworks(REGION)).map((n) => n.id), [theirs.id]);
    await assert.rejects(cloud.getNetwork(REGION, theirs.id), NotFoundError);
    await assert.rejects(cloud.getNetwork("sim-west-1", mine.id), NotFoundError, "ids are regional");
    assert.deepEqual(
      (await cloud.listResources({ tags: { cluster: "a" } })).map((r) => r.id),
      [mine.id],
    );
  });
});

describe("key pairs", () => {
  it("import an OpenSSH key with its fingerprint and refuse malformed keys and duplicate names", async () => {
    const cloud = open();
    const key = await cloud.createKeyPair(REGION, { name: "admin", publicKey: sshPublicKey() });
    assert.equal(key.state, "available");
    assert.match(key.fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
    await assert.rejects(cloud.createKeyPair(REGION, { name: "admin", publicKey: sshPublicKey(9) }), /"admin" already exists/);
    await assert.rejects(cloud.createKeyPair(REGION, { name: "x", publicKey: "ssh-rsa AAAAnotakey" }), InvalidParameterError);
    await assert.rejects(cloud.createKeyPair(REGION, { name: "x", publicKey: "hello" }), /key type must be one of/);
    await cloud.deleteKeyPair(REGION, key.id);
    assert.deepEqual(await cloud.listKeyPairs(REGION), []);
  });
});
