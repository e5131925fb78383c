// Checks objects against their kind's schema: defaults, unknown fields (strict or pruned) and field
// errors phrased as the Kubernetes API phrases them. The first two admission plugins: Defaulting
// (mutate) and Validation (validate).
import { Kind, Type, type TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import type { FieldError } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import type { AdmissionPlugin } from "./admission.ts";
import { InvalidError, refOf } from "./errors.ts";
import { invalid } from "../api/field-errors.ts";
import "../api/formats.ts";
import { nodeLabelErrors, qualifiedNameProblem } from "../api/slipway/nodes.ts";

export type FieldValidation = "Strict" | "Warn" | "Ignore";

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

function checker(schema: TSchema): TypeCheck<TSchema> {
  let c = compiled.get(schema);
  if (!c) {
    c = TypeCompiler.Compile(schema);
    compiled.set(schema, c);
  }
  return c;
}

/** Whether the schema, or any schema inside it, carries a default. */
function hasDefaults(schema: unknown): boolean {
  if (typeof schema !== "object" || schema === null) return false;
  const s = schema as Record<string, unknown>;
  if ("default" in s) return true;
  const children = [
    ...Object.values((s.properties as object | undefined) ?? {}),
    ...Object.values((s.patternProperties as object | undefined) ?? {}),
    s.items,
    s.additionalProperties,
    ...((s.anyOf as unknown[] | undefined) ?? []),
    ...((s.allOf as unknown[] | undefined) ?? []),
  ];
  return children.some(hasDefaults);
}

/**
 * The schema reduced to the parts that carry defaults: whatever holds none becomes Unknown, which
 * Value.Default leaves as it is. Defaulting walks the whole object otherwise — status included, and
 * twice per level (typebox visits each property twice) — for the few defaults that live in a spec.
 */
function reducedForDefaults(schema: TSchema): TSchema {
  if (!hasDefaults(schema)) return Type.Unknown();
  if (schema[Kind] === "Object") {
    const properties = Object.fromEntries(Object.entries(schema.properties as Record<string, TSchema>).map(([k, v]) => [k, reducedForDefaults(v)]));
    return { ...schema, properties };
  }
  if (schema[Kind] === "Array") return { ...schema, items: reducedForDefaults(schema.items as TSchema) };
  return schema; // unions, records and the like keep their full schema: their defaults depend on it
}

const reducedSchemas = new WeakMap<TSchema, TSchema>();
const reducedStatusSchemas = new WeakMap<TSchema, TSchema>();

/** An object's schema with every property but its status taken as Unknown (no defaults there). */
function statusOnly(schema: TSchema): TSchema {
  if (schema[Kind] !== "Object") return schema;
  const properties = Object.fromEntries(Object.entries(schema.properties as Record<string, TSchema>).map(([k, v]) => [k, k === "status" ? v : Type.Unknown()]));
  return { ...schema, properties };
}

/**
 * Applies the schema's defaults to the value (mutating it where it can), as Value.Default does. With
 * `statusOnly`, only those of its status: a write of the status subresource changes nothing else, and
 * the rest was defaulted when it was written.
 */
export function applyDefaults(schema: TSchema, value: unknown, options: { statusOnly?: boolean } = {}): unknown {
  const cache = options.statusOnly ? reducedStatusSchemas : reducedSchemas;
  let reduced = cache.get(schema);
  if (!reduced) {
    reduced = reducedForDefaults(options.statusOnly ? statusOnly(schema) : schema);
    cache.set(schema, reduced);
  }
  return Value.Default(reduced, value);
}

/** "/spec/workers/0/name" → "spec.workers[0].name" */
export function fieldPath(pointer: string): string {
  return fieldPathOf(pointer.split("/").slice(1).map((raw) => {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    return /^\d+$/.test(part) ? Number(part) : part;
  }));
}

/** ["spec", "workers", 0, "name"] → "spec.workers[0].name": list indexes are numbers. */
export function fieldPathOf(steps: readonly (string | number)[]): string {
  let out = "";
  for (const step of steps) out += typeof step === "number" ? `[${step}]` : out === "" ? step : `.${step}`;
  return out;
}

function literalValues(schema: TSchema): string[] | undefined {
  const options = (schema as { anyOf?: TSchema[] }).anyOf;
  if (!options || !options.every((o) => "const" in o)) return undefined;
  return options.map((o) => JSON.stringify((o as unknown as { const: unknown }).const));
}

function show(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? "null" : text.length > 80 ? text.slice(0, 77) + "..." : text;
}

const UNEXPECTED_PROPERTY = 42;
const REQUIRED_PROPERTY = 45;

/** Schema errors, one per field, in the API's wording. */
export function schemaErrors(schema: TSchema, value: unknown): FieldError[] {
  const c = checker(schema);
  if (c.Check(value)) return [];
  const byField = new Map<string, FieldError>();
  for (const e of c.Errors(value)) {
    const field = fieldPath(e.path);
    if (byField.has(field)) continue;
    let error: FieldError;
    if (e.type === UNEXPECTED_PROPERTY) {
      const name = field.split(".").pop() ?? field;
      error = { field, reason: "FieldValueNotSupported", message: `unknown field "${name}"` };
    } else if (e.type === REQUIRED_PROPERTY) {
      error = { field, reason: "FieldValueRequired", message: "Required value" };
    } else {
      const literals = literalValues(e.schema);
      error = literals
        ? { field, reason: "FieldValueNotSupported", message: `Unsupported value: ${show(e.value)}: supported values: ${literals.join(", ")}` }
        : { field, reason: "FieldValueInvalid", message: `Invalid value: ${show(e.value)}: ${e.message.replace(/^Expected/, "expected")}` };
    }
    byField.set(field, error);
  }
  return [...byField.values()];
}

/** Drops fields the schema does not know (fieldValidation=Ignore); returns the paths dropped. */
export function pruneUnknownFields(schema: TSchema, value: unknown, path = ""): string[] {
  const dropped: string[] = [];
  if (Array.isArray(value)) {
    const items = (schema as { items?: TSchema }).items;
    if (items) value.forEach((v, i) => dropped.push(...pruneUnknownFields(items, v, `${path}[${i}]`)));
    return dropped;
  }
  if (typeof value !== "object" || value === null) return dropped;
  const s = schema as { properties?: Record<string, TSchema>; additionalProperties?: boolean | TSchema };
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const child = path === "" ? key : `${path}.${key}`;
    const sub = s.properties?.[key];
    if (sub) dropped.push(...pruneUnknownFields(sub, record[key], child));
    else if (typeof s.additionalProperties === "object") dropped.push(...pruneUnknownFields(s.additionalProperties, record[key], child));
    else if (s.additionalProperties === false) {
      delete record[key];
      dropped.push(child);
    }
  }
  return dropped;
}

/**
 * The first admission plugin: fields the schema does not know are refused (Strict), dropped with a
 * warning (Warn) or dropped (Ignore); the schema's defaults are applied; an object that does not match
 * its schema is refused with every field named; then the kind's defaults hook fills the rest.
 */
export const defaulting: AdmissionPlugin = {
  name: "Defaulting",
  mutate(request) {
    const { def, object } = request;
    if (request.fieldValidation !== "Strict") {
      const dropped = pruneUnknownFields(def.schema, object);
      if (request.fieldValidation === "Warn") request.warnings.push(...dropped.map((f) => `unknown field "${f}"`));
    }
    const defaulted = applyDefaults(def.schema, object, { statusOnly: request.request.resource.subresource === "status" }) as KubeObject;
    if (defaulted !== object) Object.assign(object, defaulted);
    const errors = schemaErrors(def.schema, object);
    if (errors.length > 0) throw new InvalidError(refOf(def, object.metadata.name), errors);
    def.defaults?.(object);
  },
};

/** Label keys and values, and annotation keys, as Kubernetes checks them for every kind. */
function metadataErrors(object: KubeObject): FieldError[] {
  const errors = nodeLabelErrors("metadata.labels", object.metadata.labels);
  for (const key of Object.keys(object.metadata.annotations ?? {})) {
    const problem = qualifiedNameProblem(key);
    if (problem) errors.push(invalid("metadata.annotations", key, problem));
  }
  return errors;
}

/** Every kind's metadata rules, then the kind's static validation (immutable fields on update among it). */
export const validation: AdmissionPlugin = {
  name: "Validation",
  validate(request) {
    if (request.operation === "DELETE") return;
    const errors = [...metadataErrors(request.object), ...(request.def.validate?.(request.object, request.oldObject) ?? [])];
    if (errors.length > 0) throw new InvalidError(refOf(request.def, request.object.metadata.name), errors);
  },
};
