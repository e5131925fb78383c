import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startEtcd } from "../../test/support/etcd.ts";
import { EtcdStore } from "../store/etcd.ts";
import { LeaseTimeoutError, type Leases } from "../store/leases.ts";
import { ShardLeases } from "./shard-leases.ts";
import { SHARD_COUNT, ShardSet, shardOwner } from "./shards.ts";
import { silentLogger, until } from "./testing.ts";

const etcd = await startEtcd();
const stores: EtcdStore[] = [];
after(async () => {
  for (const store of stores) await store.close();
  await etcd.stop();
});

let prefixes = 0;

interface Replica {
  name: string;
  shards: ShardSet;
  coordinator: ShardLeases;
}

async function replica(name: string, prefix: string, ttlSeconds = 2): Promise<Replica> {
  const store = await EtcdStore.connect(etcd.endpoints, { requestTimeoutMs: 2000 });
  stores.push(store);
  const shards = new ShardSet();
  const coordinator = new ShardLeases({ store, leases: store.leases(), replica: name, shards, log: silentLogger, ttlSeconds, prefix });
  await coordinator.start();
  return { name, shards, coordinator };
}

/** A replica whose lease renewals can be made to fail, as when it is cut off from etcd. */
async function flakyReplica(name: string, prefix: string, ttlSeconds: number): Promise<{ replica: Replica; failRenewals: boolean }> {
  const store = await EtcdStore.connect(etcd.endpoints, { requestTimeoutMs: 2000 });
  stores.push(store);
  const real = store.leases();
  const control = { replica: undefined as unknown as Replica, failRenewals: false };
  const leases: Leases = {
    grant: (ttl) => real.grant(ttl),
    keepAlive: async (lease, timeoutMs) => {
      if (control.failRenewals) throw new LeaseTimeoutError(lease, timeoutMs);
      return real.keepAlive(lease, timeoutMs);
    },
    revoke: (lease) => real.revoke(lease),
    put: (key, value, lease) => real.put(key, value, lease),
    claim: (key, value, lease) => real.claim(key, value, lease),
    release: (key, lease) => real.release(key, lease),
  };
  const shards = new ShardSet();
  const coordinator = new ShardLeases({ store, leases, replica: name, shards, log: silentLogger, ttlSeconds, prefix });
  await coordinator.start();
  control.replica = { name, shards, coordinator };
  return control;
}

function expected(replicas: Replica[], name: string): number[] {
  const members = replicas.map((r) => r.name).sort();
  return Array.from({ length: SHARD_COUNT }, (_, s) => s).filter((s) => shardOwner(s, members) === name);
}

/** Watches that no shard is ever active on two replicas at once; returns a stop function with the count. */
function overlapWatch(replicas: () => Replica[]): () => number {
  let overlaps = 0;
  const timer = setInterval(() => {
    const seen = new Set<number>();
    for (const r of replicas()) {
      for (const s of r.shards.activeShards()) {
        if (seen.has(s)) overlaps++;
        seen.add(s);
      }
    }
  }, 1);
  return () => {
    clearInterval(timer);
    return overlaps;
  };
}

describe("ShardLeases", () => {
  it("splits the shards between replicas, one holder each, and rebalances when a replica joins", async () => {
    const prefix = `/coordination-test-${++prefixes}/`;
    const replicas: Replica[] = [];
    const stopWatch = overlapWatch(() => replicas);
    replicas.push(await replica("r1", prefix));
    assert.equal(replicas[0]!.shards.activeShards().length, SHARD_COUNT, "a lone replica holds every shard");
    replicas.push(await replica("r2", prefix));
    replicas.push(await replica("r3", prefix));
    await until(
      () => replicas.every((r) => JSON.stringify(r.shards.activeShards()) === JSON.stringify(expected(replicas, r.name))),
      "the shards to settle on three replicas",
      10_000,
    );
    assert.equal(stopWatch(), 0, "a shard was worked on by two replicas at once");
    for (const r of replicas) await r.coordinator.stop(100);
  });

  it("hands a stopping replica's shards over at once", async () => {
    const prefix = `/coordination-test-${++prefixes}/`;
    // Leases long enough that a takeover by expiry is told apart from a handover even on a starved machine.
    const ttlSeconds = 10;
    const replicas = [await replica("r1", prefix, ttlSeconds), await replica("r2", prefix, ttlSeconds)];
    await until(() => replicas.every((r) => r.shards.activeShards().length === expected(replicas, r.name).length), "two replicas to settle", 10_000);
    const stopWatch = overlapWatch(() => replicas);
    const started = performance.now();
    await replicas[1]!.coordinator.stop(100);
    await until(() => replicas[0]!.shards.activeShards().length === SHARD_COUNT, "r1 to take every shard", ttlSeconds * 1000);
    const takeover = performance.now() - started;
    assert.ok(takeover < (ttlSeconds * 1000) / 2, `takeover took ${Math.round(takeover)} ms: r2's shards waited for its lease to expire instead of being handed over`);
    assert.equal(stopWatch(), 0);
    await replicas[0]!.coordinator.stop(100);
  });

  it("stops work before its lease can expire when renewals fail, so the replica taking over never overlaps", async () => {
    const prefix = `/coordination-test-${++prefixes}/`;
    const ttlSeconds = 2;
    const flaky = await flakyReplica("r1", prefix, ttlSeconds);
    const replicas: Replica[] = [flaky.replica, await replica("r2", prefix, ttlSeconds)];
    await until(() => replicas.every((r) => r.shards.activeShards().length === expected(replicas, r.name).length), "two replicas to settle", 10_000);
    const r1Shards = flaky.replica.shards.activeShards();
    const stopWatch = overlapWatch(() => replicas);

    assert.equal(flaky.replica.coordinator.unready(), undefined, "r1 is ready while its lease is renewed");
    const cut = performance.now();
    flaky.failRenewals = true;
    await until(() => flaky.replica.shards.activeShards().length === 0, "r1 to stop work", 5000);
    assert.equal(flaky.replica.coordinator.unready(), "the shard lease was not renewed in time: work on every shard is stopped", "/readyz says why");
    const stoppedAfter = performance.now() - cut;
    assert.ok(stoppedAfter < ttlSeconds * 1000, `r1 worked on for ${Math.round(stoppedAfter)} ms without a lease`);
    // r1's lease expires in etcd; r2 takes its shards.
    await until(() => r1Shards.every((s) => replicas[1]!.shards.isActive(s)), "r2 to take r1's shards", 10_000);
    const takenAfter = performance.now() - cut;
    assert.ok(takenAfter < 2 * ttlSeconds * 1000, `takeover took ${Math.round(takenAfter)} ms`);

    // r1 can renew again: its lease is gone, so it registers anew and gets its share back.
    flaky.failRenewals = false;
    await until(() => replicas.every((r) => r.shards.activeShards().length === expected(replicas, r.name).length), "r1 to rejoin", 10_000);
    assert.equal(flaky.replica.coordinator.unready(), undefined, "ready again");
    assert.equal(stopWatch(), 0, "a shard was worked on by two replicas at once");
    for (const r of replicas) await r.coordinator.stop(100);
  });
});
