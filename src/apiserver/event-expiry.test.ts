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
});
