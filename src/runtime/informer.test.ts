import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../api/meta.ts";
import { apiVersionOf } from "../api/registry.ts";
import { connectionKind } from "../api/slipway/connection.ts";
import type { ConnectionObject } from "../api/kinds.ts";
import { ObjectService, type ObjectEvent, type ObjectWatch, type WatchOptions } from "../apiserver/objects.ts";
import { Informer, safetyNetInterval } from "./informer.ts";
import { Client } from "./client.ts";
import { ManualClock, memoryObjects, silentLogger, until } from "./testing.ts";

function connection(name: string, extra: Partial<ConnectionObject["metadata"]> = {}): ConnectionObject {
  return {
    apiVersion: apiVersionOf(connectionKind),
    kind: "Connection",
    metadata: { name, namespace: "default", ...extra },
    spec: { provider: "sim", region: "sim-east-1" },
  };
}

function recorder<T extends KubeObject>(informer: Informer<T>): string[] {
  const seen: string[] = [];
  informer.on({
    added: (o) => seen.push(`added ${o.metadata.name}`),
    updated: (p, o) => seen.push(p === o ? `resync ${o.metadata.name}` : `updated ${o.metadata.name}`),
    deleted: (o) => seen.push(`deleted ${o.metadata.name}`),
  });
  return seen;
}

/** An object service that counts lists, and whose watches start only when the test lets them. */
class GatedObjects extends ObjectService {
  gate: Promise<void> = Promise.resolve();
  watches = 0;
  lists = 0;
  override list(...args: Parameters<ObjectService["list"]>): ReturnType<ObjectService["list"]> {
    this.lists++;
    return super.list(...args);
  }
  override async watch(
    def: Parameters<ObjectService["watch"]>[0],
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: ObjectEvent) => void,
    onError: (error: Error) => void,
  ): Promise<ObjectWatch> {
    this.watches++;
    await this.gate;
    return super.watch(def, namespace, options, onEvent, onError);
  }
}

describe("Informer", () => {
  it("lists, then follows every change into an indexed cache of frozen objects", async () => {
    const objects = await memoryObjects();
    const connections = new Client(objects).of(connectionKind);
    await connections.create(connection("east", { labels: { tier: "gold" } }));
    const informer = new Informer(objects, connectionKind, { log: silentLogger, resyncMs: 0 });
    const seen = recorder(informer);
    await informer.start();
    assert.ok(informer.hasSynced());
    assert.deepEqual(seen, ["added east"]);

    const west = await connections.create(connection("west", { ownerReferences: [{ apiVersion: "v1", kind: "Thing", name: "owner", uid: "owner-uid" }] }));
    const east = await connections.get("default", "east");
    await connections.update({ ...east, metadata: { ...east.metadata, labels: { tier: "silver" } } });
    await connections.delete("default", "west");
    await until(() => seen.length === 4, "every change");
    assert.deepEqual(seen, ["added east", "added west", "updated east", "deleted west"]);

    const cached = informer.cache.get("default/east");
    assert.equal(cached?.metadata.labels?.tier, "silver");
    assert.deepEqual(informer.cache.withLabel("tier", "silver").map((o) => o.metadata.name), ["east"]);
    assert.deepEqual(informer.cache.withLabel("tier", "gold"), [], "the old label is no longer indexed");
    assert.deepEqual(informer.cache.inNamespace("default").map((o) => o.metadata.name), ["east"]);
    assert.deepEqual(informer.cache.ownedBy("owner-uid"), [], "deleted objects leave the owner index");
    assert.equal(west.metadata.name, "west");
    assert.ok(Object.isFrozen(cached) && Object.isFrozen(cached?.metadata.labels));
    assert.throws(() => {
      (cached as ConnectionObject).spec.region = "changed";
    }, TypeError);
    informer.stop();
  });

  it("relists after 410 Gone and tells handlers what changed while it could not watch", async () => {
    const base = await memoryObjects();
    const objects = new GatedObjects(base.registry, base.store);
    const connections = new Client(objects).of(connectionKind);
    await connections.create(connection("kept"));
    await connections.create(connection("removed"));
    let open!: () => void;
    objects.gate = new Promise((resolve) => (open = resolve));
    const informer = new Informer(objects, connectionKind, { log: silentLogger, resyncMs: 0 });
    const seen = recorder(informer);
    const started = informer.start();
    await until(() => objects.watches === 1, "the informer to start its watch");
    assert.equal(objects.lists, 1);

    // While the watch is not yet open, history moves on and is compacted away.
    const kept = await connections.get("default", "kept");
    await connections.update({ ...kept, metadata: { ...kept.metadata, labels: { changed: "yes" } } });
    await connections.delete("default", "removed");
    await connections.create(connection("added"));
    await objects.store.compact(await objects.store.revision());
    open();
    await started;

    await until(() => seen.length === 5, "a relist");
    assert.equal(objects.lists, 2, "one relist");
    assert.deepEqual(seen.slice(0, 3), ["added kept", "added removed", "deleted removed"]);
    assert.deepEqual(seen.slice(3).sort(), ["added added", "updated kept"]);
    assert.deepEqual([...informer.cache.keys()].sort(), ["default/added", "default/kept"]);

    // And it watches again from the relist.
    await connections.create(connection("after"));
    await until(() => informer.cache.get("default/after"), "a change after the relist");
    informer.stop();
  });

  it("resumes a failed watch from the last resourceVersion without relisting", async () => {
    const base = await memoryObjects();
    let failWatch: ((error: Error) => void) | undefined;
    let lists = 0;
    class FlakyObjects extends ObjectService {
      override list(...args: Parameters<ObjectService["list"]>): ReturnType<ObjectService["list"]> {
        lists++;
        return super.list(...args);
      }
      override async watch(
        def: Parameters<ObjectService["watch"]>[0],
        namespace: string | undefined,
        options: WatchOptions,
        onEvent: (event: ObjectEvent) => void,
        onError: (error: Error) => void,
      ): Promise<ObjectWatch> {
        failWatch = onError;
        return super.watch(def, namespace, options, onEvent, onError);
      }
    }
    const objects = new FlakyObjects(base.registry, base.store);
    const connections = new Client(objects).of(connectionKind);
    const informer = new Informer(objects, connectionKind, { log: silentLogger, resyncMs: 0, retryBaseMs: 1 });
    const seen = recorder(informer);
    await informer.start();
    await connections.create(connection("one"));
    await until(() => seen.length === 1, "the first change");
    failWatch?.(new Error("connection reset"));
    await connections.create(connection("two"));
    await until(() => seen.length === 2, "the change made while the watch was down");
    assert.deepEqual(seen, ["added one", "added two"]);
    assert.equal(lists, 1, "no relist");
    informer.stop();
  });

  it("tells handlers of every cached object again each resync period", async () => {
    const objects = await memoryObjects();
    const connections = new Client(objects).of(connectionKind);
    await connections.create(connection("a"));
    await connections.create(connection("b"));
    const clock = new ManualClock();
    const informer = new Informer(objects, connectionKind, { log: silentLogger, clock, resyncMs: 60_000 });
    const seen = recorder(informer);
    await informer.start();
    clock.advance(59_999);
    assert.deepEqual(seen, ["added a", "added b"]);
    clock.advance(1);
    assert.deepEqual(seen.slice(2).sort(), ["resync a", "resync b"]);
    clock.advance(60_000);
    assert.equal(seen.length, 6);
    informer.stop();
  });

  it("resyncs a cache of more objects than its rate allows in a period less often, so its cost stays the same", async () => {
    const objects = await memoryObjects();
    const connections = new Client(objects).of(connectionKind);
    for (const name of ["a", "b", "c", "d", "e", "f"]) await connections.create(connection(name));
    const clock = new ManualClock();
    // Six objects at most one a minute on average: every six minutes rather than every minute.
    const informer = new Informer(objects, connectionKind, { log: silentLogger, clock, resyncMs: 60_000, resyncPerSecond: 1 / 60 });
    const seen = recorder(informer);
    await informer.start();
    clock.advance(359_999);
    assert.equal(seen.filter((s) => s.startsWith("resync")).length, 0);
    clock.advance(1);
    assert.equal(seen.filter((s) => s.startsWith("resync")).length, 6);
    informer.stop();
    assert.equal(safetyNetInterval(600_000, 1_000), 600_000, "1,000 objects at two a second: the 10 minutes stand");
    assert.equal(safetyNetInterval(600_000, 10_000), 5_000_000, "10,000: every 5,000 s");
    assert.equal(safetyNetInterval(600_000, 10_000, 0), 600_000, "no bound");
  });

  it("resyncs many objects a slice at a time, letting other work run between, and leaves out what changed meanwhile", async () => {
    const objects = await memoryObjects();
    const connections = new Client(objects).of(connectionKind);
    for (let i = 0; i < 1200; i++) await connections.create(connection(`c${String(i).padStart(4, "0")}`));
    const clock = new ManualClock();
    const informer = new Informer(objects, connectionKind, { log: silentLogger, clock, resyncMs: 60_000, resyncPerSecond: 0 });
    const seen = recorder(informer);
    await informer.start();
    clock.advance(60_000);
    const firstSlice = seen.filter((s) => s.startsWith("resync")).length;
    assert.ok(firstSlice > 0 && firstSlice < 1200, `${firstSlice} handed out before anything else could run`);
    // A change made while the resync is under way is handed out as a change, and not resynced after it.
    const changed = structuredClone(informer.cache.get("default/c1199")!);
    changed.metadata.labels = { team: "blue" };
    await connections.update(changed);
    await until(() => seen.includes("updated c1199"), "the change handed out");
    await until(() => seen.filter((s) => s.startsWith("resync")).length === 1199, "the rest of the resync");
    assert.ok(!seen.includes("resync c1199"), "the changed object is not handed out again as unchanged");
    informer.stop();
  });
});
