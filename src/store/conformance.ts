// The one suite every Store implementation must pass (see the contract in store.ts). Each case writes
// under a prefix of its own, so the suite can share one store (and one etcd) between its cases.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  CompactedError,
  FutureRevisionError,
  KeyExistsError,
  KeyNotFoundError,
  RevisionMismatchError,
  StoreClosedError,
  type KeyValue,
  type Store,
  type Watch,
  type WatchEvent,
} from "./store.ts";

export interface StoreConformanceOptions {
  /** How long a case waits for watch events before it fails (default 10 s). */
  waitMs?: number;
}

/** A watch that records what it receives and lets a test wait for a condition on it. */
export interface RecordedWatch {
  events: WatchEvent[];
  error: Error | undefined;
  /** Resolves once `condition` holds; rejects (showing what arrived) after the wait limit. */
  until(condition: () => boolean, what: string): Promise<void>;
  /** The watch's progress (Watch.progress), undefined where the store cannot tell. */
  progress(): number | undefined;
  close(): void;
}

export function recordWatch(store: Store, prefix: string, afterRevision: number, waitMs = 10_000): RecordedWatch {
  const checks = new Set<() => void>();
  const recorded: RecordedWatch = {
    events: [],
    error: undefined,
    until(condition, what) {
      return new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (!condition()) return;
          clearTimeout(timer);
          checks.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          checks.delete(check);
          const seen = recorded.events.map(describeEvent).join(", ");
          const error = recorded.error?.name ?? "none";
          reject(new Error(`timed out waiting for ${what}; received [${seen}], error: ${error}`));
        }, waitMs);
        checks.add(check);
        check();
      });
    },
    progress() {
      return watch.progress?.();
    },
    close() {
      watch.close();
    },
  };
  const watch: Watch = store.watch(prefix, {
    afterRevision,
    onEvent(event) {
      recorded.events.push(event);
      for (const check of [...checks]) check();
    },
    onError(error) {
      recorded.error = error;
      for (const check of [...checks]) check();
    },
  });
  return recorded;
}

export function describeEvent(event: WatchEvent): string {
  return event.type === "put" ? `put ${event.kv.key}@${event.kv.modRevision}` : `delete ${event.key}@${event.revision}`;
}

function eventRevision(event: WatchEvent): number {
  return event.type === "put" ? event.kv.modRevision : event.revision;
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

function keysOf(items: KeyValue[]): string[] {
  return items.map((kv) => kv.key);
}

export function runStoreConformance(
  name: string,
  open: () => Promise<Store>,
  options: StoreConformanceOptions = {},
): void {
  const waitMs = options.waitMs ?? 10_000;
  const caseTimeout = { timeout: waitMs * 3 };

  describe(`Store conformance: ${name}`, () => {
    let store: Store;
    let counter = 0;
    /** A prefix no other case (nor an earlier run on the same store) writes under. */
    const freshPrefix = (): string => `/conformance/${process.pid}-${Date.now().toString(36)}-${++counter}/`;
    const watch = (prefix: string, afterRevision: number): RecordedWatch =>
      recordWatch(store, prefix, afterRevision, waitMs);

    before(async () => {
      store = await open();
    });
    after(async () => {
      await store.close();
    });

    it("rises by exactly one revision per write; reads and refused writes leave it alone", caseTimeout, async () => {
      const p = freshPrefix();
      const start = await store.revision();
      assert.ok(start >= 1, `revision starts at 1 or more, got ${start}`);

      const created = await store.create(`${p}a`, "1");
      assert.equal(created.modRevision, start + 1);
      assert.equal(created.createRevision, start + 1);
      assert.equal(await store.revision(), start + 1);

      await store.get(`${p}a`);
      await store.list(p);
      await store.count(p);
      await assert.rejects(store.create(`${p}a`, "again"), KeyExistsError);
      await assert.rejects(store.update(`${p}a`, "stale", start), RevisionMismatchError);
      assert.equal(await store.revision(), start + 1);

      const updated = await store.update(`${p}a`, "2", created.modRevision);
      assert.equal(updated.modRevision, start + 2);
      const deleted = await store.delete(`${p}a`);
      assert.equal(deleted.modRevision, start + 3);
      assert.equal(await store.revision(), start + 3);
    });

    it("refuses to create a key that exists, and creates it anew after a delete", caseTimeout, async () => {
      const p = freshPrefix();
      const first = await store.create(`${p}k`, "one");
      const error = await store.create(`${p}k`, "two").catch((e: unknown) => e);
      assert.ok(error instanceof KeyExistsError);
      assert.equal(error.key, `${p}k`);
      assert.equal((await store.get(`${p}k`))?.value, "one");

      await store.delete(`${p}k`);
      const again = await store.create(`${p}k`, "three");
      assert.ok(again.createRevision > first.createRevision);
      assert.deepEqual(await store.get(`${p}k`), again);
    });

    it("gets undefined for a missing key", caseTimeout, async () => {
      const p = freshPrefix();
      assert.equal(await store.get(`${p}missing`), undefined);
    });

    it("updates when the expected revision matches, keeping the create revision", caseTimeout, async () => {
      const p = freshPrefix();
      const created = await store.create(`${p}k`, "v1");
      const updated = await store.update(`${p}k`, "v2", created.modRevision);
      assert.equal(updated.value, "v2");
      assert.equal(updated.createRevision, created.createRevision);
      assert.ok(updated.modRevision > created.modRevision);
      assert.deepEqual(await store.get(`${p}k`), updated);
    });

    it("refuses an update with a stale revision and reports the current value", caseTimeout, async () => {
      const p = freshPrefix();
      const created = await store.create(`${p}k`, "v1");
      const updated = await store.update(`${p}k`, "v2", created.modRevision);
      const error = await store.update(`${p}k`, "v3", created.modRevision).catch((e: unknown) => e);
      assert.ok(error instanceof RevisionMismatchError);
      assert.deepEqual(error.current, updated);
      assert.equal((await store.get(`${p}k`))?.value, "v2");
    });

    it("refuses to update a missing key", caseTimeout, async () => {
      const p = freshPrefix();
      const error = await store.update(`${p}missing`, "v", 1).catch((e: unknown) => e);
      assert.ok(error instanceof KeyNotFoundError);
      assert.equal(error.key, `${p}missing`);
    });

    it("deletes with and without an expected revision", caseTimeout, async () => {
      const p = freshPrefix();
      const a = await store.create(`${p}a`, "va");
      const b = await store.create(`${p}b`, "vb");
      const updated = await store.update(`${p}a`, "va2", a.modRevision);

      const stale = await store.delete(`${p}a`, a.modRevision).catch((e: unknown) => e);
      assert.ok(stale instanceof RevisionMismatchError);
      assert.deepEqual(stale.current, updated);
      assert.equal((await store.get(`${p}a`))?.value, "va2");

      const before = await store.revision();
      const deleted = await store.delete(`${p}a`, updated.modRevision);
      assert.equal(deleted.key, `${p}a`);
      assert.equal(deleted.value, "va2");
      assert.equal(deleted.createRevision, a.createRevision);
      assert.equal(deleted.modRevision, before + 1);
      assert.equal(await store.get(`${p}a`), undefined);

      const deletedB = await store.delete(`${p}b`);
      assert.equal(deletedB.value, "vb");
      assert.equal(deletedB.createRevision, b.createRevision);
      assert.equal(await store.get(`${p}b`), undefined);

      await assert.rejects(store.delete(`${p}b`), KeyNotFoundError);
      await assert.rejects(store.delete(`${p}b`, deletedB.modRevision), KeyNotFoundError);
    });

    it("lists the keys under a prefix in byte order", caseTimeout, async () => {
      const p = freshPrefix();
      const names = ["b", "a", "a/b", "A", "é", "z", "😀", "ÿ", "a-"];
      for (const n of names) await store.create(`${p}${n}`, `value of ${n}`);
      const listed = await store.list(p);
      const expected = names.map((n) => `${p}${n}`).sort(byteOrder);
      assert.deepEqual(keysOf(listed.items), expected);
      assert.equal(listed.more, false);
      assert.equal(listed.revision, await store.revision());
      for (const kv of listed.items) assert.equal(kv.value, `value of ${kv.key.slice(p.length)}`);
    });

    it("pages with limit and continueAfter, all pages at the first page's revision", caseTimeout, async () => {
      const p = freshPrefix();
      for (const n of ["1", "2", "3", "4", "5"]) await store.create(`${p}${n}`, n);

      const first = await store.list(p, { limit: 2 });
      assert.deepEqual(keysOf(first.items), [`${p}1`, `${p}2`]);
      assert.equal(first.more, true);
      assert.equal(first.remaining, 3);

      // Writes between pages must not show up in later pages read at the first page's revision.
      await store.create(`${p}35`, "late");
      await store.delete(`${p}4`);

      const second = await store.list(p, { limit: 2, continueAfter: `${p}2`, revision: first.revision });
      assert.deepEqual(keysOf(second.items), [`${p}3`, `${p}4`]);
      assert.equal(second.more, true);
      assert.equal(second.remaining, 1, "counted at the first page's revision");
      assert.equal(second.revision, first.revision);

      const third = await store.list(p, { limit: 2, continueAfter: `${p}4`, revision: first.revision });
      assert.deepEqual(keysOf(third.items), [`${p}5`]);
      assert.equal(third.more, false);
      assert.equal(third.remaining, undefined);

      const exact = await store.list(p, { limit: 5 });
      assert.deepEqual(keysOf(exact.items), [`${p}1`, `${p}2`, `${p}3`, `${p}35`, `${p}5`]);
      assert.equal(exact.more, false);
      const all = await store.list(p, { limit: 0, continueAfter: `${p}3` });
      assert.deepEqual(keysOf(all.items), [`${p}35`, `${p}5`]);
    });

    it("lists at an older revision with the values of then and without later keys", caseTimeout, async () => {
      const p = freshPrefix();
      const a = await store.create(`${p}a`, "a1");
      await store.create(`${p}b`, "b1");
      const then = await store.revision();
      await store.update(`${p}a`, "a2", a.modRevision);
      await store.create(`${p}c`, "c1");
      await store.delete(`${p}b`);

      const old = await store.list(p, { revision: then });
      assert.equal(old.revision, then);
      assert.deepEqual(
        old.items.map((kv) => [kv.key, kv.value]),
        [
          [`${p}a`, "a1"],
          [`${p}b`, "b1"],
        ],
      );
      assert.equal(old.items[0]?.modRevision, a.modRevision);

      const now = await store.list(p);
      assert.deepEqual(
        now.items.map((kv) => [kv.key, kv.value]),
        [
          [`${p}a`, "a2"],
          [`${p}c`, "c1"],
        ],
      );
      await assert.rejects(store.list(p, { revision: (await store.revision()) + 1000 }), FutureRevisionError);
    });

    it("lists sparsely what it lists, with the values wanted (or all), at the head, a past revision and in pages", caseTimeout, async (t) => {
      if (!store.listSparse) {
        t.skip("this store reads every value: it has no sparse list");
        return;
      }
      const p = freshPrefix();
      const a = await store.create(`${p}a`, "a1");
      for (const n of ["b", "c", "e", "f", "g", "h", "i"]) await store.create(`${p}${n}`, `${n}1`);
      const then = await store.revision();
      await store.update(`${p}a`, "a2", a.modRevision);
      await store.delete(`${p}c`);
      await store.create(`${p}d`, "d1");

      const asked: [string, number][] = [];
      const only =
        (name: string) =>
        (key: string, modRevision: number): boolean => {
          asked.push([key, modRevision]);
          return key === `${p}${name}`;
        };
      // The same keys, revisions and paging as list(); a value present is the value list() has.
      const same = async (want: (key: string, modRevision: number) => boolean, options: { limit?: number; continueAfter?: string; revision?: number }) => {
        const full = await store.list(p, options);
        const sparse = await store.listSparse!(p, want, options);
        assert.deepEqual(
          sparse.items.map((kv) => [kv.key, kv.modRevision]),
          full.items.map((kv) => [kv.key, kv.modRevision]),
        );
        assert.deepEqual([sparse.revision, sparse.more, sparse.remaining], [full.revision, full.more, full.remaining]);
        sparse.items.forEach((kv, i) => {
          if (kv.value !== undefined) assert.deepEqual([kv.value, kv.createRevision], [full.items[i]!.value, full.items[i]!.createRevision]);
        });
        return sparse;
      };
      const head = await same(only("b"), {});
      assert.equal(head.items.find((kv) => kv.key === `${p}b`)?.value, "b1", "a wanted value is read");
      assert.deepEqual(
        asked.map(([key]) => key.slice(p.length)).sort(),
        ["a", "b", "d", "e", "f", "g", "h", "i"],
        "asked once about each key listed",
      );
      assert.deepEqual(
        asked.find(([key]) => key === `${p}a`),
        [`${p}a`, head.items[0]!.modRevision],
        "asked with the revision listed",
      );
      // At a past revision: a value unchanged since, and one written since (its value of then).
      await same(only("b"), { revision: then });
      const past = await same(only("a"), { revision: then });
      assert.equal(past.items[0]?.value, "a1");
      const page = await same(only("b"), { limit: 2 });
      assert.equal(page.more, true);
      await same(only("e"), { limit: 4, continueAfter: page.items[1]!.key, revision: page.revision });
      await assert.rejects(store.listSparse(p, only("b"), { revision: (await store.revision()) + 1000 }), FutureRevisionError);
    });

    it("counts the keys under a prefix", caseTimeout, async () => {
      const p = freshPrefix();
      assert.equal(await store.count(p), 0);
      for (const n of ["a", "b", "c"]) await store.create(`${p}x/${n}`, n);
      await store.create(`${p}y`, "y");
      await store.delete(`${p}x/b`);
      assert.equal(await store.count(`${p}x/`), 2);
      assert.equal(await store.count(p), 3);
    });

    it("keeps prefixes apart: /a/ does not see /ab", caseTimeout, async () => {
      const p = freshPrefix();
      const start = await store.revision();
      const w = watch(`${p}a/`, start);
      try {
        await store.create(`${p}ab`, "neighbour");
        await store.create(`${p}a`, "parent");
        await store.create(`${p}a/x`, "inside");
        await store.create(`${p}a0`, "neighbour");
        assert.deepEqual(keysOf((await store.list(`${p}a/`)).items), [`${p}a/x`]);
        assert.equal(await store.count(`${p}a/`), 1);
        const sentinel = await store.create(`${p}a/z`, "last");
        await w.until(() => w.events.some((e) => eventRevision(e) === sentinel.modRevision), "the sentinel");
        assert.deepEqual(w.events.map(describeEvent), [`put ${p}a/x@${start + 3}`, `put ${p}a/z@${start + 5}`]);
      } finally {
        w.close();
      }
    });

    it("tells every watcher whose prefix a key starts with, however its prefix ends, and only those", caseTimeout, async () => {
      const p = freshPrefix();
      const start = await store.revision();
      const watches = { tree: watch(p, start), nodes: watch(`${p}nodes/`, start), nodesAgain: watch(`${p}nodes/`, start), partial: watch(`${p}nodes/a`, start), other: watch(`${p}pods/`, start) };
      try {
        await store.create(`${p}nodes/a`, "1");
        await store.create(`${p}nodes/ab`, "2");
        await store.create(`${p}nodes/b`, "3");
        await store.create(`${p}nodesX`, "4");
        watches.nodesAgain.close();
        const sentinel = await store.create(`${p}nodes/c`, "5");
        const seen = (w: RecordedWatch) => w.events.map((e) => describeEvent(e).replace(p, "").replace(/@\d+$/, ""));
        for (const w of [watches.tree, watches.nodes]) await w.until(() => w.events.some((e) => eventRevision(e) === sentinel.modRevision), "the sentinel");
        await watches.partial.until(() => watches.partial.events.length >= 2, "nodes/a and nodes/ab");
        assert.deepEqual(seen(watches.tree), ["put nodes/a", "put nodes/ab", "put nodes/b", "put nodesX", "put nodes/c"]);
        assert.deepEqual(seen(watches.nodes), ["put nodes/a", "put nodes/ab", "put nodes/b", "put nodes/c"]);
        assert.deepEqual(seen(watches.partial), ["put nodes/a", "put nodes/ab"], "a prefix that is not a whole segment");
        assert.deepEqual(seen(watches.other), []);
        assert.ok(watches.nodesAgain.events.length <= 4, "a closed watch hears nothing after it closed");
      } finally {
        for (const w of Object.values(watches)) w.close();
      }
    });

    it("replays exactly the missed events from a past revision, then live ones, in order", caseTimeout, async () => {
      const p = freshPrefix();
      const a = await store.create(`${p}a`, "a1");
      const from = a.modRevision;
      const b = await store.create(`${p}b`, "b1");
      const a2 = await store.update(`${p}a`, "a2", a.modRevision);
      const bDeleted = await store.delete(`${p}b`);
      await store.create(`${p}c`, "c1");

      const w = watch(p, from);
      try {
        const live: number[] = [];
        // Writes race with the replay on purpose: the handoff must neither drop nor repeat one.
        for (let i = 0; i < 10; i++) live.push((await store.create(`${p}live/${i}`, String(i))).modRevision);
        const last = live[live.length - 1] ?? 0;
        await w.until(() => w.events.some((e) => eventRevision(e) === last), "the last live event");
        const sentinel = await store.create(`${p}sentinel`, "s");
        await w.until(() => w.events.some((e) => eventRevision(e) === sentinel.modRevision), "the sentinel");

        const revisions = w.events.map(eventRevision);
        const expected = [b.modRevision, a2.modRevision, bDeleted.modRevision, from + 4, ...live, sentinel.modRevision];
        assert.deepEqual(revisions, expected);
        assert.deepEqual(w.events.slice(0, 4).map(describeEvent), [
          `put ${p}b@${b.modRevision}`,
          `put ${p}a@${a2.modRevision}`,
          `delete ${p}b@${bDeleted.modRevision}`,
          `put ${p}c@${from + 4}`,
        ]);
        assert.equal(w.error, undefined);
      } finally {
        w.close();
      }
    });

    it("sends the previous value with updates and deletes", caseTimeout, async () => {
      const p = freshPrefix();
      const start = await store.revision();
      const created = await store.create(`${p}k`, "v1");
      const updated = await store.update(`${p}k`, "v2", created.modRevision);
      const deleted = await store.delete(`${p}k`);

      const check = (events: WatchEvent[]): void => {
        assert.equal(events.length, 3);
        const [put, update, del] = events;
        assert.ok(put?.type === "put" && update?.type === "put" && del?.type === "delete");
        assert.deepEqual(put.kv, created);
        assert.equal(put.prev, undefined);
        assert.deepEqual(update.kv, updated);
        assert.deepEqual(update.prev, created);
        assert.equal(del.key, `${p}k`);
        assert.equal(del.revision, deleted.modRevision);
        assert.deepEqual(del.prev, updated);
      };

      // From history…
      const replayed = watch(p, start);
      // …and live.
      const head = await store.revision();
      const live = watch(p, head);
      try {
        await replayed.until(() => replayed.events.length >= 3, "three replayed events");
        check(replayed.events);

        const c2 = await store.create(`${p}k`, "w1");
        const u2 = await store.update(`${p}k`, "w2", c2.modRevision);
        const d2 = await store.delete(`${p}k`, u2.modRevision);
        await live.until(() => live.events.length >= 3, "three live events");
        const [put, update, del] = live.events;
        assert.ok(put?.type === "put" && update?.type === "put" && del?.type === "delete");
        assert.deepEqual(put.kv, c2);
        assert.deepEqual(update.prev, c2);
        assert.deepEqual(update.kv, u2);
        assert.equal(del.revision, d2.modRevision);
        assert.deepEqual(del.prev, u2);
      } finally {
        replayed.close();
        live.close();
      }
    });

    it("stops delivering once a watch is closed", caseTimeout, async () => {
      const p = freshPrefix();
      const start = await store.revision();
      const closed = watch(p, start);
      const open = watch(p, start);
      try {
        const first = await store.create(`${p}1`, "1");
        await closed.until(() => closed.events.length === 1, "the first event");
        closed.close();
        await store.create(`${p}2`, "2");
        const sentinel = await store.create(`${p}3`, "3");
        await open.until(() => open.events.some((e) => eventRevision(e) === sentinel.modRevision), "the sentinel");
        assert.deepEqual(closed.events.map(eventRevision), [first.modRevision]);
        assert.equal(closed.error, undefined);
      } finally {
        open.close();
      }
    });

    it("ends a watch whose consumer throws and reports the exception", caseTimeout, async () => {
      const p = freshPrefix();
      const failure = new Error("consumer failed");
      let calls = 0;
      let reported: Error | undefined;
      const afterRevision = await store.revision();
      const reportedOnce = new Promise<void>((resolve) => {
        store.watch(p, {
          afterRevision,
          onEvent() {
            calls++;
            throw failure;
          },
          onError(error) {
            reported = error;
            resolve();
          },
        });
      });
      await store.create(`${p}1`, "1");
      await store.create(`${p}2`, "2");
      await withTimeout(reportedOnce, waitMs, "the consumer's exception");
      assert.equal(reported, failure);
      assert.equal(calls, 1);
    });

    it("compacts history: old lists and watches fail with CompactedError, the present stays", caseTimeout, async () => {
      const p = freshPrefix();
      const a = await store.create(`${p}a`, "a1");
      await store.create(`${p}b`, "b1");
      await store.update(`${p}a`, "a2", a.modRevision);
      await store.delete(`${p}b`);
      const c = await store.create(`${p}c`, "c1");
      const compactAt = c.modRevision;
      await store.create(`${p}d`, "d1");

      await store.compact(compactAt);
      assert.equal(await store.compactedRevision(), compactAt);
      await store.compact(compactAt - 1); // at or below the compacted revision: nothing happens
      assert.equal(await store.compactedRevision(), compactAt);
      await assert.rejects(store.compact((await store.revision()) + 1000), FutureRevisionError);

      const error = await store.list(p, { revision: a.modRevision }).catch((e: unknown) => e);
      assert.ok(error instanceof CompactedError, `expected CompactedError, got ${String(error)}`);
      assert.equal(error.requested, a.modRevision);

      const atCompaction = await store.list(p, { revision: compactAt });
      assert.deepEqual(
        atCompaction.items.map((kv) => [kv.key, kv.value]),
        [
          [`${p}a`, "a2"],
          [`${p}c`, "c1"],
        ],
      );
      assert.deepEqual(keysOf((await store.list(p)).items), [`${p}a`, `${p}c`, `${p}d`]);
      assert.equal((await store.get(`${p}a`))?.value, "a2");

      await assert.rejects(store.list(p, { revision: compactAt - 1 }), CompactedError);

      for (const afterRevision of [a.modRevision, compactAt - 1]) {
        const tooOld = watch(p, afterRevision);
        try {
          await tooOld.until(() => tooOld.error !== undefined, `a CompactedError after ${afterRevision}`);
          assert.ok(tooOld.error instanceof CompactedError, `expected CompactedError, got ${String(tooOld.error)}`);
          assert.deepEqual(tooOld.events, []);
        } finally {
          tooOld.close();
        }
      }

      const fromCompaction = watch(p, compactAt);
      try {
        await fromCompaction.until(() => fromCompaction.events.length >= 1, "the event after the compaction");
        assert.deepEqual(fromCompaction.events.map(describeEvent), [`put ${p}d@${compactAt + 1}`]);
      } finally {
        fromCompaction.close();
      }
    });

    it("lets exactly one of many concurrent compare-and-swap updates win each revision", caseTimeout, async () => {
      const p = freshPrefix();
      const key = `${p}counter`;
      await store.create(key, "0");
      const workers = 6;
      const incrementsEach = 3;
      const wins: number[] = [];
      let conflicts = 0;
      const worker = async (): Promise<void> => {
        for (let done = 0; done < incrementsEach; ) {
          const current = await store.get(key);
          assert.ok(current);
          try {
            const next = await store.update(key, String(Number(current.value) + 1), current.modRevision);
            wins.push(next.modRevision);
            done++;
          } catch (error) {
            if (!(error instanceof RevisionMismatchError)) throw error;
            conflicts++;
          }
        }
      };
      await Promise.all(Array.from({ length: workers }, worker));
      const final = await store.get(key);
      assert.equal(final?.value, String(workers * incrementsEach), `no increment is lost (${conflicts} conflicts)`);
      assert.equal(new Set(wins).size, wins.length, "no revision has two winners");
      assert.ok(conflicts > 0, "concurrent updates of one revision conflicted");
    });

    it("round-trips unicode and large values through get, list and watch", caseTimeout, async () => {
      const p = freshPrefix();
      const start = await store.revision();
      const unicode = 'héllo wörld ✓ 漢字 😀 "quotes" \\ \n\t\u0000 end';
      const large = "x".repeat(1024 * 1024 - 64) + unicode;
      await store.create(`${p}unicode`, unicode);
      await store.create(`${p}large`, large);
      await store.create(`${p}empty`, "");
      assert.equal((await store.get(`${p}unicode`))?.value, unicode);
      assert.equal((await store.get(`${p}large`))?.value, large);
      assert.equal((await store.get(`${p}empty`))?.value, "");
      const listed = await store.list(p);
      assert.deepEqual(
        listed.items.map((kv) => kv.value.length),
        [0, large.length, unicode.length],
      );
      const w = watch(p, start);
      try {
        await w.until(() => w.events.length >= 3, "three events");
        const values = w.events.map((e) => (e.type === "put" ? e.kv.value : undefined));
        assert.deepEqual(values, [unicode, large, ""]);
      } finally {
        w.close();
      }
    });

    it("closes cleanly: a second close is harmless and later calls fail", caseTimeout, async () => {
      const other = await open();
      const p = freshPrefix();
      await other.create(`${p}k`, "v");
      const w = recordWatch(other, p, await other.revision(), waitMs);
      await other.close();
      await other.close();
      await assert.rejects(other.get(`${p}k`), StoreClosedError);
      await assert.rejects(other.create(`${p}other`, "v"), StoreClosedError);
      assert.equal(w.error, undefined);
    });
  });
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
