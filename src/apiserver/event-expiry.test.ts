import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { eventKind, type EventObject } from "../api/core.ts";
import { defaultRegistry } from "../api/kinds.ts";
import { ensureDefaultNamespaces } from "../controlplane/namespaces.ts";
import { silentLogger } from "../runtime/testing.ts";
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

describe("EventExpiry", () => {
  it("deletes the Events not updated within the TTL, page after page, and keeps the others", async () => {
    const objects = new ObjectService(defaultRegistry(), SqliteStore.open(":memory:"));
    await ensureDefaultNamespaces(objects);
    const def = objects.registry.byKind("v1", eventKind.kind)!;
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

  it("rests between pages to keep to its share of the process's time, and a stop ends a sweep under way", async () => {
    const objects = new ObjectService(defaultRegistry(), SqliteStore.open(":memory:"));
    await ensureDefaultNamespaces(objects);
    const def = objects.registry.byKind("v1", eventKind.kind)!;
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
    assert.deepEqual(rests, [30, 30], "a rest between pages, none after the last");

    for (let i = 0; i < 9; i++) await objects.create(def, "default", event(`later-${i}`, "2026-06-01T10:30:00Z"));
    let resting!: () => void;
    const rested = new Promise<void>((resolve) => (resting = resolve));
    const stopped = new EventExpiry(objects, silentLogger, {
      pageSize: 3,
      now: () => NOW,
      rest: (_ms, signal) => {
        resting();
        return new Promise((resolve) => signal.addEventListener("abort", () => resolve()));
      },
    });
    const sweep = stopped.sweep();
    await rested;
    await stopped.stop();
    assert.equal(await sweep, 3, "the page under way is finished, no other is read");
    assert.equal((await objects.list(def, "default")).items.length, 6);
  });
});
