// `slipway apply -f FILE [--wait]`: creates or updates each object of a manifest through the apply
// engine (kubectl's client-side apply: fields dropped from the manifest are removed) and, with --wait,
// follows each Cluster in it until it is Ready or Failed.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { parseAllDocuments } from "yaml";
import { Applier, NamespaceMismatchError, type KubeObject } from "../kubeclient/index.ts";
import { SLIPWAY_API_VERSION } from "../api/slipway/group.ts";
import { withSession, type Session } from "./connect.ts";
import { CliError, ReportedFailure, errorLine } from "./errors.ts";
import { followCluster } from "./follow.ts";
import { resourceLabel } from "./output.ts";
import { progressReporter } from "./progress.ts";
import { parseDuration } from "./usage.ts";

/** The field manager the server records for the CLI's writes. */
const FIELD_MANAGER = "slipway";

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
    .option("--wait", "follow each cluster of the manifest until it is Ready (exit 0), or Failed for a reason only a change clears, or still Failed at the timeout (exit 1)")
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

/**
 * Applies the manifest's objects (namespaces and definitions first), printing `kind/name
 * created|configured|unchanged` for each; an object that fails is printed and the others still applied.
 */
async function applyAll(session: Session, manifest: ManifestObject[], explicitNamespace: string | undefined): Promise<Applied> {
  const applied: Applied = { clusters: [], failed: false };
  const applier = new Applier(session.client, {
    namespace: session.namespace,
    enforceNamespace: explicitNamespace !== undefined,
    fieldValidation: "Strict",
    fieldManager: FIELD_MANAGER,
  });
  await applier.applyAll(
    manifest.map((m) => m.object),
    {
      onOutcome: (outcome) => {
        if (outcome.error) {
          const why = outcome.error instanceof NamespaceMismatchError ? `${outcome.error.message} (-n)` : errorLine(outcome.error);
          session.err.write(`error: ${why}\n`);
          applied.failed = true;
          return;
        }
        const { resource, ref, action } = outcome;
        session.out.write(`${resourceLabel(resource)}/${ref.name} ${action}\n`);
        if (resource.kind === "Cluster" && resource.apiVersion === SLIPWAY_API_VERSION && ref.namespace !== undefined) {
          applied.clusters.push({ namespace: ref.namespace, name: ref.name });
        }
      },
    },
  );
  return applied;
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
      if (outcome.result === "timeout" && outcome.failure) {
        session.err.write(`error: cluster "${name}" failed and did not recover within ${timeout.text}: ${outcome.failure.reason}${outcome.failure.message ? `: ${outcome.failure.message}` : ""}\n`);
      } else if (outcome.result === "timeout") session.err.write(`error: cluster "${name}" was not Ready within ${timeout.text} (phase ${outcome.phase})\n`);
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
