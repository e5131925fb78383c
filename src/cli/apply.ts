// `slipway apply -f FILE [--wait]`: creates or updates each object of a manifest (as kubectl apply does)
// and, with --wait, follows each Cluster in it until it is Ready or Failed.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { parseAllDocuments } from "yaml";
import { KubeNotFoundError, KubeUnauthorizedError, KubeUnreachableError, type ApplyAction, type KubeObject } from "../kubeclient/index.ts";
import { SLIPWAY_API_VERSION } from "../api/slipway/group.ts";
import { withSession, type Session } from "./connect.ts";
import { CliError, ReportedFailure, errorLine } from "./errors.ts";
import { followCluster } from "./follow.ts";
import { resourceLabel } from "./output.ts";
import { progressReporter } from "./progress.ts";
import { parseDuration } from "./usage.ts";

interface ApplyFlags {
  filename: string;
  wait?: boolean;
  timeout: string;
}

/** An object of a manifest, and where it came from (for messages). */
export interface ManifestObject {
  object: KubeObject;
  source: string;
}

export function registerApplyCommand(program: Command): void {
  program
    .command("apply")
    .description("create or update the objects of a manifest; with --wait, follow its clusters until Ready")
    .requiredOption("-f, --filename <file>", "manifest (YAML or JSON, several documents allowed), a directory of them, or - for stdin")
    .option("--wait", "follow each cluster of the manifest until it is Ready (exit 0) or Failed (exit 1)")
    .option("--timeout <duration>", "how long --wait waits, e.g. 90s, 30m", "30m")
    .action(async (flags: ApplyFlags, command: Command) => {
      const timeoutMs = parseDuration(flags.timeout, "--timeout");
      const manifest = readManifest(flags.filename);
      await withSession(command, async (session) => {
        const explicitNamespace = command.optsWithGlobals<{ namespace?: string }>().namespace;
        const applied = await applyAll(session, manifest, explicitNamespace);
        if (flags.wait) await waitForClusters(session, applied, { ms: timeoutMs, text: flags.timeout });
        if (applied.failed) throw new ReportedFailure();
      });
    });
}

function manifestFiles(path: string): string[] {
  if (path === "-" || !statSync(path, { throwIfNoEntry: false })?.isDirectory()) return [path];
  return readdirSync(path)
    .filter((name) => /\.(ya?ml|json)$/.test(name))
    .sort()
    .map((name) => join(path, name));
}

/** Every object of the file(s), in order; a document that is not an object, or says no kind, fails the whole. */
export function readManifest(path: string): ManifestObject[] {
  const objects: ManifestObject[] = [];
  for (const file of manifestFiles(path)) {
    let text: string;
    try {
      text = readFileSync(file === "-" ? 0 : file, "utf8");
    } catch (error) {
      throw new CliError(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
    }
    const where = file === "-" ? "stdin" : file;
    parseAllDocuments(text).forEach((document, i) => {
      if ("errors" in document && document.errors.length > 0) throw new CliError(`${where}: document ${i + 1} is not valid YAML: ${document.errors[0]!.message}`);
      const value: unknown = document.toJS();
      if (value === null || value === undefined) return;
      const source = `${where} (document ${i + 1})`;
      const items = isList(value) ? value.items : [value];
      for (const item of items) objects.push({ object: checkObject(item, source), source });
    });
  }
  if (objects.length === 0) throw new CliError(`no objects in ${path}`);
  return objects;
}

function isList(value: unknown): value is { items: unknown[] } {
  const v = value as { kind?: unknown; items?: unknown };
  return typeof v === "object" && v !== null && typeof v.kind === "string" && v.kind.endsWith("List") && Array.isArray(v.items);
}

function checkObject(value: unknown, source: string): KubeObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new CliError(`${source}: not an object`);
  const o = value as Partial<KubeObject>;
  if (typeof o.apiVersion !== "string" || o.apiVersion === "") throw new CliError(`${source}: apiVersion not set`);
  if (typeof o.kind !== "string" || o.kind === "") throw new CliError(`${source}: kind not set`);
  if (typeof o.metadata?.name !== "string" || o.metadata.name === "") throw new CliError(`${source}: ${o.kind} has no metadata.name`);
  return value as KubeObject;
}

interface Applied {
  /** Clusters created or updated, to follow with --wait. */
  clusters: { namespace: string; name: string }[];
  failed: boolean;
}

/** Applies each object in order, printing `kind/name created|configured|unchanged`; errors are printed and the rest still applied. */
async function applyAll(session: Session, manifest: ManifestObject[], explicitNamespace: string | undefined): Promise<Applied> {
  const applied: Applied = { clusters: [], failed: false };
  for (const { object } of manifest) {
    try {
      const resource = await session.client.resource(object.apiVersion, object.kind).catch((error: unknown) => {
        if (!(error instanceof KubeNotFoundError)) throw error;
        throw new CliError(`${object.kind} "${object.metadata.name}": the server has no kind ${object.kind} in ${object.apiVersion}`, { cause: error });
      });
      const declared = object.metadata.namespace;
      if (resource.namespaced && declared !== undefined && explicitNamespace !== undefined && declared !== explicitNamespace) {
        throw new CliError(`${object.kind} "${object.metadata.name}" is declared in namespace ${declared}, not ${explicitNamespace} (-n)`);
      }
      const namespace = resource.namespaced ? (declared ?? session.namespace) : undefined;
      const desired = namespace === undefined ? object : { ...object, metadata: { ...object.metadata, namespace } };
      const name = object.metadata.name!;
      const path = await session.client.resourcePath({ apiVersion: object.apiVersion, kind: object.kind, ...(namespace === undefined ? {} : { namespace }), name });
      session.out.write(`${resourceLabel(resource)}/${name} ${await applyObject(session, desired, path)}\n`);
      if (object.kind === "Cluster" && object.apiVersion === SLIPWAY_API_VERSION && namespace !== undefined) {
        applied.clusters.push({ namespace, name });
      }
    } catch (error) {
      // Without a server (or with credentials it refuses) the other objects would fail alike.
      if (error instanceof KubeUnreachableError || error instanceof KubeUnauthorizedError) throw error;
      session.err.write(`error: ${errorLine(error)}\n`);
      applied.failed = true;
    }
  }
  return applied;
}

/**
 * True when every field the manifest sets already has that value: the object is unchanged, whatever
 * the server filled in (defaults, status, metadata). A `null` asks for a field to be removed.
 */
export function declaredIn(declared: unknown, current: unknown): boolean {
  if (declared === null) return current === undefined || current === null;
  if (Array.isArray(declared)) {
    return Array.isArray(current) && declared.length === current.length && declared.every((item, i) => declaredIn(item, current[i]));
  }
  if (typeof declared === "object") {
    if (typeof current !== "object" || current === null || Array.isArray(current)) return false;
    return Object.entries(declared).every(([key, value]) => declaredIn(value, (current as Record<string, unknown>)[key]));
  }
  return declared === current;
}

/**
 * Creates or updates one object. What the manifest declares is compared with what is stored first, so
 * that an object the controllers keep writing to (status, finalizers) still reads as unchanged.
 */
async function applyObject(session: Session, object: KubeObject, path: string): Promise<ApplyAction> {
  const { status: _status, ...declared } = object;
  try {
    const current = await session.client.get<KubeObject>(path);
    if (declaredIn(declared, current)) return "unchanged";
  } catch (error) {
    if (!(error instanceof KubeNotFoundError)) throw error;
  }
  return (await session.client.apply(object, { fieldValidation: "Strict" })).action;
}

/** Follows the clusters side by side until each is Ready, Failed, or out of time. */
async function waitForClusters(session: Session, applied: Applied, timeout: { ms: number; text: string }): Promise<void> {
  if (applied.clusters.length === 0) return;
  const reporter = progressReporter(session.out);
  try {
    const outcomes = await Promise.all(
      applied.clusters.map(async ({ namespace, name }) => ({ name, outcome: await followCluster(session.client, { namespace, name, goal: "ready", timeoutMs: timeout.ms, reporter }) })),
    );
    for (const { name, outcome } of outcomes) {
      if (outcome.result === "failed") session.err.write(`error: cluster "${name}" failed: ${outcome.reason}${outcome.message ? `: ${outcome.message}` : ""}\n`);
      if (outcome.result === "timeout") session.err.write(`error: cluster "${name}" was not Ready within ${timeout.text} (phase ${outcome.phase})\n`);
      if (outcome.result !== "ready") applied.failed = true;
    }
  } finally {
    reporter.close();
  }
  if (!applied.failed) {
    const first = applied.clusters[0]!.name;
    session.out.write(`\nNext: npx slipway kubeconfig ${first} --merge   (or: npx slipway describe cluster ${first})\n`);
  }
}
