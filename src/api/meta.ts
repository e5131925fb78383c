// Object metadata and the schema building blocks every kind shares.
import {
  Kind,
  Type,
  TypeRegistry,
  type TSchema,
  type Static,
  type TObject,
  type TProperties,
  type TRecord,
  type TString,
  type TUnsafe,
} from "@sinclair/typebox";
import { GetErrorFunction, SetErrorFunction } from "@sinclair/typebox/errors";

/**
 * A map of string keys to values of one schema. Built as an object with `additionalProperties` (what
 * OpenAPI and kubectl understand, unlike `patternProperties`) and typed as a record.
 */
export function MapOf<T extends TSchema>(value: T, description?: string): TRecord<TString, T> {
  return Type.Object({}, { additionalProperties: value, ...(description ? { description } : {}) }) as unknown as TRecord<
    TString,
    T
  >;
}

const STRING_ENUM_KIND = "StringEnum";
TypeRegistry.Set<{ enum: readonly string[] }>(
  STRING_ENUM_KIND,
  (schema, value) => typeof value === "string" && schema.enum.includes(value),
);
// TypeBox's own message for a registry kind is "Expected kind 'StringEnum'"; name the allowed values instead.
const messageOf = GetErrorFunction();
SetErrorFunction((error) =>
  error.schema[Kind] === STRING_ENUM_KIND
    ? `Expected one of ${(error.schema.enum as string[]).map((v) => JSON.stringify(v)).join(", ")}`
    : messageOf(error),
);

/**
 * A string restricted to a fixed set of values. Its JSON schema is a plain `{type: "string", enum}`, which
 * `kubectl explain` shows and OpenAPI tools understand (a union of literals would become `anyOf`/`const`);
 * TypeBox checks it through its type registry.
 */
export function StringEnum<const V extends readonly [string, ...string[]]>(
  values: V,
  options: { description?: string; default?: V[number] } = {},
): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ [Kind]: STRING_ENUM_KIND, type: "string", enum: [...values], ...options });
}

/** Objects reject unknown fields unless they say otherwise. */
export function Struct<T extends TProperties>(properties: T, options: { description?: string } = {}): TObject<T> {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

/**
 * Schema options of a list whose items are told apart by one field: a map-type list to server-side apply,
 * merged by that key in strategic merge patches (what kubectl apply sends), as kube-apiserver's own lists.
 */
export function keyedBy(key: string) {
  return {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": [key],
    "x-kubernetes-patch-strategy": "merge",
    "x-kubernetes-patch-merge-key": key,
  } as const;
}

/** A field whose contents are free-form (kept as sent). */
export function FreeForm(description: string): TUnsafe<Record<string, unknown>> {
  return Type.Object(
    {},
    { additionalProperties: true, description, "x-kubernetes-preserve-unknown-fields": true },
  ) as unknown as TUnsafe<Record<string, unknown>>;
}

export const OwnerReference = Struct(
  {
    apiVersion: Type.String({ description: "API version of the owner." }),
    kind: Type.String({ description: "Kind of the owner." }),
    name: Type.String({ description: "Name of the owner." }),
    uid: Type.String({ description: "UID of the owner." }),
    controller: Type.Optional(Type.Boolean({ description: "True if the owner is the managing controller." })),
    blockOwnerDeletion: Type.Optional(
      Type.Boolean({ description: "If true, the owner cannot be deleted before this object in foreground deletion." }),
    ),
  },
  { description: "An object that owns this one; when it is deleted, this object is garbage-collected." },
);

export const ManagedFieldsEntry = FreeForm("Field management record (kept as sent).");

export const ObjectMeta = Struct(
  {
    name: Type.Optional(Type.String({ description: "Name, unique within the namespace (or cluster-wide)." })),
    generateName: Type.Optional(Type.String({ description: "Prefix for a server-generated name." })),
    namespace: Type.Optional(Type.String({ description: "Namespace of a namespaced object." })),
    uid: Type.Optional(Type.String({ description: "Unique identifier set by the server." })),
    resourceVersion: Type.Optional(Type.String({ description: "Opaque version for optimistic concurrency and watches." })),
    generation: Type.Optional(Type.Integer({ description: "Sequence number of the desired state (spec)." })),
    creationTimestamp: Type.Optional(Type.String({ description: "When the object was created (RFC 3339)." })),
    deletionTimestamp: Type.Optional(Type.String({ description: "When deletion was requested (RFC 3339)." })),
    deletionGracePeriodSeconds: Type.Optional(Type.Integer({ description: "Grace period of a pending deletion." })),
    labels: Type.Optional(MapOf(Type.String(), "Labels for selection.")),
    annotations: Type.Optional(MapOf(Type.String(), "Annotations: non-identifying metadata.")),
    finalizers: Type.Optional(Type.Array(Type.String(), { description: "Must be empty before the object is removed.", "x-kubernetes-list-type": "set" })),
    ownerReferences: Type.Optional(
      Type.Array(OwnerReference, { description: "Objects this one depends on.", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"] }),
    ),
    managedFields: Type.Optional(Type.Array(ManagedFieldsEntry, { description: "Field management records." })),
    selfLink: Type.Optional(Type.String({ description: "Deprecated; unused." })),
  },
  { description: "Standard object metadata." },
);

export const Condition = Struct(
  {
    type: Type.String({ description: "Type of the condition, e.g. Ready." }),
    status: StringEnum(["True", "False", "Unknown"], { description: "True, False or Unknown." }),
    reason: Type.Optional(Type.String({ description: "One-word CamelCase reason for the last transition." })),
    message: Type.Optional(Type.String({ description: "Human-readable details." })),
    lastTransitionTime: Type.Optional(Type.String({ description: "When the status last changed (RFC 3339)." })),
    observedGeneration: Type.Optional(Type.Integer({ description: "Generation the condition was computed from." })),
  },
  { description: "One aspect of the object's current state." },
);

export type OwnerReferenceT = Static<typeof OwnerReference>;
export type ObjectMetaT = Static<typeof ObjectMeta>;
export type ConditionT = Static<typeof Condition>;

/** What every object the API serves looks like, whatever its kind. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMetaT;
  [field: string]: unknown;
}

/** The TS type of an object of one kind, from the schema of the whole object. */
export type ObjectOf<S extends TSchema> = Static<S> & KubeObject;

/** The schema of a whole object of one kind. */
export function objectSchema<P extends TProperties>(apiVersion: string, kind: string, description: string, properties: P) {
  return Struct(
    {
      apiVersion: Type.Optional(Type.String({ description: `APIVersion: ${apiVersion}.` })),
      kind: Type.Optional(Type.String({ description: `Kind: ${kind}.` })),
      metadata: Type.Optional(ObjectMeta),
      ...properties,
    },
    { description },
  );
}
