import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { ManualClock } from "./clock.ts";
import { SimCloud, type SimCloudOptions } from "./cloud.ts";
import { DependencyViolationError, InvalidParameterError, NotFoundError, QuotaExceededError } from "./errors.ts";
import { readyNetwork } from "./test-support.ts";

const REGION = "sim-east-1";
const clouds: SimCloud[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
});

async function demoCloud(options: SimCloudOptions = {}) {
  const clock = new ManualClock();
  const cloud = new SimCloud({ profile: "demo", clock, ...options });
  clouds.push(cloud);
  const net = await readyNetwork(cloud, { tick: () => clock.advance(1000) });
  return { clock, cloud, net };
}

const API_LISTENER = { port: 6443, protocol: "tcp" as const, targetPort: 6443 };

describe("load balancers", () => {
  it("provision, then report each target's health as its instance boots, stops serving, or goes", async () => {
    let serving = true;
    const { clock, cloud, net } = await demoCloud({ hooks: { targetServingSince: () => (serving ? 0 : undefined) } });
    const lb = await cloud.createLoadBalancer(REGION, { name: "api", subnetIds: [net.subnet.id], listeners: [API_LISTENER] });
    assert.equal(lb.state, "provisioning");
    assert.match(lb.dnsName, /^api-[0-9a-f]{8}\.sim-east-1\.lb\.simcloud\.internal$/);
    assert.deepEqual([lb.host, lb.port], [lb.dnsName, 6443]);

    const health = async () => (await cloud.getLoadBalancer(REGION, lb.id)).targets.map((t) => [t.health, t.reason ?? ""]);
    const early = await cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.medium", imageId: net.imageId });
    await cloud.registerTargets(REGION, lb.id, [early.id]);
    assert.deepEqual(await health(), [["initial", "Elb.RegistrationInProgress"]]);
    await cloud.deregisterTargets(REGION, lb.id, [early.id]);

    clock.advance(5_000);
    assert.equal((await cloud.getLoadBalancer(REGION, lb.id)).state, "active");
    const vm = await cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.medium", imageId: net.imageId });
    await cloud.registerTargets(REGION, lb.id, [vm.id]);
    assert.deepEqual(await health(), [["unhealthy", "Target.NotRunning"]], "the instance is still booting");

    // Health checks pass 1–2 s after the target runs (demo profile).
    while ((await cloud.getInstance(REGION, vm.id)).state !== "running") clock.advance(100);
    assert.deepEqual(await health(), [["initial", "Elb.InitialHealthChecking"]]);
    clock.advance(2_000);
    assert.deepEqual(await health(), [["healthy", ""]]);

    serving = false;
    assert.deepEqual(await health(), [["unhealthy", "Target.FailedHealthChecks"]]);
    serving = true;

    cloud.killInstance(vm.id);
    assert.deepEqual(await health(), [["unused", "Target.InvalidState"]]);
    assert.deepEqual((await cloud.deregisterTargets(REGION, lb.id, [vm.id])).targets, []);
  });

  it("publish the endpoint a workload emulator gives when they become active", async () => {
    const { clock, cloud, net } = await demoCloud({ hooks: { onLoadBalancerActive: () => ({ host: "127.0.0.1", port: 31443 }) } });
    const lb = await cloud.createLoadBalancer(REGION, { subnetIds: [net.subnet.id], listeners: [API_LISTENER] });
    clock.advance(5_000);
    const active = await cloud.getLoadBalancer(REGION, lb.id);
    assert.deepEqual([active.state, active.host, active.port], ["active", "127.0.0.1", 31443]);
  });

  it("publish a path too, and publish again for hooks attached later (an emulator restarted on another port)", async () => {
    const { clock, cloud, net } = await demoCloud({ hooks: { onLoadBalancerActive: (lb) => ({ host: "127.0.0.1", port: 31443, path: `/clusters/${lb.id}` }) } });
    const lb = await cloud.createLoadBalancer(REGION, { subnetIds: [net.subnet.id], listeners: [API_LISTENER] });
    clock.advance(5_000);
    assert.equal((await cloud.getLoadBalancer(REGION, lb.id)).path, `/clusters/${lb.id}`);
    cloud.addHooks({ onLoadBalancerActive: () => ({ host: "127.0.0.1", port: 40000 }) });
    const republished = await cloud.getLoadBalancer(REGION, lb.id);
    assert.deepEqual([republished.host, republished.port, republished.path], ["127.0.0.1", 40000, undefined]);
  });

  it("hold their subnets until deleted, then go after deleting", async () => {
    const { clock, cloud, net } = await demoCloud();
    const lb = await cloud.createLoadBalancer(REGION, { subnetIds: [net.subnet.id], listeners: [API_LISTENER] });
    await assert.rejects(cloud.deleteSubnet(REGION, net.subnet.id), DependencyViolationError);
    await cloud.deleteLoadBalancer(REGION, lb.id);
    await cloud.deleteLoadBalancer(REGION, lb.id);
    assert.equal((await cloud.getLoadBalancer(REGION, lb.id)).state, "deleting");
    assert.equal((await cloud.getQuota(REGION)).usage.loadBalancers, 1, "a deleting load balancer still counts");
    clock.advance(2_000);
    await assert.rejects(cloud.getLoadBalancer(REGION, lb.id), NotFoundError);
    await cloud.deleteSecurityGroup(REGION, net.securityGroup.id);
    await cloud.deleteSubnet(REGION, net.subnet.id);
  });

  it("check subnets, listeners, targets and quota", async () => {
    const { clock, cloud, net } = await demoCloud({ quota: { loadBalancers: 1 } });
    const other = await readyNetwork(cloud, { cidr: "10.9.0.0/16", tick: () => clock.advance(1000) });
    await assert.rejects(
      cloud.createLoadBalancer(REGION, { subnetIds: [net.subnet.id, other.subnet.id], listeners: [API_LISTENER] }),
      /belong to different networks/,
    );
    await assert.rejects(
      cloud.createLoadBalancer(REGION, { subnetIds: [net.subnet.id], listeners: [API_LISTENER, API_LISTENER] }),
      /two listeners use the same port/,
    );
    await assert.rejects(cloud.createLoadBalancer(REGION, { subnetIds: [net.subnet.id], listeners: [] }), InvalidParameterError);
    const lb = await cloud.createLoadBalancer(REGION, { subnetIds: [net.subnet.id], listeners: [API_LISTENER] });
    const stranger = await cloud.createInstance(REGION, { subnetId: other.subnet.id, machineType: "s1.small", imageId: net.imageId });
    await assert.rejects(cloud.registerTargets(REGION, lb.id, [stranger.id]), /is in vpc-/);
    await assert.rejects(cloud.registerTargets(REGION, lb.id, ["i-nothere"]), /no such instance/);
    await assert.rejects(
      cloud.createLoadBalancer(REGION, { subnetIds: [other.subnet.id], listeners: [API_LISTENER] }),
      QuotaExceededError,
    );
  });
});
