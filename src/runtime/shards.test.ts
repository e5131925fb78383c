import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ProcessShards, SHARD_COUNT, ShardLostError, ShardSet, shardOf, shardOwner, stableHash } from "./shards.ts";

function assignment(members: string[]): Map<number, string> {
  const owners = new Map<number, string>();
  for (let shard = 0; shard < SHARD_COUNT; shard++) owners.set(shard, shardOwner(shard, members)!);
  return owners;
}

describe("shard assignment", () => {
  it("maps a key to the same shard in every process, spreading keys over all shards", () => {
    assert.equal(shardOf("default/demo"), shardOf("default/demo"));
    // Pinned: a change of hash would move every key to another replica during an upgrade.
    assert.equal(stableHash("default/demo"), 0x014c485f);
    assert.equal(shardOf("default/demo"), 31);
    const counts = new Array<number>(SHARD_COUNT).fill(0);
    for (let i = 0; i < 3200; i++) counts[shardOf(`team-${i % 7}/cluster-${i}`)]!++;
    assert.ok(Math.min(...counts) > 50 && Math.max(...counts) < 150, `uneven spread: ${counts.join(",")}`);
  });

  it("gives every shard to exactly one member, whatever order the members are listed in", () => {
    const a = assignment(["r1", "r2", "r3"]);
    const b = assignment(["r3", "r1", "r2"]);
    assert.deepEqual([...a], [...b]);
    const perMember = new Map<string, number>();
    for (const owner of a.values()) perMember.set(owner, (perMember.get(owner) ?? 0) + 1);
    assert.deepEqual([...perMember.keys()].sort(), ["r1", "r2", "r3"]);
    for (const count of perMember.values()) assert.ok(count >= 5, `a member got only ${count} shards`);
  });

  it("moves only the shards of a member that leaves, and only shards to a member that joins", () => {
    const three = assignment(["r1", "r2", "r3"]);
    const two = assignment(["r1", "r3"]);
    for (const [shard, owner] of three) if (owner !== "r2") assert.equal(two.get(shard), owner, `shard ${shard} moved needlessly`);
    const four = assignment(["r1", "r2", "r3", "r4"]);
    for (const [shard, owner] of four) if (owner !== "r4") assert.equal(three.get(shard), owner, `shard ${shard} moved needlessly`);
  });
});

describe("ShardSet", () => {
  it("starts work only on active shards and tells listeners which shards became active", () => {
    const set = new ShardSet(4);
    const activated: number[][] = [];
    set.onActivated((shards) => activated.push(shards));
    assert.equal(set.begin(1), undefined);
    set.activate([1, 2]);
    set.activate([2]);
    assert.deepEqual(activated, [[1, 2]]);
    assert.deepEqual(set.activeShards(), [1, 2]);
    const ticket = set.begin(1);
    assert.ok(ticket);
    assert.equal(ticket.signal.aborted, false);
    ticket.end();
  });

  it("lets work in flight finish when a shard is handed over, and aborts what outlives the drain", async () => {
    const set = new ShardSet(4);
    set.activate([0, 1]);
    const quick = set.begin(0)!;
    const slow = set.begin(1)!;
    let handedOver = false;
    const handover = set.deactivate([0], 5_000).then(() => (handedOver = true));
    assert.equal(set.begin(0), undefined, "no new work on a shard being handed over");
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(handedOver, false, "the handover waits for work in flight");
    quick.end();
    await handover;
    assert.equal(quick.signal.aborted, true);

    const started = Date.now();
    await set.deactivate([1], 20);
    assert.ok(Date.now() - started < 1000);
    assert.ok(slow.signal.reason instanceof ShardLostError, "work that outlived the drain was aborted");
  });

  it("aborts work at once when shards are revoked, and a new activation starts with a fresh signal", () => {
    const set = new ShardSet(2);
    set.activate([0]);
    const ticket = set.begin(0)!;
    set.revoke([0]);
    assert.equal(ticket.signal.aborted, true);
    assert.equal(set.isActive(0), false);
    set.activate([0]);
    assert.equal(set.begin(0)!.signal.aborted, false);
  });

  it("holds every shard in the single-process mode and gives them back on stop", async () => {
    const set = new ShardSet();
    const coordinator = new ProcessShards(set);
    await coordinator.start();
    assert.equal(set.activeShards().length, SHARD_COUNT);
    await coordinator.stop(10);
    assert.equal(set.activeShards().length, 0);
  });
});
