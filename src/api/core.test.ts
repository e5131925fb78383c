import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { eventKind, namespaceKind, secretKind, type EventObject, type SecretObject } from "./core.ts";
import { admit, cell } from "./testing.ts";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

describe("Namespace", () => {
  it("is cluster-scoped and starts Active", () => {
    assert.equal(namespaceKind.namespaced, false);
    const { object, errors } = admit(namespaceKind, { apiVersion: "v1", kind: "Namespace", metadata: { name: "team-a" } });
    assert.deepEqual(errors, []);
    assert.equal(object.status?.phase, "Active");
    assert.equal(cell(namespaceKind, "STATUS", object), "Active");
  });

  it("refuses a name that is not a DNS label", () => {
    const { errors } = admit(namespaceKind, { apiVersion: "v1", kind: "Namespace", metadata: { name: "Team_A" } });
    assert.deepEqual(errors.map((e) => e.field), ["metadata.name"]);
  });

  it("refuses an unknown phase", () => {
    const { schemaErrors } = admit(namespaceKind, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "a" },
      status: { phase: "Gone" },
    });
    assert.deepEqual(schemaErrors.map(([p]) => p), ["/status/phase"]);
  });

  it("has NAME, STATUS and an AGE column dated from creation", () => {
    assert.deepEqual(namespaceKind.printerColumns.map((c) => c.name), ["NAME", "STATUS", "AGE"]);
    const age = namespaceKind.printerColumns.find((c) => c.name === "AGE");
    assert.equal(age?.type, "date");
    assert.equal(age?.jsonPath, ".metadata.creationTimestamp");
  });
});

describe("Secret", () => {
  function secret(fields: Partial<SecretObject>): unknown {
    return { apiVersion: "v1", kind: "Secret", metadata: { name: "creds", namespace: "default" }, ...fields };
  }

  it("is sensitive and of type Opaque by default", () => {
    assert.equal(secretKind.sensitive, true);
    const { object, errors } = admit(secretKind, secret({ data: { token: b64("s3cret") } }));
    assert.deepEqual(errors, []);
    assert.equal(object.type, "Opaque");
  });

  it("moves stringData into data, base64-encoded, and never keeps stringData", () => {
    const { object, errors } = admit(
      secretKind,
      secret({ data: { a: b64("old"), b: b64("kept") }, stringData: { a: "new", c: "héllo wörld" } }),
    );
    assert.deepEqual(errors, []);
    assert.equal(object.stringData, undefined);
    assert.deepEqual(object.data, { a: b64("new"), b: b64("kept"), c: b64("héllo wörld") });
    assert.equal(Buffer.from(object.data?.c ?? "", "base64").toString("utf8"), "héllo wörld");
    assert.equal(cell(secretKind, "DATA", object), 3);
  });

  it("refuses data that is not base64, without echoing the value", () => {
    const { errors } = admit(secretKind, secret({ data: { ok: b64("x"), bad: "not base64!" } }));
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.field, "data[bad]");
    assert.doesNotMatch(errors[0]?.message ?? "", /not base64!/);
    for (const bad of ["abc", "ab=c", "YQ===", "YWJj\n"]) {
      assert.equal(admit(secretKind, secret({ data: { k: bad } })).errors.length, 1, bad);
    }
    for (const good of ["", "YQ==", "YWI=", "YWJj", "+/+/"]) {
      assert.deepEqual(admit(secretKind, secret({ data: { k: good } })).errors, [], good);
    }
  });

  it("refuses keys that are not config keys", () => {
    const { errors } = admit(secretKind, secret({ stringData: { "a/b": "x", "tls.crt": "y" } }));
    assert.deepEqual(errors.map((e) => e.field), ["data[a/b]"]);
  });

  it("refuses a value that is not a string", () => {
    const { schemaErrors } = admit(secretKind, secret({ data: { n: 5 as unknown as string } }));
    assert.deepEqual(schemaErrors.map(([p]) => p), ["/data/n"]);
  });

  it("keeps data, type and immutable fixed once immutable is set", () => {
    const old = admit(secretKind, secret({ immutable: true, data: { k: b64("v") } })).object;
    const changed = admit(secretKind, { ...old, data: { k: b64("w") } }, old).errors;
    assert.deepEqual(changed.map((e) => e.field), ["data"]);
    assert.deepEqual(admit(secretKind, { ...old, immutable: false }, old).errors.map((e) => e.field), ["immutable"]);
    assert.deepEqual(admit(secretKind, { ...old, metadata: { ...old.metadata, labels: { a: "b" } } }, old).errors, []);
  });

  it("allows changing data of a mutable secret but never its type", () => {
    const old = admit(secretKind, secret({ data: { k: b64("v") } })).object;
    assert.deepEqual(admit(secretKind, { ...old, stringData: { k: "w" } }, old).errors, []);
    const retyped = admit(secretKind, { ...old, type: "kubernetes.io/tls" }, old).errors;
    assert.deepEqual(retyped.map((e) => e.field), ["type"]);
    assert.match(retyped[0]?.message ?? "", /field is immutable/);
  });

  it("has NAME, TYPE, DATA and AGE columns", () => {
    assert.deepEqual(secretKind.printerColumns.map((c) => c.name), ["NAME", "TYPE", "DATA", "AGE"]);
  });
});

describe("Event", () => {
  function event(fields: Partial<EventObject> = {}): EventObject {
    return {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "demo.1", namespace: "default", creationTimestamp: "2025-01-01T00:00:00Z" },
      involvedObject: { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", namespace: "default", name: "demo", uid: "u-1" },
      reason: "CreateMachineFailed",
      message: "quota exceeded",
      type: "Warning",
      source: { component: "cluster-controller" },
      count: 2,
      firstTimestamp: "2025-01-01T00:00:00Z",
      lastTimestamp: "2025-01-01T00:05:00Z",
      ...fields,
    };
  }

  it("accepts what an event recorder writes", () => {
    assert.deepEqual(admit(eventKind, event()).schemaErrors, []);
    assert.deepEqual(admit(eventKind, event()).errors, []);
    assert.deepEqual(eventKind.shortNames, ["ev"]);
  });

  it("refuses an unknown type and unknown reference fields", () => {
    assert.deepEqual(admit(eventKind, event({ type: "Error" as "Warning" })).schemaErrors.map(([p]) => p), ["/type"]);
    const extra = event();
    (extra.involvedObject as Record<string, unknown>).owner = "x";
    assert.deepEqual(admit(eventKind, extra).schemaErrors.map(([p]) => p), ["/involvedObject/owner"]);
  });

  it("refuses an involved object in another namespace", () => {
    const errors = admit(eventKind, event({ involvedObject: { kind: "Cluster", name: "demo", namespace: "other" } })).errors;
    assert.deepEqual(errors.map((e) => e.field), ["involvedObject.namespace"]);
  });

  it("shows LAST SEEN, TYPE, REASON, OBJECT (lower-case kind) and MESSAGE", () => {
    const e = event();
    assert.deepEqual(eventKind.printerColumns.map((c) => c.name), ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    assert.equal(cell(eventKind, "LAST SEEN", e), "2025-01-01T00:05:00Z");
    assert.equal(cell(eventKind, "TYPE", e), "Warning");
    assert.equal(cell(eventKind, "REASON", e), "CreateMachineFailed");
    assert.equal(cell(eventKind, "OBJECT", e), "cluster/demo");
    assert.equal(cell(eventKind, "MESSAGE", e), "quota exceeded");
  });

  it("falls back to eventTime when there is no lastTimestamp", () => {
    const e = event({ lastTimestamp: undefined, eventTime: "2025-01-01T00:07:00.000000Z" });
    assert.equal(cell(eventKind, "LAST SEEN", e), "2025-01-01T00:07:00.000000Z");
  });

  it("can be selected by involved object, reason, type and source", () => {
    const e = event({ involvedObject: { ...event().involvedObject, fieldPath: "spec.workers[0]", resourceVersion: "42" } });
    const select = (field: string) => eventKind.fieldSelectors?.[field]?.(e);
    assert.equal(select("involvedObject.kind"), "Cluster");
    assert.equal(select("involvedObject.namespace"), "default");
    assert.equal(select("involvedObject.name"), "demo");
    assert.equal(select("involvedObject.uid"), "u-1");
    assert.equal(select("involvedObject.apiVersion"), "slipway.dev/v1alpha1");
    assert.equal(select("involvedObject.resourceVersion"), "42");
    assert.equal(select("involvedObject.fieldPath"), "spec.workers[0]");
    assert.equal(select("reason"), "CreateMachineFailed");
    assert.equal(select("type"), "Warning");
    assert.equal(select("source"), "cluster-controller");
  });
});
