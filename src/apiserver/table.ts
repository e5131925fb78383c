// Server-side printing: `Table` responses (meta.k8s.io/v1) built from a kind's printer columns.
import type { KindDefinition, PrinterColumn } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { humanAge } from "../api/age.ts";
import { BoundedCache } from "../api/bounded-cache.ts";

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

/** A cell as far as it follows from the object alone: a date column's cell is its time, made an age when sent (renderCell). */
function rawCell(column: PrinterColumn, object: KubeObject): unknown {
  const raw = column.value ? column.value(object) : readPath(object, column.jsonPath);
  if (column.type === "date") return typeof raw === "string" ? raw : undefined;
  if (raw === undefined || raw === null) return column.type === "string" ? "" : null;
  if (typeof raw === "object") return JSON.stringify(raw);
  return raw;
}

function renderCell(column: PrinterColumn, raw: unknown, now: number): unknown {
  return column.type === "date" ? humanAge(raw as string | undefined, now) : raw;
}

function partialMetadata(object: KubeObject): unknown {
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: object.metadata };
}

export function columnsOf(def: KindDefinition): PrinterColumn[] {
  const columns = def.printerColumns.filter((c) => c.name.toLowerCase() !== "name");
  return [NAME_COLUMN, ...columns];
}

interface TableOptions {
  includeObject?: IncludeObject;
  resourceVersion?: string;
  continue?: string;
  withColumns?: boolean;
}

function tableMetadata(options: TableOptions): Table["metadata"] {
  return {
    ...(options.resourceVersion ? { resourceVersion: options.resourceVersion } : {}),
    ...(options.continue ? { continue: options.continue } : {}),
  };
}

function columnDefinitions(def: KindDefinition, options: TableOptions): TableColumn[] {
  if (options.withColumns === false) return [];
  return columnsOf(def).map((c) => ({
    name: c.name,
    type: c.type === "date" ? "string" : c.type,
    format: c.format ?? "",
    description: c.description,
    priority: c.priority ?? 0,
  }));
}

export function toTable(def: KindDefinition, objects: KubeObject[], options: TableOptions): Table {
  const columns = columnsOf(def);
  const include = options.includeObject ?? "Metadata";
  const now = Date.now();
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: tableMetadata(options),
    columnDefinitions: columnDefinitions(def, options),
    rows: objects.map((o) => ({
      cells: columns.map((c) => renderCell(c, rawCell(c, o), now)),
      ...(include === "None" ? {} : { object: include === "Object" ? o : partialMetadata(o) }),
    })),
  };
}

/** The JSON text of a Table up to its first row (toTable's, in the same order), and what closes it. */
export function tableTextHead(def: KindDefinition, options: TableOptions): string {
  return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":${JSON.stringify(tableMetadata(options))},"columnDefinitions":${JSON.stringify(columnDefinitions(def, options))},"rows":[`;
}
export const TABLE_TEXT_TAIL = "]}";

/** What a row keeps of one version of an object: its cells before the clock (rawCell), and its stored metadata. */
export interface KeptRow {
  revision: number;
  cells: unknown[];
  /**
   * The metadata's members as the stored text has them (without resourceVersion, without the braces), a
   * string of its own rather than a slice that would keep the whole text alive; undefined when the text is
   * not in the stored form.
   */
  metadata: string | undefined;
}

/** One stored version of an object as a Table row needs it. */
export interface StoredObject {
  key: string;
  revision: number;
  /**
   * The stored text: `head` (storedHead: apiVersion, kind, the opening of metadata) when in the stored
   * form, metadata without its resourceVersion. Not read (undefined) when the row of this version is kept.
   */
  text?: string;
  /** The row kept of this version (TableRows.kept), when the text was not read because of it. */
  kept?: KeptRow;
  /** The object, when the caller has decoded it already. */
  object?: KubeObject;
}

/**
 * The rows of Tables made from stored text, keeping each object version's cells so that a Table of
 * thousands (what `kubectl get` asks for) parses only what changed since the last one: a row's cells
 * depend only on that version (an age is rendered from its kept time when sent), and its metadata is
 * the stored text's own, kept with them, so that a store that can list keys without their values
 * (Store.listSparse) reads only the values of rows not kept. Kinds with a column that reads the clock
 * itself (`readsClock`) are decoded every time. Bounded by a number of rows; the oldest kept goes first.
 */
export class TableRows {
  private readonly rows: BoundedCache<KeptRow>;

  constructor(limit = 65_536) {
    this.rows = new BoundedCache(limit);
  }

  /** Whether rows of `def` are kept at all (none of its columns reads the clock). */
  keeps(def: KindDefinition): boolean {
    return !columnsOf(def).some((c) => c.readsClock);
  }

  /** The row kept of this version of the object at `key`, with its metadata, if there is one. */
  kept(key: string, revision: number): KeptRow | undefined {
    const row = this.rows.get(key);
    return row?.revision === revision && row.metadata !== undefined ? row : undefined;
  }

  /**
   * How the rows of one Table of `def` are made: each the JSON text of the row of `stored`, as toTable()
   * makes it of the decoded object. `head` is the kind's storedHead; a row's `decode` parses the text
   * (only when the row is not kept), its `objectText` is the object's own JSON (includeObject=Object).
   */
  rowsOf(def: KindDefinition, head: string, include: IncludeObject, now: number): (stored: StoredObject, decode: () => KubeObject, objectText: () => string) => string {
    const columns = columnsOf(def);
    const keeps = this.keeps(def);
    return (stored, decode, objectText) => {
      let row = stored.kept ?? (keeps ? this.rows.get(stored.key) : undefined);
      let object = stored.object;
      if (row === undefined || row.revision !== stored.revision) {
        if (stored.text === undefined) throw new Error(`the row of ${stored.key} at revision ${stored.revision} is neither kept nor read`);
        object ??= decode();
        row = { revision: stored.revision, cells: columns.map((c) => rawCell(c, object!)), metadata: storedMetadata(stored.text, head, object) };
        if (keeps) this.rows.set(stored.key, row);
      }
      const cells = JSON.stringify(row.cells.map((raw, i) => renderCell(columns[i]!, raw, now)));
      if (include === "None") return `{"cells":${cells}}`;
      if (include === "Object") return `{"cells":${cells},"object":${objectText()}}`;
      let metadata: string;
      if (row.metadata !== undefined) {
        // The stored metadata has no resourceVersion: it goes first, as the object's own JSON has it.
        metadata = `{"resourceVersion":"${stored.revision}"${row.metadata === "" ? "" : ","}${row.metadata}}`;
      } else {
        metadata = JSON.stringify((object ?? decode()).metadata);
      }
      return `{"cells":${cells},"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":${metadata}}}`;
    };
  }
}

/**
 * The members of `object`'s metadata as `text` has them, when the text is in the stored form (checked
 * against the decoded object, not assumed); undefined otherwise.
 */
function storedMetadata(text: string, head: string, object: KubeObject): string | undefined {
  if (!text.startsWith(head)) return undefined;
  const { resourceVersion: _rv, ...metadata } = object.metadata;
  const written = JSON.stringify(metadata);
  if (!text.startsWith(written, head.length - 1)) return undefined;
  // JSON.stringify(metadata) is that same text, and a string of its own (a slice of `text` would keep all of it).
  return written.slice(1, -1);
}
