// `slipway get KIND [NAME]`: the server's Table for people (with -o wide, its extra columns too), or the
// objects themselves as YAML or JSON. With -w, each later change follows as it happens: a row of the
// same columns (the server sends the changed object's Table), or the object.
import type { Command } from "commander";
import { KubeGoneError, type ApiResource, type KubeList, type KubeObject, type WatchEvent } from "../kubeclient/index.ts";
import { findResource, objectPath, withSession, type Session } from "./connect.ts";
import { orNotFound } from "./errors.ts";
import { columnWidths, parseOutputFormat, renderObjects, renderTable, resourceLabel, tableLine, type OutputFormat } from "./output.ts";
import { UsageError } from "./usage.ts";

const TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json";

interface GetFlags {
  output?: string;
  allNamespaces?: boolean;
  selector?: string;
  watch?: boolean;
}

interface TableColumn {
  name: string;
  format?: string;
  priority?: number;
}

interface TableRow {
  cells: unknown[];
  object?: { metadata?: { name?: string; namespace?: string } };
}

interface Table {
  kind: "Table";
  columnDefinitions: TableColumn[];
  rows: TableRow[];
  metadata?: { resourceVersion?: string };
}

export function registerGetCommand(program: Command): void {
  program
    .command("get")
    .description("list objects of a kind (clusters, machinepools, machines, connections, …), or show one")
    .argument("<kind>", "kind, plural or short name (cluster, clusters, cl, mp, secrets, ns, …); several with commas: cl,mp,ma")
    .argument("[name]", "name of one object")
    .option("-o, --output <format>", "wide, yaml, json or name")
    .option("-A, --all-namespaces", "list objects of every namespace")
    .option("-l, --selector <labels>", "only objects with these labels, e.g. slipway.dev/cluster=demo")
    .option("-w, --watch", "after the listing, show each change as it happens, until interrupted")
    .action(async (kind: string, name: string | undefined, flags: GetFlags, command: Command) => {
      const format = parseOutputFormat(flags.output);
      if (name !== undefined && flags.allNamespaces) throw new UsageError("an object cannot be fetched by name across all namespaces: leave out -A or the name");
      if (flags.watch && kind.includes(",")) throw new UsageError("watch one kind at a time");
      await withSession(command, async (session) => {
        const fetched = await runGet(session, kind, name, { ...flags, format });
        if (flags.watch) await watchChanges(session, fetched[0]!, name, { ...flags, format });
      });
    });
}

function cellText(cell: unknown): string {
  if (cell === null || cell === undefined) return "<none>";
  if (typeof cell === "object") return JSON.stringify(cell);
  return String(cell);
}

interface TableOptions {
  wide: boolean;
  withNamespace: boolean;
  namePrefix?: string;
}

/** The Table's columns as printed: those of priority 0 (all with wide), and NAMESPACE first across namespaces. */
function tableCells(table: Table, options: TableOptions): { headers: string[]; rows: string[][] } {
  const shown = table.columnDefinitions.map((column, index) => ({ column, index })).filter(({ column }) => options.wide || (column.priority ?? 0) === 0);
  const headers = shown.map(({ column }) => column.name.toUpperCase());
  const isName = (column: TableColumn, index: number) => column.format === "name" || (index === 0 && column.name.toLowerCase() === "name");
  const rows = table.rows.map((row) =>
    shown.map(({ column, index }) => `${options.namePrefix && isName(column, index) ? options.namePrefix : ""}${cellText(row.cells[index])}`),
  );
  if (!options.withNamespace) return { headers, rows };
  return { headers: ["NAMESPACE", ...headers], rows: rows.map((cells, i) => [table.rows[i]?.object?.metadata?.namespace ?? "", ...cells]) };
}

export function tableText(table: Table, options: TableOptions): string {
  const { headers, rows } = tableCells(table, options);
  return renderTable(headers, rows);
}

/** Prints what there is of each kind; returns what was fetched. */
async function runGet(session: Session, kinds: string, name: string | undefined, flags: GetFlags & { format: OutputFormat | undefined }): Promise<Fetched[]> {
  const names = kinds.split(",").filter((k) => k !== "");
  if (names.length > 1 && name !== undefined) throw new UsageError("name one kind to fetch an object by name");
  const resources = await Promise.all(names.map((k) => findResource(session, k)));
  const fetched = await Promise.all(resources.map((resource) => fetchResource(session, resource, name, flags)));
  if (flags.format === "yaml" || flags.format === "json") {
    const objects = fetched.flatMap((f) => f.objects ?? []);
    if (objects.length > 0 || !flags.watch) session.out.write(renderObjects(flags.format, name === undefined ? objects : objects[0]!));
    return fetched;
  }
  if (flags.format === "name") {
    for (const { resource, objects } of fetched) for (const object of objects ?? []) session.out.write(`${resourceLabel(resource)}/${object.metadata.name}\n`);
    return fetched;
  }
  const tables = fetched.filter((f) => (f.table?.rows.length ?? 0) > 0);
  if (tables.length === 0) {
    const everywhere = flags.allNamespaces || resources.every((r) => !r.namespaced);
    session.err.write(everywhere ? "No resources found\n" : `No resources found in ${session.namespace} namespace.\n`);
    return fetched;
  }
  const texts = tables.map(({ resource, table }) =>
    tableText(table!, {
      wide: flags.format === "wide",
      withNamespace: flags.allNamespaces === true && resource.namespaced,
      // Several kinds in one listing: names say their kind, as kubectl writes them.
      ...(names.length > 1 ? { namePrefix: `${resourceLabel(resource)}/` } : {}),
    }),
  );
  session.out.write(texts.join("\n"));
  return fetched;
}

interface Fetched {
  resource: ApiResource;
  objects?: KubeObject[];
  table?: Table;
  /** Where the listing stands: changes after it are watched. */
  resourceVersion?: string;
}

/** One kind's objects (for -o yaml, json, name) or Table (for people). */
async function fetchResource(session: Session, resource: ApiResource, name: string | undefined, flags: GetFlags & { format: OutputFormat | undefined }): Promise<Fetched> {
  const allNamespaces = flags.allNamespaces === true && resource.namespaced;
  const path = await objectPath(session, resource, name, { allNamespaces });
  const query = flags.selector ? `?labelSelector=${encodeURIComponent(flags.selector)}` : "";
  const fetch = <T>(headers?: Record<string, string>) => {
    const request = session.client.raw<T>("GET", `${path}${query}`, undefined, headers).then((r) => r.body);
    return name === undefined ? request : orNotFound(request, resource, name, session.namespace);
  };
  if (flags.format === "yaml" || flags.format === "json" || flags.format === "name") {
    const body = await fetch<KubeObject | KubeList<KubeObject>>();
    const objects = name === undefined ? (body as KubeList<KubeObject>).items.map((item) => withKind(item, resource)) : [body as KubeObject];
    const resourceVersion = name === undefined ? (body as KubeList<KubeObject>).metadata?.resourceVersion : (body as KubeObject).metadata.resourceVersion;
    return { resource, objects, ...(resourceVersion ? { resourceVersion } : {}) };
  }
  const table = await fetch<Table>({ accept: TABLE_ACCEPT });
  return { resource, table, ...(table.metadata?.resourceVersion ? { resourceVersion: table.metadata.resourceVersion } : {}) };
}

/**
 * Follows the listing with each change after it, until interrupted: a watch from the listing's version
 * (one object's changes when a name is given), started again from the last change seen whenever the
 * server ends it. A listing too old for the server to follow is an error.
 */
async function watchChanges(session: Session, fetched: Fetched, name: string | undefined, flags: GetFlags & { format: OutputFormat | undefined }): Promise<void> {
  const { resource } = fetched;
  const allNamespaces = flags.allNamespaces === true && resource.namespaced;
  const path = await objectPath(session, resource, undefined, { allNamespaces });
  const options: TableOptions = { wide: flags.format === "wide", withNamespace: allNamespaces };
  const asTable = flags.format === undefined || options.wide;
  // Column widths of what was listed, so that the rows of later changes line up under it.
  const widthsOf = ({ headers, rows }: { headers: string[]; rows: string[][] }) => columnWidths(headers, rows);
  let widths = asTable && fetched.table && fetched.table.rows.length > 0 ? widthsOf(tableCells(fetched.table, options)) : undefined;
  const print = (event: WatchEvent<KubeObject | Table>) => {
    if (asTable) {
      const cells = tableCells(event.object as Table, options);
      if (!widths) {
        // Nothing was listed: the first change brings the header.
        widths = widthsOf(cells);
        session.out.write(tableLine(cells.headers, widths));
      }
      for (const row of cells.rows) session.out.write(tableLine(row, widths));
      return;
    }
    const object = withKind(event.object as KubeObject, resource);
    if (flags.format === "name") session.out.write(`${resourceLabel(resource)}/${object.metadata.name}\n`);
    else if (flags.format === "yaml") session.out.write(`---\n${renderObjects("yaml", object)}`);
    else if (flags.format === "json") session.out.write(renderObjects("json", object));
  };
  let resourceVersion = fetched.resourceVersion;
  for (;;) {
    const startedAt = Date.now();
    const watch = session.client.watch<KubeObject | Table>(
      path,
      {
        ...(resourceVersion ? { resourceVersion } : {}),
        ...(flags.selector ? { labelSelector: flags.selector } : {}),
        ...(name !== undefined ? { fieldSelector: `metadata.name=${name}` } : {}),
        ...(asTable ? { accept: TABLE_ACCEPT } : {}),
      },
      (event) => {
        if (event.type === "BOOKMARK") return;
        print(event);
        const object = asTable ? (event.object as Table).rows[0]?.object : (event.object as KubeObject);
        const version = (object as KubeObject | undefined)?.metadata?.resourceVersion;
        if (version) resourceVersion = version;
      },
    );
    try {
      await watch.done;
    } catch (error) {
      if (error instanceof KubeGoneError) throw new Error(`the watch fell too far behind the server (version ${resourceVersion} is gone): run the command again`);
      throw error;
    }
    // The server ended the watch (its time limit): again from the last change seen, not in a tight loop.
    if (Date.now() - startedAt < 1000) await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** Items of a list carry their apiVersion and kind when printed alone. */
function withKind(object: KubeObject, resource: ApiResource): KubeObject {
  return { ...object, apiVersion: object.apiVersion ?? resource.apiVersion, kind: object.kind ?? resource.kind };
}
