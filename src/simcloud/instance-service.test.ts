import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { ManualClock } from "./clock.ts";
import { SimCloud, type SimCloudOptions } from "./cloud.ts";
import { InsufficientCapacityError, InvalidParameterError, NotFoundError, QuotaExceededError } from "./errors.ts";
import { readyNetwork, settle, waitFor } from "./test-support.ts";
import type { Instance } from "./types.ts";

const REGION = "sim-east-1";
const clouds: SimCloud[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
});

function open(options: SimCloudOptions = {}): SimCloud {
  const cloud = new SimCloud({ profile: "instant", ...options });
  clouds.push(cloud);
  return cloud;
}

/** A demo-profile cloud on a manual clock, with a ready network. */
async function manualCloud(options: SimCloudOptions = {}) {
  const clock = new ManualClock();
  const cloud = open({ profile: "demo", clock, ...options });
  const net = await readyNetwork(cloud, { tick: () => clock.advance(1000) });
  return { clock, cloud, net };
}

describe("instance lifecycle", () => {
  it("goes pending → running → stopping → stopped → pending → running → stopping → terminated, then is purged", async () => {
    const { clock, cloud, net } = await manualCloud();
    const state = async (id: string) => (await cloud.getInstance(REGION, id)).state;
    const launched = await cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.medium", imageId: net.imageId });
    assert.equal(launched.state, "pending");
    clock.advance(3_900);
    assert.equal(await state(launched.id), "pending", "demo boots take at least 4 s");
    clock.advance(4_200);
    const running = await cloud.getInstance(REGION, launched.id);
    assert.equal(running.state, "running");
    assert.ok(running.launchedAt);

    assert.equal((await cloud.stopInstance(REGION, launched.id)).state, "stopping");
    assert.equal((await cloud.stopInstance(REGION, launched.id)).state, "stopping", "stopping twice is a no-op");
    clock.advance(3_000);
    const stopped = await cloud.getInstance(REGION, launched.id);
    assert.equal(stopped.state, "stopped");
    assert.equal(stopped.stateReason?.code, "UserInitiatedShutdown");

    assert.equal((await cloud.startInstance(REGION, launched.id)).state, "pending");
    clock.advance(8_000);
    assert.equal(await state(launched.id), "running");

    assert.equal((await cloud.terminateInstance(REGION, launched.id)).state, "stopping");
    clock.advance(4_000);
    assert.equal(await state(launched.id), "terminated");
    assert.equal((await cloud.listInstances(REGION)).length, 1, "terminated instances stay visible for a while");
    await assert.rejects(cloud.startInstance(REGION, launched.id), InvalidParameterError);

    clock.advance(60_000);
    await assert.rejects(cloud.getInstance(REGION, launched.id), NotFoundError);
  });

  it("refuses to stop an instance that is still pending", async () => {
    const { cloud, net } = await manualCloud();
    const launched = await cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId });
    await assert.rejects(cloud.stopInstance(REGION, launched.id), /pending; only a running instance can be stopped/);
  });

  it("boots slower when a slow-boot fault hits", async () => {
    const { clock, cloud, net } = await manualCloud({ faults: { slowBoot: { probability: 1, factor: 3 } } });
    const launched = await cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId });
    clock.advance(8_100);
    assert.equal((await cloud.getInstance(REGION, launched.id)).state, "pending");
    clock.advance(16_000);
    assert.equal((await cloud.getInstance(REGION, launched.id)).state, "running");
  });

  it("lets instances die after boot (fault) and be killed by the operator", async () => {
    const { clock, cloud, net } = await manualCloud({ faults: { instanceDeath: { probability: 1, afterMs: [10_000, 10_000] } } });
    const doomed = await cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId });
    clock.advance(8_000);
    assert.equal((await cloud.getInstance(REGION, doomed.id)).state, "running");
    clock.advance(10_000);
    const dead = await cloud.getInstance(REGION, doomed.id);
    assert.equal(dead.state, "terminated");
    assert.equal(dead.stateReason?.code, "InstanceFailure");

    cloud.setFaults({});
    const victim = await cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId });
    const killed = cloud.killInstance(victim.id, "rack power lost");
    assert.equal(killed.state, "terminated");
    assert.deepEqual(killed.stateReason, { code: "InstanceFailure", message: "rack power lost" });
  });
});

describe("instance boot", () => {
  it("hands the user data to the boot hooks, which can fail a boot with a reason", async () => {
    const cloud = open();
    const seen: { id: string; userData: string; firstBoot: boolean; state: string }[] = [];
    const terminated: Instance[] = [];
    cloud.addHooks({
      onInstanceBooted: (instance, userData, { firstBoot }) => {
        seen.push({ id: instance.id, userData, firstBoot, state: instance.state });
        return userData.includes("bad-token") ? { fail: "kubeadm join: token not valid" } : undefined;
      },
      onInstanceTerminated: (instance) => void terminated.push(instance),
    });
    const net = await readyNetwork(cloud);
    const good = await cloud.createInstance(REGION, {
      subnetId: net.subnet.id,
      machineType: "s1.medium",
      imageId: net.imageId,
      userData: "#cloud-config\nruncmd: [kubeadm init]\n",
    });
    assert.equal("userData" in good, false, "user data is not in the instance's view");
    assert.deepEqual(await cloud.getInstanceUserData(REGION, good.id), { instanceId: good.id, userData: "#cloud-config\nruncmd: [kubeadm init]\n" }, "its account reads it back");
    await assert.rejects(cloud.forAccount("nobody").getInstanceUserData(REGION, good.id), NotFoundError, "another account does not");
    assert.match(good.userDataSha256 ?? "", /^[0-9a-f]{64}$/);
    await waitFor(async () => (await cloud.getInstance(REGION, good.id)).state === "running", "running");
    assert.deepEqual(seen, [{ id: good.id, userData: "#cloud-config\nruncmd: [kubeadm init]\n", firstBoot: true, state: "running" }]);
    assert.match((await cloud.getInstance(REGION, good.id)).bootLog.join("\n"), /user data: 37 bytes \(cloud-config\)/);

    const bad = await cloud.createInstance(REGION, {
      subnetId: net.subnet.id,
      machineType: "s1.medium",
      imageId: net.imageId,
      userData: "#cloud-config\nruncmd: [kubeadm join --token bad-token]\n",
    });
    const failed = await waitFor(async () => {
      const instance = await cloud.getInstance(REGION, bad.id);
      return instance.state === "terminated" && instance;
    }, "failed boot");
    assert.deepEqual(failed.stateReason, { code: "BootFailed", message: "kubeadm join: token not valid" });
    await waitFor(() => terminated.some((i) => i.id === bad.id), "termination hook");
  });

  it("gives private addresses from the subnet and takes them back on termination", async () => {
    const cloud = open();
    const net = await readyNetwork(cloud);
    const launch = () => cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId });
    const first = await launch();
    const second = await launch();
    assert.deepEqual([first.privateIp, second.privateIp], ["10.0.1.4", "10.0.1.5"]);
    assert.equal((await cloud.getSubnet(REGION, net.subnet.id)).availableIpCount, 251 - 2);
    await cloud.terminateInstance(REGION, first.id);
    await waitFor(async () => (await cloud.getInstance(REGION, first.id)).state === "terminated", "terminated");
    assert.equal((await launch()).privateIp, "10.0.1.4");
  });

  it("assigns and releases public addresses from a documentation range", async () => {
    const cloud = open();
    const net = await readyNetwork(cloud);
    const eip = await cloud.createPublicIp(REGION, { tags: { role: "bastion" } });
    assert.match(eip.address, /^(203\.0\.113|198\.51\.100|192\.0\.2)\./);
    const holder = await cloud.createInstance(REGION, {
      subnetId: net.subnet.id,
      machineType: "s1.small",
      imageId: net.imageId,
      publicIpId: eip.id,
    });
    assert.equal(holder.publicIp, eip.address);
    assert.equal((await cloud.getPublicIp(REGION, eip.id)).state, "in-use");
    await assert.rejects(cloud.deletePublicIp(REGION, eip.id), { code: "DependencyViolation" });
    await cloud.terminateInstance(REGION, holder.id);
    await waitFor(async () => (await cloud.getPublicIp(REGION, eip.id)).state === "available", "address released");
    await cloud.deletePublicIp(REGION, eip.id);
  });
});

describe("instance quota and capacity", () => {
  it("refuses a launch past the vCPU quota, names the quota, and honours a raised limit", async () => {
    const cloud = open();
    const net = await readyNetwork(cloud);
    const launch = (machineType: string) => cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType, imageId: net.imageId });
    for (let i = 0; i < 4; i++) await launch("s1.2xlarge");
    const error = await launch("s1.small").then(
      () => assert.fail("expected QuotaExceeded"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof QuotaExceededError);
    assert.equal(error.status, 403);
    assert.deepEqual(error.details, { quota: "vcpus", region: REGION, limit: 64, usage: 64, requested: 1 });
    assert.deepEqual((await cloud.getQuota(REGION)).usage, { vcpus: 64, instances: 4, networks: 1, loadBalancers: 0, publicIps: 0 });
    cloud.setQuota("default", REGION, { vcpus: 80 });
    assert.equal((await launch("s1.small")).state, "pending");
    assert.equal((await cloud.getQuota(REGION)).limits.vcpus, 80);
  });

  it("answers InsufficientCapacity when the zone is full; stopped instances give their place back", async () => {
    const cloud = open();
    const net = await readyNetwork(cloud);
    cloud.setCapacity(REGION, net.subnet.zone, "s1.small", 1);
    const launch = () => cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId });
    const first = await launch();
    await assert.rejects(launch(), InsufficientCapacityError);
    assert.equal((await cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.medium", imageId: net.imageId })).state, "pending");
    await waitFor(async () => (await cloud.getInstance(REGION, first.id)).state === "running", "running");
    await cloud.stopInstance(REGION, first.id);
    await waitFor(async () => (await cloud.getInstance(REGION, first.id)).state === "stopped", "stopped");
    const second = await launch();
    await assert.rejects(cloud.startInstance(REGION, first.id), InsufficientCapacityError);
    await cloud.terminateInstance(REGION, second.id);
    await settle();
    assert.equal((await cloud.startInstance(REGION, first.id)).state, "pending");
  });

  it("checks what it is asked to launch", async () => {
    const cloud = open();
    const net = await readyNetwork(cloud);
    const base = { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId };
    await assert.rejects(cloud.createInstance(REGION, { ...base, machineType: "x9.huge" }), /machine type "x9.huge" is not offered/);
    const westImage = (await cloud.describeImages("sim-west-1"))[0]!.id;
    await assert.rejects(cloud.createInstance(REGION, { ...base, imageId: westImage }), /does not exist in sim-east-1/);
    await assert.rejects(cloud.createInstance(REGION, { ...base, userData: "x".repeat(70_000) }), /more than 65536/);
    await assert.rejects(
      cloud.createInstance(REGION, { ...base, colour: "blue" } as typeof base),
      (e: unknown) => e instanceof InvalidParameterError && /^instance/.test(e.message),
    );
    await assert.rejects(cloud.createInstance(REGION, { ...base, subnetId: "subnet-missing" }), NotFoundError);
    await assert.rejects(cloud.createInstance("mars-1", base), /unknown region "mars-1"/);
  });
});
