import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { renderResources } from "./cli.ts";
import { SimCloudClient } from "./client.ts";
import { ManualClock } from "./clock.ts";
import { SimCloud, type SimCloudOptions } from "./cloud.ts";
import { InvalidParameterError, NotFoundError } from "./errors.ts";
import { SCALE_SET_TAG, type ScaleSet } from "./scaleset-service.ts";
import { startSimCloudServer } from "./server.ts";
import { readyNetwork, settle, waitFor } from "./test-support.ts";

const REGION = "sim-east-1";
const USER_DATA = "#cloud-config\n# join token abc.def\n";
const clouds: SimCloud[] = [];
const dirs: string[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** An instant-profile cloud on a manual clock with a ready network and subnets in zones a and b. */
async function scaleSetCloud(options: SimCloudOptions = {}) {
  const clock = new ManualClock();
  const cloud = new SimCloud({ profile: "instant", clock, ...options });
  clouds.push(cloud);
  const booted: { id: string; userData: string }[] = [];
  cloud.addHooks({ onInstanceBooted: (instance, userData) => void booted.push({ id: instance.id, userData }) });
  const tick = () => clock.advance(10);
  const net = await readyNetwork(cloud, { tick });
  const second = await cloud.createSubnet(REGION, { networkId: net.network.id, zone: `${REGION}b`, cidr: "10.0.2.0/24" });
  await waitFor(async () => {
    tick();
    return (await cloud.getSubnet(REGION, second.id)).state === "available";
  }, "second subnet");
  /** Moves the clock on until the set is in the wanted shape. */
  const until = (id: string, what: string, check: (set: ScaleSet) => boolean) =>
    waitFor(async () => {
      clock.advance(10);
      await settle();
      const set = await cloud.getScaleSet(REGION, id);
      return check(set) ? set : undefined;
    }, what);
  const create = (desiredCapacity: number, extra: { minSize?: number; maxSize?: number } = {}) =>
    cloud.createScaleSet(REGION, {
      name: "workers",
      subnetIds: [net.subnet.id, second.id],
      launchTemplate: { machineType: "s1.small", imageId: net.imageId, userData: USER_DATA, securityGroupIds: [net.securityGroup.id], tags: { pool: "workers" } },
      minSize: extra.minSize ?? 0,
      maxSize: extra.maxSize ?? 10,
      desiredCapacity,
      tags: { cluster: "c1" },
    });
  return { clock, cloud, net, zones: [net.subnet.zone, second.zone], booted, until, create };
}

const inService = (n: number) => (set: ScaleSet) => set.inServiceCount === n && set.instances.length === n;

describe("scale sets", () => {
  it("launches ordinary instances over its zones, booted with the template's user data, and reports their health", async () => {
    const { cloud, zones, booted, until, create } = await scaleSetCloud();
    const created = await create(3);
    assert.match(created.id, /^ss-/);
    assert.equal(created.state, "active");
    assert.equal(created.launchTemplate.userDataSha256?.length, 64);
    assert.ok(!JSON.stringify(created).includes("abc.def"), "the user data is never shown");

    const set = await until(created.id, "three instances in service", inService(3));
    assert.deepEqual(set.instances.map((i) => i.healthStatus), ["Healthy", "Healthy", "Healthy"]);
    const perZone = zones.map((z) => set.instances.filter((i) => i.zone === z).length).sort();
    assert.deepEqual(perZone, [1, 2], "spread over both zones");
    for (const member of set.instances) {
      const instance = await cloud.getInstance(REGION, member.instanceId);
      assert.equal(instance.state, "running");
      assert.equal(instance.tags[SCALE_SET_TAG], created.id);
      assert.equal(instance.tags.pool, "workers", "the template's tags");
      assert.equal(instance.machineType, "s1.small");
      assert.ok(booted.some((b) => b.id === member.instanceId && b.userData === USER_DATA), "booted through the boot hooks with the user data");
    }
    assert.equal(set.activities.filter((a) => a.description.startsWith("Launching a new instance")).length, 3);
    const listed = await cloud.listResources();
    assert.ok(listed.some((r) => r.kind === "scaleSet" && r.id === created.id), "listed with every resource");
    assert.match(renderResources(listed, "table"), new RegExp(`scaleSet\\s+${created.id}\\s+${REGION}\\s+active\\s+cluster=c1`), "as sim-cloud resources shows it");
  });

  it("replaces a killed instance, and reports the dip and the recovery", async () => {
    const { cloud, until, create } = await scaleSetCloud();
    const created = await create(2);
    const set = await until(created.id, "two in service", inService(2));
    const victim = set.instances[0]!.instanceId;
    cloud.killInstance(victim, "the host lost power");
    const recovered = await until(created.id, "a replacement in service", (s) => inService(2)(s) && !s.instances.some((i) => i.instanceId === victim));
    const removal = recovered.activities.find((a) => a.description === `Removing instance ${victim}`);
    assert.match(removal?.cause ?? "", /terminated \(InstanceFailure: the host lost power\); the scale set replaces it/);
    assert.equal((await cloud.getInstance(REGION, victim)).state, "terminated");
  });

  it("reports why it cannot reach capacity (quota), launches elsewhere when a zone is full, and catches up when room appears", async () => {
    const { cloud, zones, until, create } = await scaleSetCloud();
    cloud.setCapacity(REGION, zones[0]!, "s1.small", 0);
    cloud.setQuota("default", REGION, { instances: 2 });
    const created = await create(3);
    const short = await until(created.id, "a status saying why", (s) => s.statusMessage !== undefined && s.instanceCount === 2);
    assert.match(short.statusMessage!, /cannot launch 1 of the 3 instances wanted: .*instance quota exceeded/);
    assert.ok(short.instances.every((i) => i.zone === zones[1]), "the full zone got none");
    const failed = short.activities.filter((a) => a.status === "Failed");
    assert.equal(failed.length, 1, "a retried failure is one activity");
    assert.match(failed[0]!.statusMessage!, /quota exceeded/);

    cloud.setQuota("default", REGION, { instances: 10 });
    const full = await until(created.id, "three in service", inService(3));
    assert.equal(full.statusMessage, undefined);
  });

  it("launches under the same faults as createInstance, and waits before replacing an instance that failed to boot", async () => {
    const { cloud, until, create } = await scaleSetCloud();
    cloud.setFaults({ errors: { createInstance: { InsufficientCapacity: 1 } } });
    const created = await create(1);
    const refused = await until(created.id, "a failed launch", (s) => s.statusMessage !== undefined);
    assert.match(refused.statusMessage!, /insufficient capacity for the request/);
    cloud.setFaults({});
    await until(created.id, "one in service", inService(1));

    // Boots that fail are replaced after the retry delay, not in a tight loop.
    let failures = 0;
    cloud.addHooks({ onInstanceBooted: () => (failures++ < 2 ? { fail: "kubeadm join failed" } : undefined) });
    await cloud.updateScaleSet(REGION, created.id, { desiredCapacity: 2 });
    const waiting = await until(created.id, "a replacement waiting", (s) => /failed to boot \(kubeadm join failed\); launching a replacement shortly/.test(s.statusMessage ?? ""));
    assert.equal(waiting.instanceCount, 1);
    const healed = await until(created.id, "two in service", inService(2));
    assert.equal(failures, 3);
    assert.equal(healed.statusMessage, undefined);
  });

  it("scales in around protected instances, removes a chosen instance, and refuses sizes beyond its limits naming the field", async () => {
    const { cloud, until, create } = await scaleSetCloud();
    await assert.rejects(create(11), (e: unknown) => e instanceof InvalidParameterError && /scaleSet\.desiredCapacity: 11 is more than maxSize 10/.test(e.message));
    assert.deepEqual(await cloud.listScaleSets(REGION), [], "nothing created");
    const created = await create(4, { minSize: 1, maxSize: 5 });
    const set = await until(created.id, "four in service", inService(4));
    const [keep1, keep2, chosen] = set.instances.map((i) => i.instanceId);

    await assert.rejects(cloud.updateScaleSet(REGION, created.id, { desiredCapacity: 6 }), /scaleSet\.desiredCapacity: 6 is more than maxSize 5/);
    await cloud.setScaleSetInstanceProtection(REGION, created.id, [keep1!, keep2!], true);
    await assert.rejects(cloud.setScaleSetInstanceProtection(REGION, created.id, ["i-00000000000000000"], true), /instanceIds: instance i-0+ is not in scale set/);
    await cloud.updateScaleSet(REGION, created.id, { desiredCapacity: 1 });
    const blocked = await until(created.id, "scaled in as far as protection allows", inService(2));
    assert.deepEqual(blocked.instances.map((i) => i.instanceId).sort(), [keep1, keep2].sort(), "protected instances stay");
    assert.match(blocked.statusMessage ?? "", /cannot scale in to 1: 2 instances are protected from scale-in/);

    await cloud.updateScaleSet(REGION, created.id, { desiredCapacity: 3 });
    const grown = await until(created.id, "three again", inService(3));
    const fresh = grown.instances.find((i) => i.instanceId !== keep1 && i.instanceId !== keep2)!.instanceId;
    assert.notEqual(fresh, chosen);

    // Removing a chosen instance lowers the desired capacity; a retry changes nothing.
    const removed = await cloud.removeScaleSetInstance(REGION, created.id, keep1!, true);
    assert.equal(removed.desiredCapacity, 2);
    assert.equal(removed.instances.find((i) => i.instanceId === keep1)?.lifecycleState, "Terminating");
    assert.equal((await cloud.removeScaleSetInstance(REGION, created.id, keep1!, true)).desiredCapacity, 2);
    const two = await until(created.id, "two left", inService(2));
    assert.deepEqual(two.instances.map((i) => i.instanceId).sort(), [keep2, fresh].sort(), "exactly the chosen one went");
    assert.equal((await cloud.getInstance(REGION, keep1!)).stateReason?.code, "ScaleSetRemoval");
    assert.equal((await cloud.removeScaleSetInstance(REGION, created.id, keep1!, true)).desiredCapacity, 2, "once gone, a retry is still a no-op");

    // Without decrementing, the chosen instance is replaced; below minSize the removal is refused.
    await cloud.removeScaleSetInstance(REGION, created.id, fresh, false);
    const replaced = await until(created.id, "a replacement", (s) => inService(2)(s) && !s.instances.some((i) => i.instanceId === fresh));
    assert.equal(replaced.desiredCapacity, 2);
    await cloud.updateScaleSet(REGION, created.id, { minSize: 2 });
    await assert.rejects(cloud.removeScaleSetInstance(REGION, created.id, keep2!, true), /desiredCapacity: .*below minSize 2/);
  });

  it("terminates its instances, protected ones too, when deleted, then goes away", async () => {
    const { cloud, clock, until, create } = await scaleSetCloud();
    const created = await create(2);
    const set = await until(created.id, "two in service", inService(2));
    await cloud.setScaleSetInstanceProtection(REGION, created.id, [set.instances[0]!.instanceId], true);
    await cloud.deleteScaleSet(REGION, created.id);
    await cloud.deleteScaleSet(REGION, created.id);
    await waitFor(async () => {
      clock.advance(10);
      await settle();
      return (await cloud.listScaleSets(REGION)).length === 0;
    }, "the set to go");
    for (const member of set.instances) assert.equal((await cloud.getInstance(REGION, member.instanceId)).stateReason?.code, "ScaleSetDeleted");
    await assert.rejects(cloud.getScaleSet(REGION, created.id), NotFoundError);
  });

  it("keeps its instances and its work across a restart of the cloud", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sim-scaleset-"));
    dirs.push(dir);
    const state = join(dir, "state.db");
    const first = await scaleSetCloud({ state, seed: 5 });
    const created = await first.create(2);
    const set = await first.until(created.id, "two in service", inService(2));
    await first.cloud.close();

    const clock = new ManualClock(first.clock.now());
    const cloud = new SimCloud({ profile: "instant", clock, state, seed: 5 });
    clouds.push(cloud);
    const again = await cloud.getScaleSet(REGION, created.id);
    assert.deepEqual(again.instances.map((i) => i.instanceId), set.instances.map((i) => i.instanceId));
    cloud.killInstance(set.instances[1]!.instanceId);
    const recovered = await waitFor(async () => {
      clock.advance(10);
      await settle();
      const now = await cloud.getScaleSet(REGION, created.id);
      return inService(2)(now) && !now.instances.some((i) => i.instanceId === set.instances[1]!.instanceId) ? now : undefined;
    }, "a replacement after the restart");
    assert.ok(recovered.instances.some((i) => i.instanceId === set.instances[0]!.instanceId));
  });
});

describe("scale sets over HTTP", () => {
  it("refuses a malformed action body naming the field, and changes nothing", async (t) => {
    const server = await startSimCloudServer({ port: 0, profile: "instant", defaultToken: "http-token" });
    t.after(() => server.close());
    const client = new SimCloudClient({ endpoint: server.url, token: "http-token" });
    const net = await readyNetwork(client);
    const set = await client.createScaleSet(REGION, {
      subnetIds: [net.subnet.id],
      launchTemplate: { machineType: "s1.small", imageId: net.imageId },
      minSize: 0,
      maxSize: 2,
      desiredCapacity: 1,
    });
    const member = await waitFor(async () => (await client.getScaleSet(REGION, set.id)).instances[0], "an instance");
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}/v1/regions/${REGION}/scale-sets/${set.id}/${path}`, {
        method: "POST",
        headers: { authorization: "Bearer http-token", "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    for (const [path, body, field] of [
      ["instances/protection", { instanceIds: [member.instanceId] }, "protectedFromScaleIn"],
      ["instances/remove", { instanceId: member.instanceId, decrementDesiredCapacity: "yes" }, "decrementDesiredCapacity"],
      ["update", { desiredCapacity: 3 }, "scaleSet.desiredCapacity"],
      ["update", { desiredCapacity: 1, size: 2 }, "scaleSet.size"],
    ] as const) {
      const answer = await post(path, body);
      assert.equal(answer.status, 400, `${path} ${JSON.stringify(body)}`);
      const error = ((await answer.json()) as { error: { code: string; details?: { field?: string } } }).error;
      assert.equal(error.code, "InvalidParameter");
      assert.equal(error.details?.field, field);
    }
    const after = await client.getScaleSet(REGION, set.id);
    assert.equal(after.desiredCapacity, 1);
    assert.equal(after.instances[0]!.protectedFromScaleIn, false);
    assert.notEqual(after.instances[0]!.lifecycleState, "Terminating");
  });
});
