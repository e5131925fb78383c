// The garbage collector's index of owners, kept from a watch of every object: what it sees of an update.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import { defaultRegistry } from "../api/kinds.ts";
import type { KubeObject } from "../api/meta.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { Collectors, mayChangeIndex } from "./collectors.ts";
import { ObjectService, storedHead } from "./objects.ts";

const registry = defaultRegistry();
const configMaps = registry.byKind("v1", "ConfigMap")!;

describe("mayChangeIndex", () => {
  const stored = (metadata: string, rest = '"data":{"a":"1"}') => `${storedHead(configMaps)}${metadata}},${rest}}`;
  const owner = (uid: string, name = "owner") => `"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"${name}","uid":"${uid}"}]`;

  it("says no for a change that leaves the owners and the deletion as they were", () => {
    assert.equal(mayChangeIndex(configMaps, stored(`"name":"x",${owner("u1")}`, '"data":{"a":"2"}'), stored(`"name":"x",${owner("u1")}`)), false);
    assert.equal(mayChangeIndex(configMaps, stored('"name":"x"', '"data":{"a":"2"}'), stored('"name":"x"')), false);
  });

  it("says yes when an owner comes, goes or changes, and whenever the object is being deleted", () => {
    assert.equal(mayChangeIndex(configMaps, stored(`"name":"x",${owner("u1")}`), stored('"name":"x"')), true, "adopted");
    assert.equal(mayChangeIndex(configMaps, stored('"name":"x"'), stored(`"name":"x",${owner("u1")}`)), true, "orphaned");
    assert.equal(mayChangeIndex(configMaps, stored(`"name":"x",${owner("u2")}`), stored(`"name":"x",${owner("u1")}`)), true, "another owner");
    assert.equal(mayChangeIndex(configMaps, stored(`"name":"x",${owner("u1", "a]b")},"labels":{"l":"2"}`), stored(`"name":"x",${owner("u1", "a]b")},"labels":{"l":"1"}`)), false, "a bracket in a string");
    assert.equal(mayChangeIndex(configMaps, stored(`"name":"x",${owner("u2", "a]b")}`), stored(`"name":"x",${owner("u1", "a]b")}`)), true, "past a bracket in a string");
    assert.equal(mayChangeIndex(configMaps, stored('"name":"x","deletionTimestamp":"2026-11-28T00:00:00Z"'), stored('"name":"x"')), true, "being deleted");
  });

  it("says yes for a value not in the stored form, whose metadata may come after the rest", () => {
    assert.equal(mayChangeIndex(configMaps, `{"data":{},"metadata":{"name":"x"}}`, stored('"name":"x"')), true);
  });

  it("finds no owner in a string that only spells one", () => {
    const quoted = stored('"name":"x"', `"data":{"a":${JSON.stringify(`"ownerReferences":[{"uid":"u9"}]`)}}`);
    assert.equal(mayChangeIndex(configMaps, quoted, stored('"name":"x"')), false);
  });
});

describe("the garbage collector's index", () => {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(registry, store);
  const collectors = new Collectors(objects, pino({ level: "silent" }));
  after(async () => {
    await collectors.stop();
    await store.close();
  });
  const exists = async (name: string) => (await objects.tryGet(configMaps, "default", name)) !== undefined;
  const create = async (name: string, owners: KubeObject[] = []) =>
    (
      await objects.create(configMaps, "default", {
        metadata: { name, ...(owners.length > 0 ? { ownerReferences: owners.map((o) => ({ apiVersion: "v1", kind: "ConfigMap", name: o.metadata.name!, uid: o.metadata.uid! })) } : {}) },
        data: { step: "0" },
      })
    ).object;

  it("follows owners given and taken in updates, through updates that change nothing of them", async () => {
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
    await collectors.start();
    const first = await create("first");
    const second = await create("second");
    // Adopted in an update, then changed without a word about its owners: collected with its owner.
    const adopted = await create("adopted");
    const withOwner = (await objects.update(configMaps, "default", "adopted", { ...adopted, metadata: { ...adopted.metadata, ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "first", uid: first.metadata.uid! }] } })).object;
    await objects.update(configMaps, "default", "adopted", { ...withOwner, data: { step: "1" } });
    // Created with an owner, then orphaned in an update, then changed: it stays when its former owner goes.
    const orphaned = await create("orphaned", [second]);
    const withoutOwner = (await objects.update(configMaps, "default", "orphaned", { ...orphaned, metadata: { ...orphaned.metadata, ownerReferences: [] } })).object;
    await objects.update(configMaps, "default", "orphaned", { ...withoutOwner, data: { step: "1" } });
    // Created with an owner and only changed since: collected with it.
    const kept = await create("kept", [second]);
    await objects.update(configMaps, "default", "kept", { ...kept, data: { step: "1" } });

    await objects.delete(configMaps, "default", "first");
    await objects.delete(configMaps, "default", "second");
    // The store hands the deletions to the collectors' watch on the next turn; then they work until idle.
    await new Promise((resolve) => setImmediate(resolve));
    await collectors.idle();
    assert.equal(await exists("adopted"), false, "an object adopted in an update goes with its owner");
    assert.equal(await exists("kept"), false, "an object only changed since it was made with an owner goes with it");
    assert.equal(await exists("orphaned"), true, "an object whose owner was taken away in an update stays");
  });
});
