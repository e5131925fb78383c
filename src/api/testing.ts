// Helpers for the kinds' tests: write an object of a kind as a user does, admit it the way the API
// server does (schema defaults, schema check, the kind's defaults hook, the kind's validation) and read
// printer-column cells.
import assert from "node:assert/strict";
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import type { FieldError, KindDefinition, PrinterColumn } from "./registry.ts";
import type { KubeObject } from "./meta.ts";

const compiled = new Map<TSchema, TypeCheck<TSchema>>();

/** Schema errors as [JSON pointer, message], the first per path: ["/spec/workers/0/replicas", "Expected integer"]. */
export function schemaErrors(schema: TSchema, value: unknown): [string, string][] {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  const byPath = new Map<string, string>();
  for (const e of check.Errors(value)) if (!byPath.has(e.path)) byPath.set(e.path, e.message);
  return [...byPath.entries()];
}

export interface Admission<T> {
  object: T;
  schemaErrors: [string, string][];
  errors: FieldError[];
}

/** Admits a copy of `input` as a create (or an update when `old` is given). */
export function admit<T extends KubeObject>(kind: KindDefinition<T>, input: unknown, old?: T): Admission<T> {
  const object = Value.Default(kind.schema, structuredClone(input)) as T;
  const problems = schemaErrors(kind.schema, object);
  if (problems.length > 0) return { object, schemaErrors: problems, errors: [] };
  kind.defaults?.(object);
  return { object, schemaErrors: [], errors: kind.validate?.(object, old) ?? [] };
}

/** Admits `input` (as `admit`), asserting that neither the schema nor the kind's validation refuses it; the object admitted. */
export function admitted<T extends KubeObject>(kind: KindDefinition<T>, input: unknown, old?: T): T {
  const { object, schemaErrors, errors } = admit(kind, input, old);
  assert.deepEqual([schemaErrors, errors], [[], []]);
  return object;
}

/** An object of `kind` as a user writes it: its apiVersion and kind, `name` (in namespace "default" where the kind is namespaced) and `spec`. */
export function manifest<T extends KubeObject>(kind: KindDefinition<T>, name: string, spec: unknown): T {
  const apiVersion = kind.group ? `${kind.group}/${kind.version}` : kind.version;
  return { apiVersion, kind: kind.kind, metadata: { name, ...(kind.namespaced ? { namespace: "default" } : {}) }, spec } as unknown as T;
}

/** Reads a simple JSONPath such as ".status.phase". */
function readPath(object: unknown, jsonPath: string): unknown {
  let value: unknown = object;
  for (const key of jsonPath.split(".").slice(1)) {
    value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  }
  return value;
}

/** The cell a table shows for `column` of `object`. */
export function cell<T extends KubeObject>(kind: KindDefinition<T>, columnName: string, object: T): unknown {
  const column: PrinterColumn | undefined = kind.printerColumns.find((c) => c.name === columnName);
  if (!column) throw new Error(`${kind.kind} has no column ${columnName}`);
  return column.value ? column.value(object) : readPath(object, column.jsonPath);
}
