import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeEvent, recordWatch, runStoreConformance } from "./conformance.ts";
import { SqliteStore, StoreInUseError } from "./sqlite.ts";
import { CompactedError, type WatchEvent } from "./store.ts";

const dir = mkdtempSync(join(tmpdir(), "slipway-sqlite-store-"));
let files = 0;
const freshFile = (): string => join(dir, `store-${++files}.db`);
after(() => rmSync(dir, { recursive: true, force: true }));

runStoreConformance("sqlite (file)", async () => SqliteStore.open(freshFile()));
runStoreConformance("sqlite (memory)", async () => SqliteStore.open(":memory:"));

function revisionOf(event: WatchEvent): number {
  return event.type === "put" ? event.kv.modRevision : event.revision;
}

describe("SqliteStore", () => {
  it("keeps revisions, values and compaction across a restart, and a watch resumes", async () => {
    const file = freshFile();
    const first = SqliteStore.open(file);
    assert.equal(await first.revision(), 1);
    const a = await first.create("/r/a", "a1");
    const b = await first.create("/r/b", "b1");
    const a2 = await first.update("/r/a", "a2", a.modRevision);
    await first.compact(a2.modRevision);
    const c = await first.create("/r/c", "c1");
    const seenBeforeRestart = await first.revision();
    await first.delete("/r/b", b.modRevision);
    const before = await first.list("/r/");
    assert.ok(existsSync(`${file}-wal`), "the store runs in WAL mode");
    await first.close();

    const second = SqliteStore.open(file);
    try {
      assert.equal(await second.revision(), before.revision);
      assert.equal(await second.compactedRevision(), a2.modRevision);
      assert.deepEqual(await second.list("/r/"), before);
      assert.deepEqual(await second.get("/r/a"), a2);
      assert.deepEqual(await second.get("/r/c"), c);
      assert.deepEqual(
        (await second.list("/r/", { revision: a2.modRevision })).items.map((kv) => kv.value),
        ["a2", "b1"],
      );

      // A client that saw the store up to `seenBeforeRestart` resumes from there.
      const w = recordWatch(second, "/r/", seenBeforeRestart);
      const d = await second.create("/r/d", "d1");
      assert.equal(d.modRevision, before.revision + 1);
      await w.until(() => w.events.length >= 2, "the missed delete and the new create");
      assert.deepEqual(w.events.map(describeEvent), [`delete /r/b@${before.revision}`, `put /r/d@${d.modRevision}`]);
      w.close();
    } finally {
      await second.close();
    }
  });

  it("counts what a continued page leaves from what the previous page left, without walking the range again", async () => {
    const store = SqliteStore.open(":memory:");
    for (const n of ["1", "2", "3", "4", "5", "6"]) await store.create(`/k/${n}`, n);
    const first = await store.list("/k/", { limit: 2 });
    await store.create("/k/9", "later");
    assert.equal(first.remaining, 4);
    const counted = await store.list("/k/", { limit: 2, continueAfter: "/k/2", revision: first.revision });
    assert.equal(counted.remaining, 2, "counted at the first page's revision");
    // The previous page's count is taken as it is (a hint from the list's continue token), not checked.
    const told = await store.list("/k/", { limit: 2, continueAfter: "/k/2", revision: first.revision, remainingAfter: 40 });
    assert.deepEqual([told.items.map((kv) => kv.key), told.remaining], [["/k/3", "/k/4"], 38]);
    const last = await store.list("/k/", { limit: 2, continueAfter: "/k/4", revision: first.revision, remainingAfter: 2 });
    assert.deepEqual([last.more, last.remaining], [false, undefined]);
    await store.close();
  });

  it("refuses to open a file another store is using", async () => {
    const file = freshFile();
    const first = SqliteStore.open(file);
    try {
      assert.throws(() => SqliteStore.open(file, { busyTimeoutMs: 50 }), StoreInUseError);
      await first.create("/still/works", "yes");
    } finally {
      await first.close();
    }
    const second = SqliteStore.open(file);
    assert.equal((await second.get("/still/works"))?.value, "yes");
    await second.close();
  });

  it("keeps the revision when compaction removed the newest history row", async () => {
    const file = freshFile();
    const first = SqliteStore.open(file);
    const k = await first.create("/t/k", "v");
    const deleted = await first.delete("/t/k", k.modRevision);
    await first.compact(deleted.modRevision);
    await first.close();

    const second = SqliteStore.open(file);
    try {
      assert.equal(await second.revision(), deleted.modRevision);
      assert.equal((await second.create("/t/k", "again")).modRevision, deleted.modRevision + 1);
    } finally {
      await second.close();
    }
  });

  it("compaction forgets superseded history but keeps every current value", async () => {
    const store = SqliteStore.open(":memory:");
    try {
      for (let i = 0; i < 50; i++) await store.create(`/c/${i}`, "0");
      for (let round = 1; round <= 5; round++) {
        for (let i = 0; i < 50; i += 2) {
          const current = await store.get(`/c/${i}`);
          await store.update(`/c/${i}`, String(round), current?.modRevision ?? 0);
        }
      }
      for (let i = 1; i < 50; i += 10) await store.delete(`/c/${i}`);
      const before = await store.list("/c/");
      const head = await store.revision();
      await store.compact(head);
      assert.deepEqual(await store.list("/c/"), before);
      assert.deepEqual(await store.list("/c/", { revision: head }), before);
      const internal = store as unknown as { db: { prepare(sql: string): { pluck(): { get(): number } } } };
      const rows = internal.db.prepare("SELECT count(*) FROM log").pluck().get();
      assert.equal(rows, before.items.length, "one history row per live key remains");
    } finally {
      await store.close();
    }
  });

  it("a compaction deletes what the writes before it retired: before a restart, between compactions, and since", async () => {
    const file = freshFile();
    const bump = async (store: SqliteStore, key: string, value: string) => store.update(key, value, (await store.get(key))!.modRevision);
    const logRows = (store: SqliteStore) => (store as unknown as { db: { prepare(sql: string): { pluck(): { get(): number } } } }).db.prepare("SELECT count(*) FROM log").pluck().get();
    const first = SqliteStore.open(file);
    for (let i = 0; i < 20; i++) await first.create(`/r/${i}`, "0");
    for (let i = 0; i < 20; i++) await bump(first, `/r/${i}`, "1");
    await first.close();

    const store = SqliteStore.open(file);
    try {
      const opened = await store.revision();
      for (let i = 0; i < 10; i++) await bump(store, `/r/${i}`, "2");
      await store.compact(opened);
      assert.equal(logRows(store), 30, "rows retired before the restart are gone; the values at the compaction revision stay");
      for (let i = 10; i < 20; i++) await bump(store, `/r/${i}`, "2");
      for (let i = 0; i < 5; i++) await store.delete(`/r/${i}`);
      const head = await store.revision();
      const live = await store.list("/r/");
      await store.compact(head);
      assert.equal(logRows(store), 15, "one history row per live key remains");
      assert.deepEqual(await store.list("/r/"), live);
      assert.deepEqual((await store.list("/r/", { revision: head })).items, live.items);
    } finally {
      await store.close();
    }
  });

  it("never runs watch consumers inside a write, so writers do not wait for them", async () => {
    const store = SqliteStore.open(":memory:");
    try {
      const w = recordWatch(store, "/w/", await store.revision());
      for (let i = 0; i < 500; i++) await store.create(`/w/${i}`, String(i));
      assert.equal(w.events.length, 0, "events are buffered, not delivered by the writer");
      await w.until(() => w.events.length === 500, "every buffered event");
      w.close();
    } finally {
      await store.close();
    }
  });

  it("tells how far a watch is in the whole store: the head once live and handed over, not while replaying or holding events", async () => {
    const store = SqliteStore.open(":memory:");
    try {
      const start = await store.revision();
      for (let i = 0; i < 3; i++) await store.create(`/mine/${i}`, "v");
      for (let i = 0; i < 3; i++) await store.create(`/other/${i}`, "v");
      const w = recordWatch(store, "/mine/", start);
      assert.equal(w.progress(), undefined, "its history is not handed over yet");
      await w.until(() => w.events.length === 3, "the history");
      assert.equal(w.progress(), await store.revision(), "past the other prefix's writes");
      await store.create("/other/late", "v");
      assert.equal(w.progress(), await store.revision(), "a write elsewhere moves it at once");
      await store.create("/mine/late", "v");
      assert.equal(w.progress(), undefined, "its own change waits to be handed over");
      await w.until(() => w.events.length === 4, "its own change");
      assert.equal(w.progress(), await store.revision());
      w.close();
      assert.equal(w.progress(), undefined, "a closed watch tells nothing");
    } finally {
      await store.close();
    }
  });

  it("hands over from a long replay to live delivery without a gap or a duplicate", async () => {
    const store = SqliteStore.open(":memory:");
    try {
      const start = await store.revision();
      // More history under the prefix than one window holds: read window by window.
      for (let i = 0; i < 7_500; i++) await store.create(i % 3 === 0 ? `/h/${i}` : `/other/${i}`, String(i));
      const w = recordWatch(store, "/h/", start);
      // Live writes land while the history is still being replayed, window by window.
      for (let i = 0; i < 30; i++) {
        await new Promise((resolve) => setImmediate(resolve));
        await store.create(`/h/live/${i}`, String(i));
      }
      const last = await store.revision();
      await w.until(() => w.events.some((e) => revisionOf(e) === last), "the last live event");
      const expected = [];
      for (let i = 0; i < 7_500; i += 3) expected.push(start + 1 + i);
      for (let rev = start + 7_501; rev <= last; rev++) expected.push(rev);
      assert.deepEqual(w.events.map(revisionOf), expected);
      w.close();
    } finally {
      await store.close();
    }
  });

  it("replays a watch of a few keys among many others' writes: every change of its own, in order, with what it replaced", async () => {
    const store = SqliteStore.open(":memory:");
    try {
      const start = await store.revision();
      const made = await store.create("/c1/nodes/a", "a0");
      for (let i = 0; i < 6_000; i++) {
        await store.create(`/c${2 + (i % 50)}/nodes/n${i}`, String(i));
        if (i === 1_000) await store.update("/c1/nodes/a", "a1", made.modRevision);
        if (i === 3_000) await store.create("/c1/nodes/b", "b0");
        if (i === 5_000) await store.delete("/c1/nodes/b");
      }
      await store.create("/c10/other", "not under /c1/");
      const w = recordWatch(store, "/c1/", start);
      await w.until(() => w.events.length === 4, "the four changes under /c1/");
      await store.create("/c1/nodes/c", "live");
      await w.until(() => w.events.length === 5, "the live one after them");
      assert.deepEqual(w.events.map(describeEvent).map((e) => e.replace(/@\d+$/, "")), ["put /c1/nodes/a", "put /c1/nodes/a", "put /c1/nodes/b", "delete /c1/nodes/b", "put /c1/nodes/c"]);
      const revisions = w.events.map(revisionOf);
      assert.deepEqual([...revisions].sort((x, y) => x - y), revisions, "in revision order");
      const [, updated, , deleted] = w.events;
      assert.equal(updated!.type === "put" && updated!.prev?.value, "a0", "an update carries the value it replaced");
      assert.equal(deleted!.type === "delete" && deleted!.prev.value, "b0", "a deletion carries the value deleted");
      w.close();
    } finally {
      await store.close();
    }
  });

  it("fails a watch that falls behind a compaction while it replays history", async () => {
    const store = SqliteStore.open(":memory:");
    try {
      const start = await store.revision();
      for (let i = 0; i < 5_000; i++) await store.create(`/b/${i}`, String(i));
      const w = recordWatch(store, "/b/", start);
      await store.compact(await store.revision());
      await w.until(() => w.error !== undefined, "a CompactedError");
      assert.ok(w.error instanceof CompactedError);
      assert.ok(w.events.length > 0 && w.events.length < 5_000, `replayed ${w.events.length} events first`);
      assert.deepEqual(
        w.events.map(revisionOf),
        w.events.map((_, i) => start + 1 + i),
        "what was delivered has no gap",
      );
    } finally {
      await store.close();
    }
  });
});
