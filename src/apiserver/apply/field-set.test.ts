import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { displayPath, field, FieldSet, index, key, value } from "./field-set.ts";

describe("FieldSet", () => {
  it("reads and writes FieldsV1 as Kubernetes encodes it, steps ordered fields, keys, values, indexes", () => {
    const set = new FieldSet();
    set.insert([field("spec"), field("workers"), key({ name: "b" })]);
    set.insert([field("spec"), field("workers"), key({ name: "b" }), field("replicas")]);
    set.insert([field("spec"), field("workers"), key({ name: "a" })]);
    set.insert([field("metadata"), field("finalizers"), value("x")]);
    set.insert([field("spec"), field("args"), index(10)]);
    set.insert([field("spec"), field("args"), index(2)]);
    set.insert([field("spec"), field("paused")]);
    const encoded = set.toFieldsV1();
    assert.equal(
      JSON.stringify(encoded),
      JSON.stringify({
        "f:metadata": { "f:finalizers": { 'v:"x"': {} } },
        "f:spec": {
          "f:args": { "i:2": {}, "i:10": {} },
          "f:paused": {},
          "f:workers": { 'k:{"name":"a"}': {}, 'k:{"name":"b"}': { ".": {}, "f:replicas": {} } },
        },
      }),
    );
    assert.ok(FieldSet.fromFieldsV1(encoded).equals(set), "what is written reads back as the same set");
  });

  it("sorts the fields of a key by name", () => {
    assert.equal(key({ protocol: "TCP", port: 80 }), 'k:{"port":80,"protocol":"TCP"}');
  });

  it("refuses documents that are not FieldsV1", () => {
    assert.throws(() => FieldSet.fromFieldsV1({ "x:spec": {} }), /unknown FieldsV1 step "x:spec"/);
    assert.throws(() => FieldSet.fromFieldsV1({ "f:spec": "yes" }), /must be an object/);
    assert.throws(() => FieldSet.fromFieldsV1([]), /must be an object/);
  });

  it("unites, subtracts and intersects sets path by path", () => {
    const a = FieldSet.fromFieldsV1({ "f:spec": { "f:a": {}, "f:b": {} } });
    const b = FieldSet.fromFieldsV1({ "f:spec": { "f:b": {}, "f:c": {} } });
    assert.deepEqual(a.union(b).toFieldsV1(), { "f:spec": { "f:a": {}, "f:b": {}, "f:c": {} } });
    assert.deepEqual(a.difference(b).toFieldsV1(), { "f:spec": { "f:a": {} } });
    assert.deepEqual(a.intersection(b).toFieldsV1(), { "f:spec": { "f:b": {} } });
    assert.ok(a.difference(a).isEmpty());
    assert.ok(a.has([field("spec"), field("a")]));
    assert.ok(!a.has([field("spec")]), "a parent of members is not itself a member");
  });

  it("prints paths as Kubernetes prints them in conflicts", () => {
    assert.equal(displayPath([field("spec"), field("workers"), key({ name: "a" }), field("replicas")]), '.spec.workers[name="a"].replicas');
    assert.equal(displayPath([field("metadata"), field("finalizers"), value("x")]), '.metadata.finalizers[="x"]');
    assert.equal(displayPath([field("spec"), field("ports"), key({ port: 80, protocol: "TCP" })]), '.spec.ports[port=80,protocol="TCP"]');
    assert.equal(displayPath([field("args"), index(3)]), ".args[3]");
  });
});
