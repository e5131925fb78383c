// Printer columns shared by several kinds.
import type { KubeObject } from "./meta.ts";
import type { PrinterColumn } from "./registry.ts";

/** AGE: rendered from the creation time, like kubectl's own AGE column. */
export const ageColumn: PrinterColumn = {
  name: "AGE",
  type: "date",
  jsonPath: ".metadata.creationTimestamp",
  description: "Time since the object was created.",
};

/** A column read straight from the object at `jsonPath`. */
export function fieldColumn(
  name: string,
  jsonPath: string,
  description: string,
  options: { type?: PrinterColumn["type"]; priority?: number } = {},
): PrinterColumn {
  return { name, type: options.type ?? "string", jsonPath, description, ...(options.priority ? { priority: options.priority } : {}) };
}

/** A column computed from the object where a plain path cannot say it (e.g. "2/3", "kind/name"); `jsonPath` names what it reads. */
export function computedColumn<T extends KubeObject = KubeObject>(
  name: string,
  jsonPath: string,
  description: string,
  value: (object: T) => string | number | boolean | undefined,
  options: { type?: PrinterColumn["type"]; priority?: number; readsClock?: boolean } = {},
): PrinterColumn {
  return { ...fieldColumn(name, jsonPath, description, options), value: (o) => value(o as T), ...(options.readsClock ? { readsClock: true } : {}) };
}

/** "ready/desired", as in kubectl's READY column. */
export function readyOfDesired(ready: number | undefined, desired: number | undefined): string {
  return `${ready ?? 0}/${desired ?? 0}`;
}

/** An integer column of a count read from the object, 0 while its status does not say yet (as kubectl shows a Deployment's). */
export function countColumn<T extends KubeObject>(name: string, jsonPath: string, description: string, read: (object: T) => number | undefined): PrinterColumn {
  return { name, type: "integer", jsonPath, description, value: (o) => read(o as T) ?? 0 };
}
