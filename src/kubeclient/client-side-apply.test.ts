import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LAST_APPLIED_ANNOTATION, goJson, lastApplied, withLastApplied } from "./client-side-apply.ts";
import type { KubeObject } from "./client.ts";

describe("the last-applied record", () => {
  it("is written as kubectl writes it: keys sorted, HTML characters escaped, a final newline", () => {
    assert.equal(goJson({ kind: "ConfigMap", apiVersion: "v1", data: { z: "a<b>&c", a: [{ y: 1, x: 2 }] } }), '{"apiVersion":"v1","data":{"a":[{"x":2,"y":1}],"z":"a\\u003cb\\u003e\\u0026c"},"kind":"ConfigMap"}\n');
  });

  it("records the object without the record itself, keeping the object's other annotations", () => {
    const object: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "default", annotations: { note: "hi", [LAST_APPLIED_ANNOTATION]: '{"old":true}' } },
      data: { a: "1" },
    };
    const modified = withLastApplied(object);
    assert.equal(modified.metadata.annotations?.note, "hi");
    assert.deepEqual(lastApplied(modified), { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default", annotations: { note: "hi" } }, data: { a: "1" } });
    // With no other annotation, the record's object has an empty map of them, as kubectl's has.
    assert.deepEqual((lastApplied(withLastApplied({ ...object, metadata: { name: "c" } })) as { metadata: unknown }).metadata, { name: "c", annotations: {} });
  });

  it("reads nothing from a missing or unreadable record", () => {
    const object = (annotation?: string): KubeObject => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", ...(annotation === undefined ? {} : { annotations: { [LAST_APPLIED_ANNOTATION]: annotation } }) } });
    assert.equal(lastApplied(object()), undefined);
    assert.equal(lastApplied(object("not json")), undefined);
    assert.equal(lastApplied(object("[1]")), undefined);
  });
});
