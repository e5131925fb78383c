// Server-side printing: `Table` responses (meta.k8s.io/v1) built from a kind's printer columns.
import type { KindDefinition, PrinterColumn } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { humanAge } from "../api/age.ts";

export { humanAge };

export type IncludeObject = "None" | "Metadata" | "Object";

export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface TableRow {
  cells: unknown[];
  object?: unknown;
}

export interface Table {
  kind: "Table";
  apiVersion: "meta.k8s.io/v1";
  metadata: { resourceVersion?: string; continue?: string };
  columnDefinitions: TableColumn[];
  rows: TableRow[];
}

/** True when the Accept header asks for a Table. */
export function wantsTable(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(",").some((part) => {
    const params = part.split(";").map((p) => p.trim());
    return params.includes("as=Table") && params.some((p) => p === "g=meta.k8s.io");
  });
}

/** Reads a simple JSONPath such as `.status.phase` or `.spec.workers[0].name`. */
export function readPath(object: unknown, path: string): unknown {
  const parts = path.replace(/^\{?\.?/, "").replace(/\}$/, "").split(/\.|\[(\d+)\]/).filter((p) => p !== undefined && p !== "");
  let value: unknown = object;
  for (const part of parts) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

const NAME_COLUMN: PrinterColumn = {
  name: "Name",
  type: "string",
  format: "name",
  description: "Name must be unique within a namespace.",
  jsonPath: ".metadata.name",
};

function cell(column: PrinterColumn, object: KubeObject): unknown {
  const raw = column.value ? column.value(object) : readPath(object, column.jsonPath);
  if (column.type === "date") return humanAge(typeof raw === "string" ? raw : undefined);
  if (raw === undefined || raw === null) return column.type === "string" ? "" : null;
  if (typeof raw === "object") return JSON.stringify(raw);
  return raw;
}

function partialMetadata(object: KubeObject): unknown {
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata };
}

export function columnsOf(def: KindDefinition): PrinterColumn[] {
  const columns = def.printerColumns.filter((c) => c.name.toLowerCase() !== "name");
  return [NAME_COLUMN, ...columns];
}

export function toTable(
  def: KindDefinition,
  objects: KubeObject[],
  options: { includeObject?: IncludeObject; resourceVersion?: string; continue?: string; withColumns?: boolean },
): Table {
  const columns = columnsOf(def);
  const include = options.includeObject ?? "Metadata";
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: {
      ...(options.resourceVersion ? { resourceVersion: options.resourceVersion } : {}),
      ...(options.continue ? { continue: options.continue } : {}),
    },
    columnDefinitions:
      options.withColumns === false
        ? []
        : columns.map((c) => ({
            name: c.name,
            type: c.type === "date" ? "string" : c.type,
            format: c.format ?? "",
            description: c.description,
            priority: c.priority ?? 0,
          })),
    rows: objects.map((o) => ({
      cells: columns.map((c) => cell(c, o)),
      ...(include === "None" ? {} : { object: include === "Object" ? o : partialMetadata(o) }),
    })),
  };
}
