// Checks objects against their kind's schema: defaults, unknown fields (strict or pruned) and field
// errors phrased as the Kubernetes API phrases them.
import { Kind, Type, type TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import type { FieldError, KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";

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

const defaulting = new WeakMap<TSchema, TSchema>();

/** Applies the schema's defaults to the value (mutating it where it can), as Value.Default does. */
export function applyDefaults(schema: TSchema, value: unknown): unknown {
  let reduced = defaulting.get(schema);
  if (!reduced) {
    reduced = reducedForDefaults(schema);
    defaulting.set(schema, reduced);
  }
  return Value.Default(reduced, value);
}

/** "/spec/workers/0/name" → "spec.workers[0].name" */
export function fieldPath(pointer: string): string {
  let out = "";
  for (const raw of pointer.split("/").slice(1)) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else out += out === "" ? part : `.${part}`;
  }
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

export interface Admitted {
  warnings: string[];
  errors: FieldError[];
}

/**
 * Applies schema defaults and the kind's defaults hook, then validates the schema and the kind's rules.
 * Mutates `object` (defaults, pruning).
 */
export function admit(def: KindDefinition, object: KubeObject, old: KubeObject | undefined, mode: FieldValidation): Admitted {
  const warnings: string[] = [];
  if (mode !== "Strict") {
    const dropped = pruneUnknownFields(def.schema, object);
    if (mode === "Warn") warnings.push(...dropped.map((f) => `unknown field "${f}"`));
  }
  const defaulted = applyDefaults(def.schema, object) as KubeObject;
  if (defaulted !== object) Object.assign(object, defaulted);
  const errors = schemaErrors(def.schema, object);
  if (errors.length === 0 && def.defaults) def.defaults(object);
  if (errors.length === 0 && def.validate) errors.push(...def.validate(object, old));
  return { warnings, errors };
}
