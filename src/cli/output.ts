// How the CLI prints: aligned columns as kubectl prints them, objects as YAML or JSON, ages and durations.
import { humanAge } from "../api/age.ts";
import { stringify } from "yaml";
import type { ApiResource, KubeObject } from "../kubeclient/index.ts";
import { UsageError } from "./usage.ts";

/** Where commands write; a test passes its own. */
export interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Columns separated by three spaces, each as wide as its widest cell; the last one is not padded. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = columnWidths(headers, rows);
  return [headers, ...rows].map((cells) => tableLine(cells, widths)).join("");
}

/** The width of each column: its widest cell, header included. */
export function columnWidths(headers: readonly string[], rows: readonly (readonly string[])[]): number[] {
  return headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? "").length)));
}

/** One line of a table: cells padded to the columns' widths (wider cells as they are). */
export function tableLine(cells: readonly string[], widths: readonly number[]): string {
  return `${cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("   ").trimEnd()}\n`;
}

/** Time since `since`, as kubectl prints ages: 45s, 3m12s, 5h, 2d. */
export function formatAge(since: string | undefined, now = Date.now()): string {
  return humanAge(since, now);
}

/** How kubectl names a resource in its messages: `cluster.slipway.dev`, or `secret` in the core group. */
export function resourceLabel(resource: Pick<ApiResource, "singularName" | "group">): string {
  return resource.group === "" ? resource.singularName : `${resource.singularName}.${resource.group}`;
}

export const OUTPUT_FORMATS = ["wide", "yaml", "json", "name"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Checks `-o` once, at the edge. */
export function parseOutputFormat(text: string | undefined): OutputFormat | undefined {
  if (text === undefined) return undefined;
  if (!(OUTPUT_FORMATS as readonly string[]).includes(text)) {
    throw new UsageError(`-o must be one of ${OUTPUT_FORMATS.join(", ")} (got "${text}")`);
  }
  return text as OutputFormat;
}

/** An object without its managedFields: bookkeeping kubectl too leaves out unless asked. */
function withoutManagedFields(object: KubeObject): KubeObject {
  if (object.metadata?.managedFields === undefined) return object;
  const { managedFields: _m, ...metadata } = object.metadata;
  return { ...object, metadata };
}

/** One object, or several as a `List`, in YAML or JSON as kubectl prints them. */
export function renderObjects(format: "yaml" | "json", objects: KubeObject | KubeObject[]): string {
  const document = Array.isArray(objects)
    ? { apiVersion: "v1", kind: "List", metadata: { resourceVersion: "" }, items: objects.map(withoutManagedFields) }
    : withoutManagedFields(objects);
  return format === "json" ? `${JSON.stringify(document, null, 4)}\n` : stringify(document, { lineWidth: 0 });
}

/** Cuts a line to the terminal's width, so that redrawing in place never wraps. */
export function fitWidth(line: string, columns: number): string {
  const chars = [...line];
  return chars.length <= columns ? line : `${chars.slice(0, Math.max(0, columns - 1)).join("")}…`;
}
