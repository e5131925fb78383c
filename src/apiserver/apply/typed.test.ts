import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Type } from "@sinclair/typebox";
import { FreeForm, MapOf } from "../../api/meta.ts";
import { FieldSet } from "./field-set.ts";
import { compare, fieldsOf, merge, removeFields } from "./typed.ts";

const Pool = Type.Object({ name: Type.String(), size: Type.Optional(Type.Integer()), zones: Type.Optional(Type.Array(Type.String())) });
const schema = Type.Object({
  spec: Type.Object({
    pools: Type.Array(Pool, { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] }),
    tags: Type.Array(Type.String(), { "x-kubernetes-list-type": "set" }),
    args: Type.Array(Type.String()),
    labels: MapOf(Type.String()),
    selector: Type.Object({ app: Type.Optional(Type.String()), tier: Type.Optional(Type.String()) }, { "x-kubernetes-map-type": "atomic" }),
    extra: FreeForm("anything"),
    paused: Type.Boolean(),
  }),
}) as unknown as Record<string, unknown>;

const fields = (object: unknown) => fieldsOf(object, schema).set.toFieldsV1();

describe("fields of a value, by its schema", () => {
  it("keys map lists by their key fields, sets by value, and keeps atomic lists and maps whole", () => {
    assert.deepEqual(
      fields({
        spec: {
          pools: [{ name: "a", size: 2, zones: ["z1"] }],
          tags: ["x", "y"],
          args: ["--v"],
          labels: { team: "t" },
          selector: { app: "web" },
          paused: false,
        },
      }),
      {
        "f:spec": {
          "f:args": {},
          "f:labels": { "f:team": {} },
          "f:paused": {},
          "f:pools": { 'k:{"name":"a"}': { ".": {}, "f:name": {}, "f:size": {}, "f:zones": {} } },
          "f:selector": {},
          "f:tags": { 'v:"x"': {}, 'v:"y"': {} },
        },
      },
    );
  });

  it("counts an empty object as a field, and a free-form object's keys with their children", () => {
    assert.deepEqual(fields({ spec: { labels: {}, extra: { a: { b: 1 } } } }), {
      "f:spec": { "f:extra": { "f:a": { ".": {}, "f:b": {} } }, "f:labels": {} },
    });
  });

  it("refuses an applied list item without its key, or a key twice, naming the list; a stored one counts as atomic", () => {
    assert.throws(() => fieldsOf({ spec: { pools: [{ size: 1 }] } }, schema, { strictKeys: true }), /^Error: \.spec\.pools: item has no value for key field "name"/);
    assert.throws(() => fieldsOf({ spec: { pools: [{ name: "a" }, { name: "a" }] } }, schema, { strictKeys: true }), /\.spec\.pools: duplicate entries/);
    assert.deepEqual(fields({ spec: { pools: [{ name: "a" }, { name: "a" }] } }), { "f:spec": { "f:pools": {} } });
  });

  it("tells added, removed and changed leaves apart", () => {
    const before = fieldsOf({ spec: { paused: false, pools: [{ name: "a", size: 1 }], labels: { x: "1" } } }, schema);
    const after = fieldsOf({ spec: { paused: true, pools: [{ name: "a", size: 1 }, { name: "b" }] } }, schema);
    const changes = compare(before, after);
    assert.deepEqual(changes.modified.toFieldsV1(), { "f:spec": { "f:paused": {} } });
    assert.deepEqual(changes.added.toFieldsV1(), { "f:spec": { "f:pools": { 'k:{"name":"b"}': { ".": {}, "f:name": {} } } } });
    assert.deepEqual(changes.removed.toFieldsV1(), { "f:spec": { "f:labels": { "f:x": {} } } });
  });
});

describe("merging an applied configuration", () => {
  const live = {
    spec: {
      pools: [{ name: "a", size: 1, zones: ["z1", "z2"] }, { name: "b", size: 2 }],
      tags: ["x"],
      args: ["--a", "--b"],
      labels: { keep: "1" },
      selector: { app: "web", tier: "front" },
    },
  };

  it("merges keyed items field by field, unites sets, and replaces atomic values", () => {
    const merged = merge(live, { spec: { pools: [{ name: "c" }, { name: "a", size: 5, zones: ["z3"] }], tags: ["y", "x"], args: ["--c"], labels: { new: "2" }, selector: { app: "api" } } }, schema);
    assert.deepEqual(merged, {
      spec: {
        pools: [{ name: "c" }, { name: "a", size: 5, zones: ["z3"] }, { name: "b", size: 2 }],
        tags: ["y", "x"],
        args: ["--c"],
        labels: { keep: "1", new: "2" },
        selector: { app: "api" },
      },
    });
  });

  it("takes out removed fields, and an item only when nothing kept lies beneath it", () => {
    const remove = FieldSet.fromFieldsV1({
      "f:spec": { "f:pools": { 'k:{"name":"a"}': { ".": {}, "f:name": {}, "f:size": {}, "f:zones": {} }, 'k:{"name":"b"}': { ".": {}, "f:name": {}, "f:size": {} } }, "f:labels": { "f:keep": {} } },
    });
    const keep = FieldSet.fromFieldsV1({ "f:spec": { "f:pools": { 'k:{"name":"b"}': { "f:size": {} } } } });
    assert.deepEqual(removeFields(live, remove, keep, schema), {
      spec: { pools: [{ name: "b", size: 2 }], tags: ["x"], args: ["--a", "--b"], selector: { app: "web", tier: "front" } },
    });
  });
});
