// `slipway get KIND [NAME]`: the server's Table for people (with -o wide, its extra columns too), or the
// objects themselves as YAML or JSON.
import type { Command } from "commander";
import type { ApiResource, KubeList, KubeObject } from "../kubeclient/index.ts";
import { findResource, objectPath, withSession, type Session } from "./connect.ts";
import { orNotFound } from "./errors.ts";
import { parseOutputFormat, renderObjects, renderTable, resourceLabel, type OutputFormat } from "./output.ts";
import { UsageError } from "./usage.ts";

const TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json";

interface GetFlags {
  output?: string;
  allNamespaces?: boolean;
  selector?: string;
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
    .action(async (kind: string, name: string | undefined, flags: GetFlags, command: Command) => {
      const format = parseOutputFormat(flags.output);
      if (name !== undefined && flags.allNamespaces) throw new UsageError("an object cannot be fetched by name across all namespaces: leave out -A or the name");
      await withSession(command, (session) => runGet(session, kind, name, { ...flags, format }));
    });
}

function cellText(cell: unknown): string {
  if (cell === null || cell === undefined) return "<none>";
  if (typeof cell === "object") return JSON.stringify(cell);
  return String(cell);
}

/** The Table as columns: those of priority 0 (all with wide), and NAMESPACE first across namespaces. */
export function tableText(table: Table, options: { wide: boolean; withNamespace: boolean; namePrefix?: string }): string {
  const shown = table.columnDefinitions.map((column, index) => ({ column, index })).filter(({ column }) => options.wide || (column.priority ?? 0) === 0);
  const headers = shown.map(({ column }) => column.name.toUpperCase());
  const isName = (column: TableColumn, index: number) => column.format === "name" || (index === 0 && column.name.toLowerCase() === "name");
  const rows = table.rows.map((row) =>
    shown.map(({ column, index }) => `${options.namePrefix && isName(column, index) ? options.namePrefix : ""}${cellText(row.cells[index])}`),
  );
  if (!options.withNamespace) return renderTable(headers, rows);
  return renderTable(
    ["NAMESPACE", ...headers],
    rows.map((cells, i) => [table.rows[i]?.object?.metadata?.namespace ?? "", ...cells]),
  );
}

async function runGet(session: Session, kinds: string, name: string | undefined, flags: GetFlags & { format: OutputFormat | undefined }): Promise<void> {
  const names = kinds.split(",").filter((k) => k !== "");
  if (names.length > 1 && name !== undefined) throw new UsageError("name one kind to fetch an object by name");
  const resources = await Promise.all(names.map((k) => findResource(session, k)));
  const fetched = await Promise.all(resources.map((resource) => fetchResource(session, resource, name, flags)));
  if (flags.format === "yaml" || flags.format === "json") {
    const objects = fetched.flatMap((f) => f.objects ?? []);
    session.out.write(renderObjects(flags.format, name === undefined ? objects : objects[0]!));
    return;
  }
  if (flags.format === "name") {
    for (const { resource, objects } of fetched) for (const object of objects ?? []) session.out.write(`${resourceLabel(resource)}/${object.metadata.name}\n`);
    return;
  }
  const tables = fetched.filter((f) => (f.table?.rows.length ?? 0) > 0);
  if (tables.length === 0) {
    const everywhere = flags.allNamespaces || resources.every((r) => !r.namespaced);
    session.err.write(everywhere ? "No resources found\n" : `No resources found in ${session.namespace} namespace.\n`);
    return;
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
}

interface Fetched {
  resource: ApiResource;
  objects?: KubeObject[];
  table?: Table;
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
    return { resource, objects };
  }
  return { resource, table: await fetch<Table>({ accept: TABLE_ACCEPT }) };
}

/** Items of a list carry their apiVersion and kind when printed alone. */
function withKind(object: KubeObject, resource: ApiResource): KubeObject {
  return { ...object, apiVersion: object.apiVersion ?? resource.apiVersion, kind: object.kind ?? resource.kind };
}
