// Conformance of the pool infrastructure capability: a pool made once per token and tagged (its instances
// too), kept at its desired size over its zones by the cloud — an instance deleted behind its back is
// replaced —, sizes beyond its limits refused naming the field, scale-in around protected instances,
// removal of exactly the instance named (once, however often it is asked), and delete taking the
// instances with it.
import { it } from "node:test";
import assert from "node:assert/strict";
import type { PoolInfo, PoolSpec } from "../provider.ts";
import { machineTemplate, rejectsWith, type Case, type CaseStarter } from "./case.ts";
import { buildFoundation } from "./cluster-infrastructure.ts";

const SECRET = "conformance-pool-secret-5c1e";
const USER_DATA = `#cloud-config\nwrite_files:\n  - path: /etc/slipway/token\n    content: ${SECRET}\n`;

/** A pool spec placed in a new foundation, over a second zone too when the region has one. */
async function poolSpec(c: Case, sizes: { minSize: number; maxSize: number; desired: number }): Promise<PoolSpec> {
  assert.ok(c.has("clusterInfrastructure"), "pools are placed in the cluster infrastructure's subnets");
  const template = await machineTemplate(c);
  const f = await buildFoundation(c);
  const subnetIds = [f.subnetId];
  const second = (await c.catalogue.zones()).find((z) => z !== f.zone);
  if (second) {
    const subnet = await c.infrastructure.create("subnet", { networkId: f.networkId, zone: second, cidr: "10.42.2.0/24" }, { token: c.token("subnet-2"), tags: c.tagsFor("subnet") });
    c.track("subnet", subnet.id);
    await c.waitFor("subnet", subnet.id, "ready");
    subnetIds.push(subnet.id);
  }
  return {
    name: `${c.cluster}-pool`,
    machineType: template.machineType,
    imageId: template.imageId,
    userData: USER_DATA,
    placement: { subnetIds, securityGroupIds: [f.securityGroupId], keyPairId: f.keyPairId },
    ...sizes,
  };
}

/** Starts a case that deletes its pools (and waits for them to go) before its foundation is torn down. */
async function poolCase(start: CaseStarter, t: Parameters<CaseStarter>[0], label: string) {
  const c = await start(t, label);
  if (!c.has("clusterInfrastructure")) {
    t.skip("a provider of hosts has no scale sets: its pools are sets of hosts");
    return undefined;
  }
  const pools = c.capability("poolInfrastructure");
  const made = (pool: PoolInfo) => {
    c.onTeardown(async () => {
      await pools.delete(pool.id);
      await c.eventually(`pool ${pool.id} to be gone`, async () => ((await pools.get(pool.id)) === undefined ? true : undefined));
    });
    return pool;
  };
  const settled = (id: string, what: string, check: (pool: PoolInfo) => boolean) =>
    c.eventually(what, async () => {
      const pool = await pools.get(id);
      assert.ok(pool, `pool ${id} exists`);
      return check(pool) ? pool : undefined;
    });
  return { c, pools, made, settled };
}

/** Exactly `n` instances, all ready and healthy, none leaving. */
const atSize = (n: number) => (pool: PoolInfo) => pool.readyReplicas === n && pool.instances.length === n && pool.instances.every((i) => i.healthy);

export function poolInfrastructureConformance(start: CaseStarter): void {
  hostSetConformance(start);
  it("keeps a pool at its desired size over its zones, made once per token, tagged with its instances", async (t) => {
    const started = await poolCase(start, t, "pool");
    if (!started) return;
    const { c, pools, made, settled } = started;
    const spec = await poolSpec(c, { minSize: 0, maxSize: 4, desired: 2 });
    const create = () => pools.create(spec, { token: c.token("pool"), tags: c.tagsFor("pool") });
    const pool = made(await create());
    assert.equal((await create()).id, pool.id, "the same token returns the same pool");
    assert.ok(!JSON.stringify(pool).includes(SECRET), "the user data never comes back");
    for (const [key, value] of Object.entries(c.tagsFor("pool"))) assert.equal(pool.tags[key], value, `the pool carries tag ${key}`);
    assert.deepEqual((await pools.findTagged(c.tags)).map((p) => p.id), [pool.id], "findTagged finds exactly the one made");

    const full = await settled(pool.id, "two instances ready", atSize(2));
    assert.equal(full.replicas, 2);
    assert.equal(full.desired, 2);
    if (spec.placement.subnetIds.length > 1) assert.equal(new Set(full.instances.map((i) => i.zone)).size, 2, "spread over both zones");
    assert.deepEqual((await pools.instances(pool.id)).map((i) => i.instanceId), full.instances.map((i) => i.instanceId));
    if (c.has("machines")) {
      for (const member of full.instances) {
        const instance = await c.machines.get("instance", member.instanceId);
        assert.equal(instance?.state, "ready");
        assert.equal(instance?.providerId, member.providerId);
        for (const [key, value] of Object.entries(c.tags)) assert.equal(instance?.tags[key], value, `instance ${member.instanceId} carries tag ${key}`);
      }
      // An instance deleted behind the pool's back is replaced by the cloud.
      const lost = full.instances[0]!.instanceId;
      await c.machines.delete("instance", lost);
      await settled(pool.id, "a replacement ready", (p) => atSize(2)(p) && !p.instances.some((i) => i.instanceId === lost));
    }
  });

  it("refuses sizes beyond its limits as invalid, naming the field, and changes nothing", async (t) => {
    const started = await poolCase(start, t, "pool-limits");
    if (!started) return;
    const { c, pools, made } = started;
    const spec = await poolSpec(c, { minSize: 1, maxSize: 2, desired: 3 });
    const refused = await rejectsWith(pools.create(spec, { token: c.token("too-big"), tags: c.tags }), "invalid", "create a pool above its maximum");
    assert.match(refused.message, /desired/i);
    assert.deepEqual(await pools.findTagged(c.tags), [], "a refused pool leaves nothing");
    const pool = made(await pools.create({ ...spec, desired: 1 }, { token: c.token("pool"), tags: c.tags }));
    const error = await rejectsWith(pools.update(pool.id, { desired: 5 }), "invalid", "raise a pool above its maximum");
    assert.match(error.message, /desired/i);
    assert.equal((await pools.get(pool.id))?.desired, 1, "the refused change changed nothing");
  });

  it("scales in around protected instances and removes exactly the instance named, once", async (t) => {
    const started = await poolCase(start, t, "pool-scale-in");
    if (!started) return;
    const { c, pools, made, settled } = started;
    const pool = made(await pools.create(await poolSpec(c, { minSize: 0, maxSize: 4, desired: 3 }), { token: c.token("pool"), tags: c.tags }));
    const full = await settled(pool.id, "three instances ready", atSize(3));
    const [kept, chosen] = full.instances.map((i) => i.instanceId);

    await pools.removeInstance(pool.id, chosen!, { decrementDesired: true });
    await pools.removeInstance(pool.id, chosen!, { decrementDesired: true });
    const two = await settled(pool.id, "the chosen instance gone", (p) => atSize(2)(p) && !p.instances.some((i) => i.instanceId === chosen));
    assert.equal(two.desired, 2, "removing the same instance twice lowers the size once");
    await pools.removeInstance(pool.id, chosen!, { decrementDesired: true });
    assert.equal((await pools.get(pool.id))?.desired, 2, "nor once it is gone");

    await pools.protect(pool.id, [kept!], true);
    assert.ok((await pools.instances(pool.id)).find((i) => i.instanceId === kept)?.protected);
    await pools.update(pool.id, { desired: 1 });
    const one = await settled(pool.id, "scaled in to one", atSize(1));
    assert.deepEqual(one.instances.map((i) => i.instanceId), [kept], "the protected instance stays");
  });

  it("deletes its instances with it, and a second delete or an unknown pool is a success", async (t) => {
    const started = await poolCase(start, t, "pool-delete");
    if (!started) return;
    const { c, pools, settled } = started;
    const pool = await pools.create(await poolSpec(c, { minSize: 0, maxSize: 2, desired: 1 }), { token: c.token("pool"), tags: c.tags });
    const full = await settled(pool.id, "one instance ready", atSize(1));
    await pools.delete(pool.id);
    await pools.delete(pool.id);
    await c.eventually("the pool to be gone", async () => ((await pools.get(pool.id)) === undefined ? true : undefined));
    if (c.has("machines")) {
      const instance = await c.machines.get("instance", full.instances[0]!.instanceId);
      assert.ok(instance === undefined || instance.state === "gone", `the pool's instance went with it, not ${instance?.state}`);
    }
    assert.deepEqual(await pools.findTagged(c.tags), []);
    await pools.delete(pool.id);
  });
}

/** A pool spec of a provider of hosts: every host of the connection may serve it. */
function hostSetSpec(c: Case, desired: number): PoolSpec {
  return { name: `${c.cluster}-hosts`, machineType: "host", imageId: "host", userData: USER_DATA, placement: { subnetIds: [], securityGroupIds: [] }, hosts: { labels: {} }, minSize: 0, maxSize: desired, desired };
}

/** The rules for a provider of hosts (provider.ts, "A provider of hosts"); skipped for a cloud's scale sets. */
function hostSetConformance(start: CaseStarter): void {
  const hostCase = async (t: Parameters<CaseStarter>[0], label: string) => {
    const c = await start(t, label);
    if (c.has("clusterInfrastructure")) {
      t.skip("a cloud's pools are scale sets");
      return undefined;
    }
    const pools = c.capability("poolInfrastructure");
    const machines = c.capability("machines");
    const held = async () => (await machines.findTagged("instance", c.tagsFor("pool"))).filter((i) => i.state !== "gone");
    return { c, pools, held };
  };

  it("claims hosts all or nothing: beyond the free hosts it is capacity, naming how many are free, and nothing is claimed", async (t) => {
    const started = await hostCase(t, "host-set-capacity");
    if (!started) return;
    const { c, pools, held } = started;
    const free = (await c.capability("machines").findTagged("instance", {})).length;
    const error = await rejectsWith(pools.create(hostSetSpec(c, 1000), { token: c.token("host-set"), tags: c.tagsFor("pool") }), "capacity", "a pool of more hosts than are free");
    assert.match(error.message, /\d+ more free host/, "it names how many are free");
    assert.deepEqual(await held(), [], "no host is claimed");
    assert.equal((await c.capability("machines").findTagged("instance", {})).length, free, "nothing else is claimed either");
  });

  it("holds its hosts tagged, removes exactly the host named and releases it, and delete releases the rest", async (t) => {
    const started = await hostCase(t, "host-set");
    if (!started) return;
    const { c, pools, held } = started;
    const pool = await pools.create(hostSetSpec(c, 2), { token: c.token("host-set"), tags: c.tagsFor("pool") });
    c.onTeardown(async () => {
      await pools.delete(pool.id);
      await c.eventually(`hosts of ${pool.id} to be released`, async () => ((await held()).length === 0 ? true : undefined));
    });
    assert.equal((await pools.create(hostSetSpec(c, 2), { token: c.token("host-set"), tags: c.tagsFor("pool") })).id, pool.id, "the same token, the same pool");
    const ready = await c.eventually("both hosts bootstrapped", async () => {
      const p = await pools.get(pool.id);
      return p && p.readyReplicas === 2 ? p : undefined;
    });
    assert.equal((await held()).length, 2, "its hosts carry its tags");
    const [first, second] = ready.instances;
    await pools.removeInstance(pool.id, first!.instanceId, { decrementDesired: true });
    await pools.removeInstance(pool.id, first!.instanceId, { decrementDesired: true });
    await c.eventually(`host ${first!.instanceId} to be released`, async () => ((await held()).every((i) => i.id !== first!.instanceId) ? true : undefined));
    const after = (await pools.get(pool.id))!;
    assert.equal(after.desired, 1, "lowered once");
    assert.deepEqual(after.instances.map((i) => i.instanceId), [second!.instanceId], "exactly the host named left");
    await pools.delete(pool.id);
    await c.eventually("every host released", async () => ((await held()).length === 0 ? true : undefined));
  });
}
