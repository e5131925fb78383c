// The core v1 kinds Slipway serves beside its own: Namespace, Secret, ConfigMap, Event and ServiceAccount
// (the identity a program acts as, with tokens from its `token` subresource).
import { isDeepStrictEqual } from "node:util";
import { Type, type Static } from "@sinclair/typebox";
import { MapOf, StringEnum, Struct, objectSchema, type ObjectOf } from "./meta.ts";
import type { FieldError, KindDefinition, KindStrategy } from "./registry.ts";
import { ageColumn, computedColumn, fieldColumn } from "./columns.ts";
import { dnsLabelErrors, immutable, invalid, objectNameErrors } from "./field-errors.ts";

const CORE = { group: "", version: "v1" } as const;

// ---------------------------------------------------------------------------------------------------------
// Namespace

export const NamespaceSchema = objectSchema("v1", "Namespace", "A scope for names; most objects live in one.", {
  spec: Type.Optional(
    Struct(
      {
        finalizers: Type.Optional(
          Type.Array(Type.String(), { description: "Must be empty before the namespace is removed from storage." }),
        ),
      },
      { description: "Desired state of the namespace." },
    ),
  ),
  status: Type.Optional(
    Struct(
      {
        phase: Type.Optional(
          StringEnum(["Active", "Terminating"], {
            description: "Active, or Terminating while the objects in it are being deleted.",
          }),
        ),
      },
      { description: "Observed state of the namespace." },
    ),
  ),
});
export type NamespaceObject = ObjectOf<typeof NamespaceSchema>;

/** The finalizer in a terminating namespace's spec.finalizers: removed once the namespace is empty. */
export const NAMESPACE_FINALIZER = "kubernetes";

/**
 * A namespace's name is a DNS label; it is Active from its creation; a delete marks it Terminating and
 * holds it with spec.finalizers (not metadata.finalizers) while the objects in it are deleted.
 */
const namespaceStrategy: KindStrategy<NamespaceObject> = {
  validateName: (name) => objectNameErrors(name, "label"),
  prepareForCreate(ns) {
    ns.status = { phase: "Active" };
  },
  prepareForDelete(ns) {
    ns.spec = { ...ns.spec, finalizers: [NAMESPACE_FINALIZER] };
    ns.status = { ...ns.status, phase: "Terminating" };
    return true;
  },
  retainedWhileDeleting: (ns) => (ns.spec?.finalizers ?? []).length > 0,
};

export const namespaceKind: KindDefinition<NamespaceObject> = {
  ...CORE,
  kind: "Namespace",
  plural: "namespaces",
  singular: "namespace",
  shortNames: ["ns"],
  namespaced: false,
  schema: NamespaceSchema,
  description: "A scope for names; most objects live in one.",
  subresources: { status: true },
  printerColumns: [
    { name: "NAME", type: "string", jsonPath: ".metadata.name", description: "Name of the namespace." },
    fieldColumn("STATUS", ".status.phase", "Active or Terminating."),
    ageColumn,
  ],
  strategy: namespaceStrategy,
  defaults(ns) {
    if (!ns.status?.phase) ns.status = { ...ns.status, phase: "Active" };
  },
  validate(ns) {
    return ns.metadata.name === undefined ? [] : dnsLabelErrors("metadata.name", ns.metadata.name);
  },
};

// ---------------------------------------------------------------------------------------------------------
// Secret

/** Largest total size of a Secret's data, as in Kubernetes. */
export const MAX_SECRET_BYTES = 1024 * 1024;

export const SecretSchema = objectSchema("v1", "Secret", "Sensitive data: credentials, keys, kubeconfigs.", {
  type: Type.Optional(
    Type.String({
      description: "How the data is used, e.g. Opaque or kubernetes.io/tls. Cannot be changed after creation.",
      default: "Opaque",
    }),
  ),
  data: Type.Optional(
    MapOf(
      Type.String({ description: "Base64-encoded value." }),
      "Secret values, base64-encoded. Keys consist of alphanumerics, '-', '_' or '.'.",
    ),
  ),
  stringData: Type.Optional(
    MapOf(
      Type.String({ description: "Plain-text value." }),
      "Write-only plain-text values, merged into data (replacing keys of the same name) when written; never returned.",
    ),
  ),
  immutable: Type.Optional(
    Type.Boolean({ description: "If true, data and type can no longer be changed (only the Secret deleted)." }),
  ),
});
export type SecretObject = ObjectOf<typeof SecretSchema>;

const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function secretDataErrors(data: Record<string, string>): FieldError[] {
  const errors: FieldError[] = [];
  let bytes = 0;
  for (const [key, value] of Object.entries(data)) {
    const field = `data[${key}]`;
    if (!SECRET_KEY.test(key) || key.length > 253 || key === "." || key === "..") {
      errors.push(invalid(field, key, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"));
    }
    if (!BASE64.test(value)) {
      // The value itself is secret: say what is wrong without echoing it.
      errors.push({ field, reason: "FieldValueInvalid", message: "Invalid value: value is not valid base64" });
    } else {
      bytes += Buffer.byteLength(value, "base64");
    }
  }
  if (bytes > MAX_SECRET_BYTES) {
    errors.push({ field: "data", reason: "TooLong", message: `Too long: must have at most ${MAX_SECRET_BYTES} bytes` });
  }
  return errors;
}

export const secretKind: KindDefinition<SecretObject> = {
  ...CORE,
  kind: "Secret",
  plural: "secrets",
  singular: "secret",
  shortNames: [],
  namespaced: true,
  sensitive: true,
  schema: SecretSchema,
  description: "Sensitive data: credentials, keys, kubeconfigs. Encrypted at rest.",
  subresources: { status: false },
  printerColumns: [
    { name: "NAME", type: "string", jsonPath: ".metadata.name", description: "Name of the secret." },
    fieldColumn("TYPE", ".type", "How the data is used."),
    computedColumn<SecretObject>("DATA", ".data", "Number of keys in data.", (o) => Object.keys(o.data ?? {}).length, { type: "integer" }),
    ageColumn,
  ],
  defaults(secret) {
    if (!secret.type) secret.type = "Opaque";
    if (secret.stringData) {
      const data = { ...secret.data };
      for (const [key, value] of Object.entries(secret.stringData)) data[key] = Buffer.from(value, "utf8").toString("base64");
      secret.data = data;
      delete secret.stringData;
    }
  },
  validate(secret, old) {
    const errors = secretDataErrors(secret.data ?? {});
    if (old) {
      errors.push(...immutable("type", secret.type, old.type));
      if (old.immutable === true) {
        errors.push(...immutable("immutable", secret.immutable, true));
        if (!isDeepStrictEqual(secret.data ?? {}, old.data ?? {})) {
          errors.push({ field: "data", reason: "FieldValueForbidden", message: "Forbidden: field is immutable when `immutable` is set" });
        }
      }
    }
    return errors;
  },
};

// ---------------------------------------------------------------------------------------------------------
// Event

/** A reference to another object, described for the field that holds it. */
export function objectReference(description: string) {
  return Struct(
    {
      kind: Type.Optional(Type.String({ description: "Kind of the referent." })),
      namespace: Type.Optional(Type.String({ description: "Namespace of the referent." })),
      name: Type.Optional(Type.String({ description: "Name of the referent." })),
      uid: Type.Optional(Type.String({ description: "UID of the referent." })),
      apiVersion: Type.Optional(Type.String({ description: "API version of the referent." })),
      resourceVersion: Type.Optional(Type.String({ description: "Resource version of the referent the event is about." })),
      fieldPath: Type.Optional(Type.String({ description: "A part of the referent, e.g. spec.workers[0]." })),
    },
    { description },
  );
}
export type ObjectReference = Static<ReturnType<typeof objectReference>>;

export const EventSchema = objectSchema("v1", "Event", "A report of something that happened to an object.", {
  involvedObject: objectReference("The object this event is about."),
  reason: Type.Optional(Type.String({ description: "Short, machine-readable CamelCase reason, e.g. CreateMachineFailed." })),
  message: Type.Optional(Type.String({ description: "Human-readable description." })),
  source: Type.Optional(
    Struct(
      {
        component: Type.Optional(Type.String({ description: "Component that reported the event." })),
        host: Type.Optional(Type.String({ description: "Host the component runs on." })),
      },
      { description: "Who reported the event." },
    ),
  ),
  firstTimestamp: Type.Optional(Type.String({ description: "When the event was first recorded (RFC 3339)." })),
  lastTimestamp: Type.Optional(Type.String({ description: "When the event was last recorded (RFC 3339)." })),
  count: Type.Optional(Type.Integer({ minimum: 0, description: "How many times the event has occurred." })),
  type: Type.Optional(StringEnum(["Normal", "Warning"], { description: "Normal or Warning." })),
  eventTime: Type.Optional(Type.String({ description: "When the event was first observed (RFC 3339 with microseconds)." })),
  reportingComponent: Type.Optional(Type.String({ description: "Controller that emitted the event, e.g. slipway.dev/cluster-controller." })),
  reportingInstance: Type.Optional(Type.String({ description: "Instance of the controller that emitted the event." })),
  action: Type.Optional(Type.String({ description: "What was done, or failed, regarding the object." })),
  related: Type.Optional(objectReference("A second object involved, if any.")),
});
export type EventObject = ObjectOf<typeof EventSchema>;

export const eventKind: KindDefinition<EventObject> = {
  ...CORE,
  kind: "Event",
  plural: "events",
  singular: "event",
  shortNames: ["ev"],
  namespaced: true,
  schema: EventSchema,
  description: "A report of something that happened to an object.",
  subresources: { status: false },
  printerColumns: [
    computedColumn<EventObject>("LAST SEEN", ".lastTimestamp", "When the event last occurred.", (e) => e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata.creationTimestamp, { type: "date" }),
    fieldColumn("TYPE", ".type", "Normal or Warning."),
    fieldColumn("REASON", ".reason", "Why the event happened."),
    computedColumn<EventObject>("OBJECT", ".involvedObject", "The object the event is about (kind/name).", (o) => {
      const ref = o.involvedObject;
      return `${(ref.kind ?? "").toLowerCase()}/${ref.name ?? ""}`;
    }),
    fieldColumn("MESSAGE", ".message", "What happened."),
  ],
  validate(event) {
    const ns = event.involvedObject.namespace;
    if (ns && event.metadata.namespace && ns !== event.metadata.namespace) {
      return [invalid("involvedObject.namespace", ns, "does not match event.namespace")];
    }
    return [];
  },
  fieldSelectors: {
    "involvedObject.kind": (e) => e.involvedObject.kind,
    "involvedObject.namespace": (e) => e.involvedObject.namespace,
    "involvedObject.name": (e) => e.involvedObject.name,
    "involvedObject.uid": (e) => e.involvedObject.uid,
    "involvedObject.apiVersion": (e) => e.involvedObject.apiVersion,
    "involvedObject.resourceVersion": (e) => e.involvedObject.resourceVersion,
    "involvedObject.fieldPath": (e) => e.involvedObject.fieldPath,
    reason: (e) => e.reason,
    type: (e) => e.type,
    source: (e) => e.source?.component,
    reportingComponent: (e) => e.reportingComponent,
  },
};

// ConfigMap: configuration data, served by the control plane (manifests a ResourceSync delivers) and by
// every workload cluster.
export const ConfigMapSchema = objectSchema("v1", "ConfigMap", "Configuration data for pods to consume, as key-value pairs.", {
  data: Type.Optional(MapOf(Type.String(), "UTF-8 values by key.")),
  binaryData: Type.Optional(MapOf(Type.String(), "Base64-encoded binary values by key.")),
  immutable: Type.Optional(Type.Boolean({ description: "If true, data can no longer be changed (only the ConfigMap deleted)." })),
});
export type ConfigMapObject = ObjectOf<typeof ConfigMapSchema>;

export const configMapKind: KindDefinition<ConfigMapObject> = {
  ...CORE,
  kind: "ConfigMap",
  plural: "configmaps",
  singular: "configmap",
  shortNames: ["cm"],
  namespaced: true,
  schema: ConfigMapSchema,
  description: "Configuration data for pods to consume, as key-value pairs.",
  subresources: { status: false },
  printerColumns: [
    computedColumn<ConfigMapObject>("DATA", ".data", "Number of keys.", (cm) => Object.keys(cm.data ?? {}).length + Object.keys(cm.binaryData ?? {}).length, { type: "integer" }),
    ageColumn,
  ],
  validate(cm, old) {
    if (old?.immutable !== true) return [];
    return [...immutable("immutable", cm.immutable, true), ...immutable("data", cm.data, old.data), ...immutable("binaryData", cm.binaryData, old.binaryData)];
  },
};

// ServiceAccount

const LocalReference = Struct({ name: Type.String({ description: "Name of the referent in the same namespace." }) }, { description: "A reference to an object in the same namespace." });

export const ServiceAccountSchema = objectSchema("v1", "ServiceAccount", "An identity for processes that run in pods.", {
  secrets: Type.Optional(Type.Array(LocalReference, { description: "Secrets holding tokens of this account (legacy)." })),
  imagePullSecrets: Type.Optional(Type.Array(LocalReference, { description: "Secrets used to pull images for pods of this account." })),
  automountServiceAccountToken: Type.Optional(Type.Boolean({ description: "Whether pods mount an API token by default." })),
});
export type ServiceAccountObject = ObjectOf<typeof ServiceAccountSchema>;

export const serviceAccountKind: KindDefinition<ServiceAccountObject> = {
  ...CORE,
  kind: "ServiceAccount",
  plural: "serviceaccounts",
  singular: "serviceaccount",
  shortNames: ["sa"],
  namespaced: true,
  schema: ServiceAccountSchema,
  description: "An identity for processes that run in pods.",
  subresources: { status: false },
  printerColumns: [
    computedColumn<ServiceAccountObject>("SECRETS", ".secrets", "Number of token secrets.", (o) => o.secrets?.length ?? 0, { type: "integer" }),
    ageColumn,
  ],
};
