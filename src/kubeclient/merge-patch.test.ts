import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { applyMergePatch, createMergePatch, patchChanged, threeWayMergePatch, type JsonObject } from "./merge-patch.ts";

describe("createMergePatch", () => {
  it("sets changed and added fields, nulls removed ones, replaces a list that differs in any way", () => {
    const from = { a: 1, b: { c: "x", d: [1, 2] }, gone: true, same: { k: "v" } };
    const to = { a: 2, b: { c: "x", d: [1, 2, 3] }, added: "new", same: { k: "v" } };
    assert.deepEqual(createMergePatch(from, to), { a: 2, b: { d: [1, 2, 3] }, added: "new", gone: null });
    assert.deepEqual(createMergePatch(to, to), {});
  });

  it("turns one document into the other when applied", () => {
    const from: JsonObject = { spec: { replicas: 1, ports: [{ port: 80 }], labels: { a: "1" } } };
    const to: JsonObject = { spec: { ports: [{ port: 443 }], labels: { b: "2" } }, extra: {} };
    assert.deepEqual(applyMergePatch(from, createMergePatch(from, to)), to);
  });
});

describe("threeWayMergePatch", () => {
  const original = { metadata: { labels: { app: "demo", tier: "gold" } }, data: { colour: "blue", size: "L" } };
  const current = {
    metadata: { labels: { app: "demo", tier: "gold", owner: "ops" }, uid: "u1" },
    data: { colour: "blue", size: "L" },
    status: { phase: "Ready" },
  };

  it("removes what the previous configuration set and the new one drops, and nothing else", () => {
    const modified = { metadata: { labels: { app: "demo" } }, data: { colour: "red" } };
    assert.deepEqual(threeWayMergePatch(original, modified, current), { metadata: { labels: { tier: null } }, data: { colour: "red", size: null } });
  });

  it("removes nothing without a previous configuration", () => {
    assert.deepEqual(threeWayMergePatch(undefined, { data: { colour: "red" } }, current), { data: { colour: "red" } });
  });

  it("is empty when the live object already holds the new configuration", () => {
    assert.deepEqual(threeWayMergePatch(original, original, current), {});
  });

  it("puts back a field someone else changed, and sets an explicitly empty map", () => {
    const drifted = { ...current, data: { colour: "green", size: "L" } };
    assert.deepEqual(threeWayMergePatch(original, { ...original, extra: {} }, drifted), { data: { colour: "blue" }, extra: {} });
  });

  it("removes a field the new configuration sets to null", () => {
    assert.deepEqual(threeWayMergePatch(undefined, { data: { size: null } }, current), { data: { size: null } });
  });
});

describe("patchChanged", () => {
  it("compares only what the patch names", () => {
    const before = { spec: { ports: [{ port: 80, protocol: "TCP" }] }, metadata: { finalizers: [] as string[] } };
    const sameAfterDefaults = { spec: { ports: [{ port: 80, protocol: "TCP" }] }, metadata: { finalizers: ["someone/else"] } };
    assert.equal(patchChanged({ spec: { ports: [{ port: 80 }] } }, before, sameAfterDefaults), false);
    assert.equal(patchChanged({ spec: { ports: [{ port: 81 }] } }, before, { ...before, spec: { ports: [{ port: 81, protocol: "TCP" }] } }), true);
    assert.equal(patchChanged({ metadata: { labels: { gone: null } } }, before, before), false, "removing what is not there changes nothing");
  });
});
