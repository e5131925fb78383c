// How a kind's schema says its values merge, read from the same JSON schema that validates them and
// that OpenAPI publishes: `x-kubernetes-list-type` (atomic — the default —, set, or map with
// `x-kubernetes-list-map-keys`) and `x-kubernetes-map-type` (granular — the default — or atomic).
// Where the schema says nothing (free-form fields), objects are granular and lists atomic, as
// Kubernetes deduces for fields that preserve unknown fields.

type Schema = Record<string, unknown>;

export type Shape =
  | { kind: "scalar" }
  | { kind: "atomic" }
  | { kind: "struct"; fields: Record<string, Schema>; elements: Schema | undefined }
  | { kind: "set"; items: Schema }
  | { kind: "map-list"; items: Schema; keys: string[] };

/** What a value without a schema is: a granular map of values without schemas. */
const FREE: Schema = {};

const cache = new WeakMap<Schema, Shape>();

export function shapeOf(schema: Schema | undefined, sample?: unknown): Shape {
  const s = schema ?? FREE;
  if (s === FREE || (!s.type && !s.properties && !s.items && !s.anyOf && !s.oneOf && !s.allOf)) return deduced(sample);
  const cached = cache.get(s);
  if (cached) return cached;
  const shape = read(s, sample);
  // A union's shape depends on the value it describes; only plain schemas are cached.
  if (!s.anyOf && !s.oneOf) cache.set(s, shape);
  return shape;
}

function deduced(sample: unknown): Shape {
  if (Array.isArray(sample)) return { kind: "atomic" };
  if (typeof sample === "object" && sample !== null) return { kind: "struct", fields: {}, elements: FREE };
  return { kind: "scalar" };
}

function read(s: Schema, sample: unknown): Shape {
  const variants = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (variants) {
    const fitting = variants.find((v) => fits(v, sample)) ?? variants[0];
    return shapeOf(fitting, sample);
  }
  const allOf = s.allOf as Schema[] | undefined;
  if (allOf && allOf.length > 0) return shapeOf({ ...allOf.reduce((a, b) => ({ ...a, ...b }), {}), allOf: undefined }, sample);
  if (s.type === "array") {
    const items = (s.items as Schema | undefined) ?? FREE;
    const listType = s["x-kubernetes-list-type"];
    if (listType === "set") return { kind: "set", items };
    if (listType === "map") return { kind: "map-list", items, keys: (s["x-kubernetes-list-map-keys"] as string[] | undefined) ?? [] };
    return { kind: "atomic" };
  }
  if (s.type === "object" || s.properties) {
    if (s["x-kubernetes-map-type"] === "atomic") return { kind: "atomic" };
    const additional = s.additionalProperties;
    const elements = additional === true || s["x-kubernetes-preserve-unknown-fields"] === true ? FREE : typeof additional === "object" && additional !== null ? (additional as Schema) : undefined;
    return { kind: "struct", fields: (s.properties as Record<string, Schema> | undefined) ?? {}, elements };
  }
  return { kind: "scalar" };
}

function fits(s: Schema, sample: unknown): boolean {
  if (Array.isArray(sample)) return s.type === "array";
  if (typeof sample === "object" && sample !== null) return s.type === "object" || s.properties !== undefined;
  return s.type !== "array" && s.type !== "object";
}

/** The schema of a struct's field (undefined for a field it does not declare and has no elements for). */
export function fieldSchema(shape: Shape & { kind: "struct" }, name: string): { schema: Schema | undefined; declared: boolean } {
  const declared = Object.hasOwn(shape.fields, name) ? shape.fields[name] : undefined;
  return declared ? { schema: declared, declared: true } : { schema: shape.elements, declared: false };
}
