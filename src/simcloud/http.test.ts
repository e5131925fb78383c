import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { SimCloudAdminClient, SimCloudClient } from "./client.ts";
import {
  DependencyViolationError,
  InsufficientCapacityError,
  InvalidParameterError,
  NotFoundError,
  QuotaExceededError,
  ThrottlingError,
  UnauthorizedError,
} from "./errors.ts";
import { startSimCloudServer, type SimCloudServer } from "./server.ts";
import { readyNetwork, sshPublicKey, waitFor } from "./test-support.ts";

const REGION = "sim-east-1";
const TOKEN = "test-account-token";
const ADMIN = "test-admin-token";

let server: SimCloudServer;
let client: SimCloudClient;
let admin: SimCloudAdminClient;

before(async () => {
  server = await startSimCloudServer({ port: 0, profile: "instant", defaultToken: TOKEN, adminToken: ADMIN });
  client = new SimCloudClient({ endpoint: server.url, token: TOKEN });
  admin = new SimCloudAdminClient({ endpoint: server.url, token: ADMIN });
});
after(() => server.close());

describe("HTTP API", () => {
  it("answers 401 without a valid bearer token, except on /healthz", async () => {
    const anonymous = await fetch(`${server.url}/v1/regions`);
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { error: { code: string } }).error.code, "Unauthorized");
    await assert.rejects(new SimCloudClient({ endpoint: server.url, token: "wrong-token" }).describeRegions(), UnauthorizedError);
    await assert.rejects(new SimCloudAdminClient({ endpoint: server.url, token: TOKEN }).getFaults(), UnauthorizedError);
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  });

  it("serves the catalogue and the whole resource lifecycle through the typed client", async () => {
    const regions = await client.describeRegions();
    assert.deepEqual(regions.map((r) => r.name), ["sim-east-1", "sim-west-1", "sim-central-1"]);
    assert.deepEqual((await client.describeZones(REGION)).map((z) => z.name), ["sim-east-1a", "sim-east-1b", "sim-east-1c"]);
    const types = await client.describeMachineTypes(REGION);
    assert.deepEqual(types.find((t) => t.name === "s1.2xlarge"), { name: "s1.2xlarge", family: "general", vcpus: 16, memoryMiB: 65536, hourlyPrice: 0.768 });
    assert.ok(!(await client.describeMachineTypes("sim-central-1")).some((t) => t.family === "memory"));

    const net = await readyNetwork(client, { cidr: "10.20.0.0/16" });
    const key = await client.createKeyPair(REGION, { name: "ops", publicKey: sshPublicKey(), tags: { cluster: "h" } });
    const vm = await client.createInstance(REGION, {
      subnetId: net.subnet.id,
      machineType: "s1.medium",
      imageId: net.imageId,
      keyPairId: key.id,
      securityGroupIds: [net.securityGroup.id],
      tags: { cluster: "h", "slipway.dev/role": "control-plane" },
      clientToken: "h-cp-0",
    });
    await assert.rejects(
      client.createInstance(REGION, { ...vmInput(net, key.id), clientToken: "h-cp-0" }),
      (e: unknown) => e instanceof InvalidParameterError && /idempotency token reused/.test(e.message),
    );
    await waitFor(async () => (await client.getInstance(REGION, vm.id)).state === "running", "running");
    const tagged = await client.listInstances(REGION, { tags: { "slipway.dev/role": "control-plane" } });
    assert.deepEqual(tagged.map((i) => i.id), [vm.id]);
    assert.deepEqual((await client.listResources({ tags: { cluster: "h" } })).map((r) => r.kind).sort(), ["instance", "keyPair"]);

    const lb = await client.createLoadBalancer(REGION, { subnetIds: [net.subnet.id], listeners: [{ port: 6443, protocol: "tcp", targetPort: 6443 }] });
    await client.registerTargets(REGION, lb.id, [vm.id]);
    // Nothing on the machine answers on 6443 (it runs no API server): its health checks fail.
    const target = await waitFor(async () => {
      const t = (await client.getLoadBalancer(REGION, lb.id)).targets[0];
      return t?.health !== "initial" ? t : undefined;
    }, "a health verdict");
    assert.deepEqual([target.health, target.reason], ["unhealthy", "Target.FailedHealthChecks"]);

    await assert.rejects(client.deleteNetwork(REGION, net.network.id), DependencyViolationError);
    await assert.rejects(client.getInstance(REGION, "i-00000000000000000"), NotFoundError);
    assert.equal((await client.stopInstance(REGION, vm.id)).state, "stopping");
    await waitFor(async () => (await client.getInstance(REGION, vm.id)).state === "stopped", "stopped");
    assert.equal((await client.terminateInstance(REGION, vm.id)).state, "stopping");
    await client.deleteLoadBalancer(REGION, lb.id);
    await waitFor(async () => (await client.listLoadBalancers(REGION)).length === 0, "load balancer gone");
    await client.deleteKeyPair(REGION, key.id);
    assert.equal((await client.getQuota(REGION)).usage.loadBalancers, 0);
  });

  it("turns error bodies back into named errors, with the field at fault", async () => {
    const error = await client.createNetwork(REGION, { cidr: "10.0.0.0/16", colour: "red" } as never).catch((e: unknown) => e);
    assert.ok(error instanceof InvalidParameterError);
    assert.equal(error.details?.field, "network.colour");
    const badJson = await fetch(`${server.url}/v1/regions/${REGION}/networks`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: "{",
    });
    assert.equal(badJson.status, 400);
    assert.equal(((await badJson.json()) as { error: { code: string } }).error.code, "InvalidParameter");
    const lost = await fetch(`${server.url}/v1/nowhere`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(lost.status, 404);
    await assert.rejects(client.listNetworks("nowhere-1"), /unknown region "nowhere-1"/);
  });

  it("throttles with 429 and Retry-After, which the client turns into retryAfterMs", async () => {
    const before = await admin.getFaultCounts();
    await admin.setFaults({ errors: { getQuota: { Throttling: 1 } }, retryAfterMs: 1500 });
    try {
      const raw = await fetch(`${server.url}/v1/regions/${REGION}/quota`, { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(raw.status, 429);
      assert.equal(raw.headers.get("retry-after"), "2");
      await assert.rejects(client.getQuota(REGION), (e: unknown) => e instanceof ThrottlingError && e.retryAfterMs === 1500);
      assert.deepEqual(await admin.getFaults(), { errors: { getQuota: { Throttling: 1 } }, retryAfterMs: 1500 });
      assert.equal((await admin.getFaultCounts()).Throttling, before.Throttling + 2, "the admin API counts both throttled calls");
    } finally {
      await admin.setFaults({});
    }
    assert.equal((await client.getQuota(REGION)).region, REGION);
  });

  it("lets the operator set quotas and capacity, kill instances and add accounts", async () => {
    const net = await readyNetwork(client, { cidr: "10.30.0.0/16" });
    await admin.setQuota("default", REGION, { instances: 0 });
    await assert.rejects(client.createInstance(REGION, vmInput(net)), QuotaExceededError);
    await admin.setQuota("default", REGION, { instances: 32 });
    await admin.setCapacity(REGION, net.subnet.zone, "s1.small", 0);
    await assert.rejects(client.createInstance(REGION, { ...vmInput(net), machineType: "s1.small" }), InsufficientCapacityError);
    await admin.setCapacity(REGION, net.subnet.zone, "s1.small", 1000);

    const vm = await client.createInstance(REGION, vmInput(net));
    const killed = await admin.killInstance(vm.id, "disk failure");
    assert.deepEqual([killed.state, killed.stateReason?.message], ["terminated", "disk failure"]);

    await admin.setAccount("team-c", "team-c-token");
    const teamC = new SimCloudClient({ endpoint: server.url, token: "team-c-token" });
    assert.deepEqual(await teamC.listInstances(REGION), []);
  });
});

describe("instance state changes", () => {
  it("tells an account the state changes of its instances in a region after a cursor, and asks for a fresh look at a cursor it cannot answer", async () => {
    const net = await readyNetwork(client, { cidr: "10.40.0.0/16" });
    const start = await client.describeInstanceEvents(REGION);
    assert.deepEqual([start.events, start.reset], [[], false]);
    const vm = await client.createInstance(REGION, vmInput(net));
    await waitFor(async () => (await client.getInstance(REGION, vm.id)).state === "running", "the instance to run");
    await admin.killInstance(vm.id, "disk failure");
    // Another account's instances and other regions are not this account's feed.
    await admin.setAccount("team-d", "team-d-token");
    const teamD = new SimCloudClient({ endpoint: server.url, token: "team-d-token" });
    const theirs = await teamD.describeInstanceEvents(REGION);

    const changes = await client.describeInstanceEvents(REGION, start.cursor, start.epoch);
    assert.deepEqual(changes.events.filter((e) => e.instanceId === vm.id).map((e) => e.state), ["pending", "running", "terminated"]);
    assert.equal(changes.reset, false);
    assert.deepEqual((await client.describeInstanceEvents(REGION, changes.cursor, changes.epoch)).events, [], "nothing new after the last cursor");
    assert.deepEqual((await teamD.describeInstanceEvents(REGION, theirs.cursor, theirs.epoch)).events, []);
    assert.deepEqual((await client.describeInstanceEvents("sim-west-1", start.cursor, start.epoch)).events, []);

    const stale = await client.describeInstanceEvents(REGION, start.cursor, "an-earlier-start");
    assert.deepEqual([stale.reset, stale.events, stale.cursor], [true, [], changes.cursor]);
    await assert.rejects(fetch(`${server.url}/v1/regions/${REGION}/instance-events?after=-1`, { headers: { authorization: `Bearer ${TOKEN}` } }).then(async (r) => {
      if (r.status !== 400) throw new Error(`answered ${r.status}`);
      throw new InvalidParameterError(((await r.json()) as { error: { message: string } }).error.message);
    }), /after must be a whole number/);
  });
});

function vmInput(net: { subnet: { id: string }; imageId: string }, keyPairId?: string) {
  return { subnetId: net.subnet.id, machineType: "s1.medium", imageId: net.imageId, ...(keyPairId ? { keyPairId } : {}) };
}
