// Client-side apply, as kubectl does it: the configuration applied is recorded on the object in the
// `kubectl.kubernetes.io/last-applied-configuration` annotation (in kubectl's own encoding, so that
// kubectl and Slipway read each other's), and an update is the three-way merge patch between that
// record, the new configuration and the live object — so that a field dropped from the manifest is
// removed, while fields the manifest never set (defaults, other writers' fields, status) stay.
import type { ApplyResult, ApplyStrategy, ApplyTarget, StrategyOptions } from "./apply.ts";
import type { KubeClient, KubeObject } from "./client.ts";
import { KubeAlreadyExistsError, KubeNotFoundError } from "./errors.ts";
import { isJsonObject, patchChanged, threeWayMergePatch, type JsonObject } from "./merge-patch.ts";

export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";

/** JSON as Go's encoding/json writes it (kubectl's encoding): keys sorted, HTML characters escaped, a final newline. */
export function goJson(value: unknown): string {
  const sorted = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sorted);
    if (isJsonObject(v)) return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
    return v;
  };
  const escapes: Record<string, string> = { "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029" };
  return `${JSON.stringify(sorted(value)).replace(/[<>&\u2028\u2029]/g, (c) => escapes[c]!)}\n`;
}

/** The configuration recorded on a live object, if it carries a readable one. */
export function lastApplied(live: KubeObject): JsonObject | undefined {
  const recorded = live.metadata.annotations?.[LAST_APPLIED_ANNOTATION];
  if (recorded === undefined || recorded === "") return undefined;
  try {
    const parsed: unknown = JSON.parse(recorded);
    return isJsonObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The desired object with its own configuration recorded in the annotation, as kubectl's
 * GetModifiedConfiguration records it: the object without the record, its annotations present even
 * when empty (`"annotations":{}`), so that kubectl and Slipway write the same record for one manifest.
 */
export function withLastApplied(desired: KubeObject): KubeObject {
  const annotations = { ...desired.metadata.annotations };
  delete annotations[LAST_APPLIED_ANNOTATION];
  const metadata: KubeObject["metadata"] = { ...desired.metadata, annotations };
  const recorded = goJson({ ...desired, metadata });
  return { ...desired, metadata: { ...metadata, annotations: { ...annotations, [LAST_APPLIED_ANNOTATION]: recorded } } };
}

function writeQuery(options: StrategyOptions) {
  return {
    ...(options.dryRun ? { dryRun: true } : {}),
    ...(options.fieldValidation ? { fieldValidation: options.fieldValidation } : {}),
    ...(options.fieldManager ? { fieldManager: options.fieldManager } : {}),
  };
}

export const clientSideApply: ApplyStrategy = {
  name: "client-side",

  async apply<T extends KubeObject>(client: KubeClient, target: ApplyTarget, desired: KubeObject, options: StrategyOptions): Promise<ApplyResult<T>> {
    const modified = withLastApplied(desired);
    let current: T | undefined;
    try {
      current = await client.get<T>(target.path);
    } catch (error) {
      if (!(error instanceof KubeNotFoundError)) throw error;
    }
    if (current === undefined) {
      try {
        return { action: "created", object: await client.create<T>(target.collection, modified, writeQuery(options)) };
      } catch (error) {
        // Made by someone else in between: update it instead.
        if (!(error instanceof KubeAlreadyExistsError)) throw error;
        current = await client.get<T>(target.path);
      }
    }
    const live = current as unknown as JsonObject;
    const patch = threeWayMergePatch(lastApplied(current), modified as unknown as JsonObject, live);
    if (Object.keys(patch).length === 0) return { action: "unchanged", object: current };
    const patched = await client.patch<T>(target.path, patch, "merge", writeQuery(options));
    return { action: patchChanged(patch, live, patched as unknown as JsonObject) ? "configured" : "unchanged", object: patched };
  },

  appliedBy(live: KubeObject): boolean {
    return lastApplied(live) !== undefined;
  },
};
