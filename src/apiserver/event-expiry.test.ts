import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { eventKind, type EventObject } from "../api/core.ts";
import { defaultRegistry } from "../api/kinds.ts";
import { ensureDefaultNamespaces } from "../controlplane/namespaces.ts";
import { silentLogger, until } from "../runtime/testing.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { EventExpiry } from "./event-expiry.ts";
import { ObjectService } from "./objects.ts";

const NOW = Date.parse("2026-06-01T12:00:00Z");

function event(name: string, lastTimestamp: string): EventObject {
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name, namespace: "default" },
    involvedObject: { kind: "Cluster", name: "demo", namespace: "default" },
    reason: "Test",
    message: name,
    type: "Normal",
    count: 1,
    firstTimestamp: "2026-06-01T09:00:00Z",
    lastTimestamp,
  } as EventObject;
}

/** An object service on an in-memory store, with the default namespaces, and the Event kind. */
async function eventStore() {
  const objects = new ObjectService(defaultRegistry(), SqliteStore.open(":memory:"));
  await ensureDefaultNamespaces(objects);
  return { objects, def: objects.registry.byKind("v1", eventKind.kind)! };
}

describe("EventExpiry", () => {
  it("deletes the Events not updated within the TTL, page after page, and keeps the others", async () => {
    const { objects, def } = await eventStore();
    for (let i = 0; i < 7; i++) await objects.create(def, "default", event(`old-${i}`, "2026-06-01T10:30:00Z"));
    await objects.create(def, "default", event("repeated-lately", "2026-06-01T11:30:00Z"));
    await objects.create(def, "default", event("recent", "2026-06-01T11:59:00Z"));

    const expiry = new EventExpiry(objects, silentLogger, { ttlMs: 60 * 60_000, pageSize: 3, now: () => NOW });
    assert.equal(await expiry.sweep(), 7);
    const left = (await objects.list(def, "default")).items.map((e) => e.metadata.name).sort();
    assert.deepEqual(left, ["recent", "repeated-lately"]);
    assert.equal(await expiry.sweep(), 0, "nothing more to expire");
    await expiry.stop();
  });

  it("keeps its index current from a watch: sweeps read no Event, judge an updated one by its new time, and expire later ones in turn", async () => {
    const { objects, def } = await eventStore();
    for (let i = 0; i < 4; i++) await objects.create(def, "default", event(`old-${i}`, "2026-06-01T10:30:00Z"));
    let lists = 0;
    const list = objects.list.bind(objects);
    objects.list = (...args) => (lists++, list(...args));
    let now = Date.parse("2026-06-01T11:00:00Z");
    const expiry = new EventExpiry(objects, silentLogger, { ttlMs: 60 * 60_000, pageSize: 3, now: () => now });
    expiry.start();
    try {
      assert.equal(await expiry.sweep(), 0, "nothing has expired yet");
      assert.equal(lists, 2, "the Events are read once, in pages");
      // After the reading: one is repeated (its lastTimestamp moves on), one is deleted by someone else, one is new.
      const repeated = await objects.get(def, "default", "old-0");
      await objects.update(def, "default", "old-0", { ...repeated, count: 2, lastTimestamp: "2026-06-01T11:45:00Z" });
      await objects.delete(def, "default", "old-1");
      await objects.create(def, "default", event("later", "2026-06-01T11:10:00Z"));
      await until(() => expiry.size === 4, "the watch's news in the index");

      now = NOW; // 12:00: old-2 and old-3 have expired
      assert.equal(await expiry.sweep(), 2);
      assert.deepEqual((await objects.list(def, "default")).items.map((e) => e.metadata.name).sort(), ["later", "old-0"]);
      now = Date.parse("2026-06-01T12:20:00Z"); // later has expired, the repeated one not
      assert.equal(await expiry.sweep(), 1);
      assert.deepEqual((await objects.list(def, "default")).items.map((e) => e.metadata.name), ["old-0"]);
      assert.equal(lists, 2 + 2, "sweeps read no Event (the two lists are this test's)");
    } finally {
      await expiry.stop();
    }
  });

  it("reads the Events again when its watch breaks, and then knows those written meanwhile", async () => {
    const { objects, def } = await eventStore();
    await objects.create(def, "default", event("first", "2026-06-01T10:30:00Z"));
    const breaks: ((error: Error) => void)[] = [];
    const watches: { close(): void }[] = [];
    const watch = objects.watch.bind(objects);
    objects.watch = async (d, namespace, options, onEvent, onError) => {
      breaks.push(onError);
      const w = await watch(d, namespace, options, onEvent, onError);
      watches.push(w);
      return w;
    };
    const expiry = new EventExpiry(objects, silentLogger, { now: () => NOW, retryMs: 1 });
    expiry.start();
    try {
      await until(() => breaks.length === 1 && expiry.size === 1, "the first reading and its watch");
      watches[0]!.close(); // what a compacted history does: no more news on this watch
      await objects.create(def, "default", event("while-broken", "2026-06-01T10:40:00Z"));
      breaks[0]!(new Error("too old resource version"));
      await until(() => breaks.length === 2 && expiry.size === 2, "a second reading and a new watch");
      assert.equal(await expiry.sweep(), 2);
      assert.equal((await objects.list(def, "default")).items.length, 0);
    } finally {
      await expiry.stop();
    }
  });

  it("rests after each page it reads or deletes, to keep to its share of the process's time, and a stop ends a sweep under way", async () => {
    const { objects, def } = await eventStore();
    for (let i = 0; i < 9; i++) await objects.create(def, "default", event(`old-${i}`, "2026-06-01T10:30:00Z"));

    // Each page takes 10 ms on this clock; a quarter of the time is 30 ms of rest after each.
    let clock = 0;
    const rests: number[] = [];
    const paced = new EventExpiry(objects, silentLogger, {
      pageSize: 3,
      share: 0.25,
      now: () => NOW,
      elapsed: () => (clock += 10),
      rest: async (ms) => void rests.push(ms),
    });
    assert.equal(await paced.sweep(), 9);
    assert.deepEqual(rests, [30, 30, 30, 30, 30], "between the pages read (two), after each three deleted (three)");
    await paced.stop();

    for (let i = 0; i < 9; i++) await objects.create(def, "default", event(`later-${i}`, "2026-06-01T10:30:00Z"));
    let resting!: () => void;
    const rested = new Promise<void>((resolve) => (resting = resolve));
    let rest = 0;
    const stopped = new EventExpiry(objects, silentLogger, {
      pageSize: 3,
      now: () => NOW,
      rest: (_ms, signal) => {
        // The reading's two rests pass; the first rest among the deletes waits for the stop.
        if (++rest <= 2) return Promise.resolve();
        resting();
        return new Promise((resolve) => signal.addEventListener("abort", () => resolve()));
      },
    });
    const sweep = stopped.sweep();
    await rested;
    await stopped.stop();
    assert.equal(await sweep, 3, "the page under way is finished, no other is deleted");
    assert.equal((await objects.list(def, "default")).items.length, 6);
  });
});
