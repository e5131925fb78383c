import { describe, it } from "node:test";
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { BadRequestError, UnsupportedMediaTypeError } from "./errors.ts";
import { decodeProtobuf, encodeProtobuf, hasProtobuf, prefersProtobuf } from "./protobuf.ts";

const secret = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: {
    name: "db",
    namespace: "shop",
    uid: "0b6f3c1e-0000-4000-8000-000000000001",
    resourceVersion: "42",
    generation: 3,
    creationTimestamp: "2026-11-26T10:00:00Z",
    labels: { app: "shop" },
    finalizers: ["example.com/keep"],
    ownerReferences: [{ apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "c", uid: "u-1", controller: true }],
    managedFields: [{ manager: "kubectl", operation: "Apply", apiVersion: "v1", time: "2026-11-26T10:00:00Z", fieldsType: "FieldsV1", fieldsV1: { "f:data": { "f:password": {} } } }],
  },
  type: "Opaque",
  data: { password: Buffer.from("s3cret\u0000binary").toString("base64") },
};

describe("Kubernetes protobuf", () => {
  it("round-trips a Secret through the envelope with its bytes, times, owner references and managed fields", () => {
    const bytes = encodeProtobuf(secret);
    assert.deepEqual([...bytes.subarray(0, 4)], [0x6b, 0x38, 0x73, 0x00], "the k8s\\0 magic comes first");
    assert.deepEqual(decodeProtobuf(bytes), secret);
  });

  it("decodes what Go writes: every non-pointer field, empty strings and zero times included, is left out as JSON leaves it", () => {
    const root = protobuf.parse(`syntax = "proto2"; message Time { optional int64 seconds = 1; }
      message Meta { optional string name = 1; optional string generateName = 2; optional Time creationTimestamp = 8; }
      message Namespace { optional Meta metadata = 1; }
      message TypeMeta { optional string apiVersion = 1; optional string kind = 2; }
      message Unknown { optional TypeMeta typeMeta = 1; optional bytes raw = 2; }`).root;
    const ns = root.lookupType("Namespace");
    const raw = ns.encode(ns.fromObject({ metadata: { name: "team-a", generateName: "", creationTimestamp: { seconds: 0 } } })).finish();
    const unknown = root.lookupType("Unknown");
    const body = Buffer.concat([Buffer.from("k8s\0"), unknown.encode(unknown.fromObject({ typeMeta: { apiVersion: "v1", kind: "Namespace" }, raw })).finish()]);
    assert.deepEqual(decodeProtobuf(body), { apiVersion: "v1", kind: "Namespace", metadata: { name: "team-a" } });
  });

  it("carries a self review's extra values and an access review's answer", () => {
    const review = { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview", metadata: {}, status: { userInfo: { username: "alice", groups: ["dev"], extra: { scopes: ["a", "b"] } } } };
    assert.deepEqual(decodeProtobuf(encodeProtobuf(review)), { ...review, metadata: {} });
    const access = {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      metadata: {},
      spec: { resourceAttributes: { namespace: "team-a", verb: "create", group: "slipway.dev", resource: "clusters" } },
      status: { allowed: true, reason: "RBAC: allowed" },
    };
    assert.deepEqual(decodeProtobuf(encodeProtobuf(access)), access);
  });

  it("refuses a body without the envelope (400) and a kind it has no message for (415, naming it)", () => {
    assert.throws(() => decodeProtobuf(Buffer.from("{}")), BadRequestError);
    assert.throws(() => decodeProtobuf(Buffer.from("k8s\0\x0a\x02\x0a")), BadRequestError);
    const root = protobuf.parse(`syntax = "proto2"; message TypeMeta { optional string apiVersion = 1; optional string kind = 2; }
      message Unknown { optional TypeMeta typeMeta = 1; optional bytes raw = 2; }`).root;
    const unknown = root.lookupType("Unknown");
    const pod = Buffer.concat([Buffer.from("k8s\0"), unknown.encode(unknown.fromObject({ typeMeta: { apiVersion: "v1", kind: "Pod" }, raw: Buffer.alloc(0) })).finish()]);
    assert.throws(() => decodeProtobuf(pod), (e: unknown) => e instanceof UnsupportedMediaTypeError && /Pod/.test(e.message));
  });

  it("answers in protobuf only when the client asks for it first, and only for kinds with a message", () => {
    assert.equal(prefersProtobuf("application/vnd.kubernetes.protobuf,application/json"), true);
    assert.equal(prefersProtobuf("application/json, application/vnd.kubernetes.protobuf"), false);
    assert.equal(prefersProtobuf(undefined), false);
    assert.equal(hasProtobuf(secret), true);
    assert.equal(hasProtobuf({ apiVersion: "v1", kind: "NamespaceList" }), true);
    assert.equal(hasProtobuf({ apiVersion: "slipway.dev/v1alpha1", kind: "Cluster" }), false);
    assert.equal(hasProtobuf({ apiVersion: "meta.k8s.io/v1", kind: "Table" }), false);
  });
});
