// Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for the built-in kinds Slipway
// serves. kubectl from 1.32 sends typed objects this way (create namespace, create secret, create token,
// auth can-i …) and asks for protobuf answers, with JSON as its fallback. The envelope is the four bytes
// "k8s\0" and a runtime.Unknown message (type meta + the object's own message); the messages below carry
// the field numbers of Kubernetes' generated.proto files for the fields these kinds have. Objects are
// converted from and to their JSON form, so everything behind the routes sees JSON as before.
import protobuf from "protobufjs";
import { BadRequestError, UnsupportedMediaTypeError } from "./errors.ts";

export const PROTOBUF = "application/vnd.kubernetes.protobuf";
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

const SCHEMA = `
syntax = "proto2";
package k8s;

message TypeMeta { optional string apiVersion = 1; optional string kind = 2; }
message Unknown { optional TypeMeta typeMeta = 1; optional bytes raw = 2; optional string contentEncoding = 3; optional string contentType = 4; }

message Time { optional int64 seconds = 1; optional int32 nanos = 2; }
message FieldsV1 { optional bytes Raw = 1; }
message OwnerReference {
  optional string kind = 1; optional string name = 3; optional string uid = 4; optional string apiVersion = 5;
  optional bool controller = 6; optional bool blockOwnerDeletion = 7;
}
message ManagedFieldsEntry {
  optional string manager = 1; optional string operation = 2; optional string apiVersion = 3; optional Time time = 4;
  optional string fieldsType = 6; optional FieldsV1 fieldsV1 = 7; optional string subresource = 8;
}
message ObjectMeta {
  optional string name = 1; optional string generateName = 2; optional string namespace = 3; optional string selfLink = 4;
  optional string uid = 5; optional string resourceVersion = 6; optional int64 generation = 7;
  optional Time creationTimestamp = 8; optional Time deletionTimestamp = 9; optional int64 deletionGracePeriodSeconds = 10;
  map<string, string> labels = 11; map<string, string> annotations = 12;
  repeated OwnerReference ownerReferences = 13; repeated string finalizers = 14; repeated ManagedFieldsEntry managedFields = 17;
}
message ListMeta { optional string selfLink = 1; optional string resourceVersion = 2; optional string continue = 3; optional int64 remainingItemCount = 4; }
message StatusCause { optional string reason = 1; optional string message = 2; optional string field = 3; }
message StatusDetails {
  optional string name = 1; optional string group = 2; optional string kind = 3; repeated StatusCause causes = 4;
  optional int32 retryAfterSeconds = 5; optional string uid = 6;
}
message Status {
  optional ListMeta metadata = 1; optional string status = 2; optional string message = 3; optional string reason = 4;
  optional StatusDetails details = 5; optional int32 code = 6;
}
message LabelSelectorRequirement { optional string key = 1; optional string operator = 2; repeated string values = 3; }
message LabelSelector { map<string, string> matchLabels = 1; repeated LabelSelectorRequirement matchExpressions = 2; }
message FieldSelectorRequirement { optional string key = 1; optional string operator = 2; repeated string values = 3; }

message NamespaceSpec { repeated string finalizers = 1; }
message NamespaceCondition { optional string type = 1; optional string status = 2; optional Time lastTransitionTime = 4; optional string reason = 5; optional string message = 6; }
message NamespaceStatus { optional string phase = 1; repeated NamespaceCondition conditions = 2; }
message Namespace { optional ObjectMeta metadata = 1; optional NamespaceSpec spec = 2; optional NamespaceStatus status = 3; }
message NamespaceList { optional ListMeta metadata = 1; repeated Namespace items = 2; }
message Secret { optional ObjectMeta metadata = 1; map<string, bytes> data = 2; optional string type = 3; map<string, string> stringData = 4; optional bool immutable = 5; }
message SecretList { optional ListMeta metadata = 1; repeated Secret items = 2; }
message ConfigMap { optional ObjectMeta metadata = 1; map<string, string> data = 2; map<string, bytes> binaryData = 3; optional bool immutable = 4; }
message ConfigMapList { optional ListMeta metadata = 1; repeated ConfigMap items = 2; }
message ObjectReference {
  optional string kind = 1; optional string namespace = 2; optional string name = 3; optional string uid = 4;
  optional string apiVersion = 5; optional string resourceVersion = 6; optional string fieldPath = 7;
}
message LocalObjectReference { optional string name = 1; }
message ServiceAccount { optional ObjectMeta metadata = 1; repeated ObjectReference secrets = 2; repeated LocalObjectReference imagePullSecrets = 3; optional bool automountServiceAccountToken = 4; }
message ServiceAccountList { optional ListMeta metadata = 1; repeated ServiceAccount items = 2; }

message BoundObjectReference { optional string kind = 1; optional string apiVersion = 2; optional string name = 3; optional string uID = 4; }
message TokenRequestSpec { repeated string audiences = 1; optional BoundObjectReference boundObjectRef = 3; optional int64 expirationSeconds = 4; }
message TokenRequestStatus { optional string token = 1; optional Time expirationTimestamp = 2; }
message TokenRequest { optional ObjectMeta metadata = 1; optional TokenRequestSpec spec = 2; optional TokenRequestStatus status = 3; }
message ExtraValue { repeated string items = 1; }
message UserInfo { optional string username = 1; optional string uid = 2; repeated string groups = 3; map<string, ExtraValue> extra = 4; }
message SelfSubjectReviewStatus { optional UserInfo userInfo = 1; }
message SelfSubjectReview { optional ObjectMeta metadata = 1; optional SelfSubjectReviewStatus status = 2; }

message FieldSelectorAttributes { optional string rawSelector = 1; repeated FieldSelectorRequirement requirements = 2; }
message LabelSelectorAttributes { optional string rawSelector = 1; repeated LabelSelectorRequirement requirements = 2; }
message ResourceAttributes {
  optional string namespace = 1; optional string verb = 2; optional string group = 3; optional string version = 4;
  optional string resource = 5; optional string subresource = 6; optional string name = 7;
  optional FieldSelectorAttributes fieldSelector = 8; optional LabelSelectorAttributes labelSelector = 9;
}
message NonResourceAttributes { optional string path = 1; optional string verb = 2; }
message SelfSubjectAccessReviewSpec { optional ResourceAttributes resourceAttributes = 1; optional NonResourceAttributes nonResourceAttributes = 2; }
message SubjectAccessReviewStatus { optional bool allowed = 1; optional string reason = 2; optional string evaluationError = 3; optional bool denied = 4; }
message SelfSubjectAccessReview { optional ObjectMeta metadata = 1; optional SelfSubjectAccessReviewSpec spec = 2; optional SubjectAccessReviewStatus status = 3; }
message SelfSubjectRulesReviewSpec { optional string namespace = 1; }
message ResourceRule { repeated string verbs = 1; repeated string apiGroups = 2; repeated string resources = 3; repeated string resourceNames = 4; }
message NonResourceRule { repeated string verbs = 1; repeated string nonResourceURLs = 2; }
message SubjectRulesReviewStatus { repeated ResourceRule resourceRules = 1; repeated NonResourceRule nonResourceRules = 2; optional bool incomplete = 3; optional string evaluationError = 4; }
message SelfSubjectRulesReview { optional ObjectMeta metadata = 1; optional SelfSubjectRulesReviewSpec spec = 2; optional SubjectRulesReviewStatus status = 3; }

message PolicyRule { repeated string verbs = 1; repeated string apiGroups = 2; repeated string resources = 3; repeated string resourceNames = 4; repeated string nonResourceURLs = 5; }
message AggregationRule { repeated LabelSelector clusterRoleSelectors = 1; }
message Role { optional ObjectMeta metadata = 1; repeated PolicyRule rules = 2; }
message RoleList { optional ListMeta metadata = 1; repeated Role items = 2; }
message ClusterRole { optional ObjectMeta metadata = 1; repeated PolicyRule rules = 2; optional AggregationRule aggregationRule = 3; }
message ClusterRoleList { optional ListMeta metadata = 1; repeated ClusterRole items = 2; }
message Subject { optional string kind = 1; optional string apiGroup = 2; optional string name = 3; optional string namespace = 4; }
message RoleRef { optional string apiGroup = 1; optional string kind = 2; optional string name = 3; }
message RoleBinding { optional ObjectMeta metadata = 1; repeated Subject subjects = 2; optional RoleRef roleRef = 3; }
message RoleBindingList { optional ListMeta metadata = 1; repeated RoleBinding items = 2; }
message ClusterRoleBinding { optional ObjectMeta metadata = 1; repeated Subject subjects = 2; optional RoleRef roleRef = 3; }
message ClusterRoleBindingList { optional ListMeta metadata = 1; repeated ClusterRoleBinding items = 2; }
`;

const root = protobuf.parse(SCHEMA, { keepCase: true }).root.resolveAll();
const UnknownMessage = root.lookupType("k8s.Unknown");

/** The kinds with a message, by "apiVersion/kind". */
const KINDS: Record<string, string> = {
  "v1/Status": "Status",
  ...Object.fromEntries(["Namespace", "Secret", "ConfigMap", "ServiceAccount"].flatMap((k) => [[`v1/${k}`, k], [`v1/${k}List`, `${k}List`]])),
  "authentication.k8s.io/v1/TokenRequest": "TokenRequest",
  "authentication.k8s.io/v1/SelfSubjectReview": "SelfSubjectReview",
  "authorization.k8s.io/v1/SelfSubjectAccessReview": "SelfSubjectAccessReview",
  "authorization.k8s.io/v1/SelfSubjectRulesReview": "SelfSubjectRulesReview",
  ...Object.fromEntries(
    ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"].flatMap((k) => [
      [`rbac.authorization.k8s.io/v1/${k}`, k],
      [`rbac.authorization.k8s.io/v1/${k}List`, `${k}List`],
    ]),
  ),
};

function messageOf(apiVersion: unknown, kind: unknown): protobuf.Type | undefined {
  const name = KINDS[`${String(apiVersion)}/${String(kind)}`];
  return name ? root.lookupType(`k8s.${name}`) : undefined;
}

/** Whether an object of this kind can be sent as protobuf. */
export function hasProtobuf(object: unknown): boolean {
  return typeof object === "object" && object !== null && messageOf((object as Json).apiVersion, (object as Json).kind) !== undefined;
}

type Json = Record<string, unknown>;

function rfc3339(time: Json): string {
  const millis = Number(time.seconds ?? 0) * 1000;
  return new Date(millis).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * A decoded message (protobufjs' plain form) in the object's JSON form. Go writes every field that is not
 * a pointer, empty or not; empty strings and zero times are what its JSON leaves out (omitempty), so they
 * are left out here too.
 */
function toJson(type: protobuf.Type, message: Json): Json {
  const out: Json = {};
  for (const [name, value] of Object.entries(message)) {
    const field = type.fields[name];
    const nested = field?.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    if (value === "" || (nested?.name === "Time" && !field!.repeated && !Number((value as Json).seconds ?? 0))) continue;
    if (!field || !nested) {
      out[name] = value;
      continue;
    }
    const convert = (v: unknown): unknown => {
      if (nested.name === "Time") return rfc3339(v as Json);
      if (nested.name === "FieldsV1") return JSON.parse(Buffer.from(String((v as Json).Raw ?? ""), "base64").toString("utf8") || "{}") as unknown;
      if (nested.name === "ExtraValue") return (v as Json).items ?? [];
      return toJson(nested, v as Json);
    };
    if (field.map) out[name] = Object.fromEntries(Object.entries(value as Json).map(([k, v]) => [k, convert(v)]));
    else if (field.repeated) out[name] = (value as unknown[]).map(convert);
    else out[name] = convert(value);
  }
  return out;
}

/** An object's JSON form in protobufjs' plain form (fields the message does not have are left out). */
function fromJson(type: protobuf.Type, object: Json): Json {
  const out: Json = {};
  for (const [name, value] of Object.entries(object)) {
    const field = type.fields[name];
    if (!field || value === null || value === undefined) continue;
    const nested = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    const convert = (v: unknown): unknown => {
      if (!nested) return v;
      if (nested.name === "Time") return { seconds: Math.floor(Date.parse(String(v)) / 1000), nanos: 0 };
      if (nested.name === "FieldsV1") return { Raw: Buffer.from(JSON.stringify(v)) };
      if (nested.name === "ExtraValue") return { items: v };
      return fromJson(nested, v as Json);
    };
    if (field.map) out[name] = Object.fromEntries(Object.entries(value as Json).map(([k, v]) => [k, convert(v)]));
    else if (field.repeated) out[name] = (value as unknown[]).map(convert);
    else out[name] = convert(value);
  }
  return out;
}

/** Decodes a request body sent as protobuf into the object's JSON form. */
export function decodeProtobuf(body: Buffer): Json {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new BadRequestError('the protobuf body does not start with the Kubernetes envelope ("k8s\\0")');
  }
  let envelope: Json;
  try {
    envelope = UnknownMessage.toObject(UnknownMessage.decode(body.subarray(MAGIC.length)), { bytes: Buffer }) as Json;
  } catch (e) {
    throw new BadRequestError(`the protobuf body cannot be read: ${(e as Error).message}`);
  }
  const typeMeta = (envelope.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  const type = messageOf(typeMeta.apiVersion, typeMeta.kind);
  if (!type) throw new UnsupportedMediaTypeError(`${PROTOBUF} for ${typeMeta.kind ?? "an object"} of ${typeMeta.apiVersion ?? "no API version"} (send it as JSON)`);
  let message: Json;
  try {
    message = type.toObject(type.decode((envelope.raw as Buffer | undefined) ?? Buffer.alloc(0)), { longs: Number, bytes: String }) as Json;
  } catch (e) {
    throw new BadRequestError(`the protobuf body of ${typeMeta.kind} cannot be read: ${(e as Error).message}`);
  }
  return { apiVersion: typeMeta.apiVersion, kind: typeMeta.kind, ...toJson(type, message) };
}

/** Encodes an object of a kind with a message (see hasProtobuf) in the Kubernetes envelope. */
export function encodeProtobuf(object: Json): Buffer {
  const type = messageOf(object.apiVersion, object.kind)!;
  const raw = type.encode(type.fromObject(fromJson(type, object))).finish();
  const envelope = UnknownMessage.encode(UnknownMessage.fromObject({ typeMeta: { apiVersion: object.apiVersion, kind: object.kind }, raw })).finish();
  return Buffer.concat([MAGIC, envelope]);
}

/** Whether the client asks for protobuf first (kubectl: `application/vnd.kubernetes.protobuf,application/json`). */
export function prefersProtobuf(accept: string | undefined): boolean {
  return (accept ?? "").split(",")[0]!.split(";")[0]!.trim().toLowerCase() === PROTOBUF;
}
