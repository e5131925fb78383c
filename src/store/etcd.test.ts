import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { etcdRequests, startEtcd } from "../../test/support/etcd.ts";
import { recordWatch, runStoreConformance } from "./conformance.ts";
import { EtcdStore, RecentValues } from "./etcd.ts";
import { CompactedError, KeyExistsError, KeyNotFoundError, RevisionMismatchError, StoreClosedError, type KeyValue } from "./store.ts";

const etcd = await startEtcd();
after(() => etcd.stop());

runStoreConformance("etcd", () => EtcdStore.connect(etcd.endpoints));
runStoreConformance("etcd (with a key prefix)", () => EtcdStore.connect(etcd.endpoints, { prefix: "/slipway-test" }));

describe("EtcdStore", () => {
  it("keeps stores with different key prefixes apart on one cluster", async () => {
    const a = await EtcdStore.connect(etcd.endpoints, { prefix: "/tenant-a" });
    const b = await EtcdStore.connect(etcd.endpoints, { prefix: "/tenant-b" });
    try {
      const seenByB = recordWatch(b, "", await b.revision());
      await a.create("/shared/name", "from a");
      assert.equal(await b.get("/shared/name"), undefined);
      assert.deepEqual(
        (await a.list("")).items.map((kv) => [kv.key, kv.value]),
        [["/shared/name", "from a"]],
      );
      assert.equal((await b.list("")).items.length, 0);
      const unprefixed = await EtcdStore.connect(etcd.endpoints);
      try {
        const everything = await unprefixed.list("");
        assert.ok(everything.items.some((kv) => kv.key === "/tenant-a/shared/name" && kv.value === "from a"));
        assert.equal(await unprefixed.count("/tenant-a/"), 1);
      } finally {
        await unprefixed.close();
      }
      const own = await b.create("/shared/name", "from b");
      await seenByB.until(() => seenByB.events.length >= 1, "b's own write");
      assert.deepEqual(seenByB.events, [{ type: "put", kv: own }]);
      seenByB.close();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("lists a range larger than one gRPC message and than one page, whole and at one revision", async () => {
    const store = await EtcdStore.connect(etcd.endpoints, { prefix: "/big-list" });
    try {
      // 2,500 keys of 2 kB: 5 MB, more than gRPC's default 4 MiB a message and than 1,000 keys a page.
      const value = "x".repeat(2_000);
      for (let start = 0; start < 2_500; start += 250) {
        await Promise.all(Array.from({ length: 250 }, (_, i) => store.create(`/events/e-${String(start + i).padStart(5, "0")}`, value)));
      }
      const before = await store.revision();
      const listed = await store.list("/events/");
      assert.equal(listed.items.length, 2_500);
      assert.equal(listed.more, false);
      assert.equal(listed.revision, before);
      assert.deepEqual(listed.items.slice(998, 1_002).map((kv) => kv.key), ["/events/e-00998", "/events/e-00999", "/events/e-01000", "/events/e-01001"]);
      // A list at a revision is that revision's keys, also across its pages.
      await store.create("/events/e-99999", value);
      assert.equal((await store.list("/events/", { revision: before })).items.length, 2_500);
      assert.equal((await store.list("/events/")).items.length, 2_501);
    } finally {
      await store.close();
    }
  });

  it("learns of a compaction made by another client", async () => {
    const one = await EtcdStore.connect(etcd.endpoints);
    const other = await EtcdStore.connect(etcd.endpoints);
    try {
      const first = await one.create("/learn/a", "1");
      await one.update("/learn/a", "2", first.modRevision);
      const head = await one.revision();
      await one.compact(head);

      // etcd itself cancels this watch: `other` has not heard of the compaction yet.
      const w = recordWatch(other, "/learn/", first.modRevision);
      await w.until(() => w.error !== undefined, "a CompactedError");
      assert.ok(w.error instanceof CompactedError, `expected CompactedError, got ${String(w.error)}`);
      assert.equal(w.error.compacted, head);

      const third = await EtcdStore.connect(etcd.endpoints);
      try {
        assert.equal(await third.compactedRevision(), head);
        const error = await third.list("/learn/", { revision: first.modRevision }).catch((e: unknown) => e);
        assert.ok(error instanceof CompactedError);
        assert.equal(error.compacted, head);
      } finally {
        await third.close();
      }
    } finally {
      await one.close();
      await other.close();
    }
  });
});

describe("EtcdStore reads that may lag", () => {
  it("answers from what it last wrote; a write from a stale copy is refused with the current value and changes nothing", async () => {
    const one = await EtcdStore.connect(etcd.endpoints);
    const other = await EtcdStore.connect(etcd.endpoints);
    try {
      const created = await one.create("/lag/a", "1");
      const mine = await one.update("/lag/a", "2", created.modRevision);
      const theirs = await other.update("/lag/a", "3", mine.modRevision);
      const stale = await one.get("/lag/a", { mayLag: true });
      assert.deepEqual(stale, mine, "the copy one wrote last, though other changed it since");
      assert.deepEqual(await one.get("/lag/a"), theirs, "a read without mayLag sees the latest write");

      const refused = await one.update("/lag/a", "4", stale!.modRevision).catch((e: unknown) => e);
      assert.ok(refused instanceof RevisionMismatchError, `expected a refusal, got ${String(refused)}`);
      assert.deepEqual(refused.current, theirs);
      assert.deepEqual(await other.get("/lag/a"), theirs, "nothing changed");
      assert.deepEqual(await one.get("/lag/a", { mayLag: true }), theirs, "the refusal's current value replaces the stale copy");

      await other.delete("/lag/a");
      assert.ok((await one.update("/lag/a", "5", theirs.modRevision).catch((e: unknown) => e)) instanceof KeyNotFoundError);
      assert.equal(await one.get("/lag/a", { mayLag: true }), undefined);
    } finally {
      await one.close();
      await other.close();
    }
  });

  it("answers an update with the key's create revision, whether or not it held the value written over", async () => {
    const holding = await EtcdStore.connect(etcd.endpoints);
    const holdingNone = await EtcdStore.connect(etcd.endpoints, { recentValueBytes: 0 });
    try {
      const created = await holding.create("/lag-create/a", "1");
      const again = await holding.update("/lag-create/a", "2", created.modRevision);
      assert.equal(again.createRevision, created.createRevision);
      const other = await holdingNone.update("/lag-create/a", "3", again.modRevision);
      assert.equal(other.createRevision, created.createRevision);
      // Gone and made again by another client: the copy held is of the old key, and is refused.
      await holdingNone.delete("/lag-create/a");
      const remade = await holdingNone.create("/lag-create/a", "4");
      const refused = await holding.update("/lag-create/a", "5", again.modRevision).catch((e: unknown) => e);
      assert.ok(refused instanceof RevisionMismatchError);
      assert.deepEqual(refused.current, remade);
      const last = await holding.update("/lag-create/a", "6", remade.modRevision);
      assert.equal(last.createRevision, remade.createRevision);
      assert.deepEqual(await holdingNone.get("/lag-create/a"), last);
    } finally {
      await holding.close();
      await holdingNone.close();
    }
  });

  it("keeps the values it watches current", async () => {
    const one = await EtcdStore.connect(etcd.endpoints);
    const other = await EtcdStore.connect(etcd.endpoints);
    try {
      const created = await one.create("/lag-watched/a", "1");
      const w = recordWatch(one, "/lag-watched/", created.modRevision);
      const theirs = await other.update("/lag-watched/a", "2", created.modRevision);
      await w.until(() => w.events.length >= 1, "the change");
      assert.deepEqual(await one.get("/lag-watched/a", { mayLag: true }), theirs);
      w.close();
    } finally {
      await one.close();
      await other.close();
    }
  });

  it("keeps recent values within its byte budget, least recently used out first, never an older over a newer", () => {
    const recent = new RecentValues(3 * (2 * 12 + 64));
    const kv = (key: string, value: string, modRevision: number): KeyValue => ({ key, value, createRevision: 1, modRevision });
    recent.put(kv("/k/aa", "1111", 2));
    recent.put(kv("/k/bb", "2222", 3));
    recent.put(kv("/k/cc", "3333", 4));
    recent.get("/k/aa");
    recent.put(kv("/k/dd", "4444", 5));
    assert.equal(recent.get("/k/bb"), undefined, "the least recently used went");
    assert.equal(recent.size, 3);
    recent.put(kv("/k/aa", "0000", 1));
    assert.equal(recent.get("/k/aa")?.value, "1111", "an older value does not replace a newer one");
    recent.changed(kv("/k/zz", "9999", 9));
    assert.equal(recent.get("/k/zz"), undefined, "a watched change adds no key");
    recent.deleted("/k/aa", 2);
    assert.equal(recent.get("/k/aa")?.value, "1111", "a deletion before the value held leaves it");
    recent.deleted("/k/aa", 6);
    assert.equal(recent.get("/k/aa"), undefined);
  });

  it("keeps the values used again through any number of values written once", () => {
    const size = 2 * (9 + 4) + 64; // keys of 9 characters, values of 4
    const recent = new RecentValues(10 * size);
    const kv = (key: string, modRevision: number): KeyValue => ({ key, value: "1111", createRevision: 1, modRevision });
    let revision = 1;
    // Objects written and then read and written again (a controller's status writes), among a stream of
    // Events written once: with a plain least-recently-used order the Events would push them all out.
    const hot = ["/k/o-0001", "/k/o-0002", "/k/o-0003", "/k/o-0004"];
    for (const key of hot) recent.put(kv(key, revision++));
    for (const key of hot) recent.put(kv(key, revision++));
    for (let i = 0; i < 1_000; i++) recent.put(kv(`/k/e-${String(i).padStart(4, "0")}`, revision++));
    for (const key of hot) assert.equal(recent.get(key)?.key, key, `${key} kept`);
    assert.equal(recent.size, 10);
    assert.equal(recent.get("/k/e-0000"), undefined, "an Event written once long ago is gone");
    assert.ok(recent.get("/k/e-0999"), "the latest Event is held");
    // A watched change of a key on probation leaves it there; a new key never enters through a watch.
    recent.changed(kv("/k/e-0998", revision++));
    recent.changed(kv("/k/n-0001", revision++));
    assert.equal(recent.peek("/k/n-0001"), undefined);
    // The protected keys are at most 80 % of the budget: eight of ten.
    for (let i = 0; i < 20; i++) {
      recent.put(kv(`/k/p-${String(i).padStart(4, "0")}`, revision++));
      recent.get(`/k/p-${String(i).padStart(4, "0")}`);
    }
    assert.equal(recent.size, 10);
    assert.equal(recent.get("/k/p-0019")?.key, "/k/p-0019");
    assert.equal(recent.get("/k/o-0001"), undefined, "the least recently used of the kept went back on probation, and out");
  });
});

describe("EtcdStore reads of the latest write", () => {
  it("sends the reads asked for together as one request, each answered with its own key's latest write", async () => {
    const one = await EtcdStore.connect(etcd.endpoints, { prefix: "/together" });
    const other = await EtcdStore.connect(etcd.endpoints, { prefix: "/together" });
    try {
      const written = await Promise.all(Array.from({ length: 300 }, (_, i) => one.create(`/k/${String(i).padStart(3, "0")}`, `v${i}`)));
      // Changed by another client since: each read must see that write, not what `one` holds.
      const changed = await other.update("/k/007", "changed", written[7]!.modRevision);
      const start = await etcdRequests(etcd);
      const read = await Promise.all([...written.map((kv) => one.get(kv.key)), one.get("/k/missing")]);
      const end = await etcdRequests(etcd);
      assert.deepEqual(read.slice(0, 300), written.map((kv, i) => (i === 7 ? changed : kv)));
      assert.equal(read[300], undefined);
      // 301 reads: three transactions of at most 128 reads (etcd's limit a transaction), no range.
      assert.deepEqual({ Range: (end.Range ?? 0) - (start.Range ?? 0), Txn: (end.Txn ?? 0) - (start.Txn ?? 0) }, { Range: 0, Txn: 3 });
      // A read after a write sees the write.
      const again = await other.update("/k/008", "again", written[8]!.modRevision);
      assert.deepEqual(await one.get("/k/008"), again);
    } finally {
      await one.close();
      await other.close();
    }
    const closed = await EtcdStore.connect(etcd.endpoints);
    await closed.close();
    await assert.rejects(closed.get("/k/000"), StoreClosedError);
  });
});

describe("EtcdStore on a three-member cluster", () => {
  it("keeps every write and the watch when the leader is killed", { timeout: 40_000 }, async () => {
    const cluster = await startEtcd({ members: 3 });
    const store = await EtcdStore.connect(cluster.endpoints, { requestTimeoutMs: 3_000 });
    try {
      const start = await store.revision();
      const w = recordWatch(store, "/ha/", start, 20_000);
      const before: KeyValue[] = [];
      for (let i = 0; i < 5; i++) before.push(await store.create(`/ha/before-${i}`, `b${i}`));

      const leader = await cluster.leader();
      await cluster.kill(leader);
      const next = await cluster.leader();
      assert.notEqual(next, leader);

      const afterKill: KeyValue[] = [];
      for (let i = 0; i < 5; i++) afterKill.push(await createDespiteFailover(store, `/ha/after-${i}`, `a${i}`));

      const listed = await store.list("/ha/");
      assert.deepEqual(
        listed.items.map((kv) => kv.value),
        ["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"],
      );
      const revisions = [...before, ...afterKill].map((kv) => kv.modRevision);
      assert.deepEqual(
        revisions,
        [...revisions].sort((x, y) => x - y),
        "revisions keep rising across the failover",
      );

      const last = afterKill[afterKill.length - 1]?.modRevision ?? 0;
      await w.until(() => w.events.some((e) => e.type === "put" && e.kv.modRevision === last), "the last write");
      assert.deepEqual(
        w.events.map((e) => (e.type === "put" ? e.kv.value : "delete")),
        ["b0", "b1", "b2", "b3", "b4", "a0", "a1", "a2", "a3", "a4"],
        "the watch saw every write once, in order",
      );
      w.close();

      // The killed member comes back and catches up.
      await cluster.restart(leader);
      const member = cluster.members.find((m) => m.name === leader);
      assert.ok(member);
      const direct = await EtcdStore.connect([member.clientUrl]);
      try {
        assert.deepEqual((await direct.list("/ha/")).items, listed.items);
      } finally {
        await direct.close();
      }
    } finally {
      await store.close();
      await cluster.stop();
    }
  });
});

/**
 * A write sent while the cluster elects a leader may fail although it was applied; retrying a create
 * then finds the key already made, with our value.
 */
async function createDespiteFailover(store: EtcdStore, key: string, value: string): Promise<KeyValue> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      return await store.create(key, value);
    } catch (error) {
      if (error instanceof KeyExistsError) {
        const existing = await store.get(key);
        if (existing?.value === value) return existing;
        throw error;
      }
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
