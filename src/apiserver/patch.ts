// PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch, which
// kubectl sends for every kind whose schema it has (see strategic-merge.ts).
// Server-side apply bodies are recognised here and merged by the field manager (apply/).
import fastJsonPatch from "fast-json-patch";
import type { Operation } from "fast-json-patch";
import { BadRequestError, UnsupportedMediaTypeError } from "./errors.ts";
import { strategicMerge, type PatchSchema } from "./strategic-merge.ts";

export type PatchType = "merge" | "json" | "strategic";

export function patchTypeOf(contentType: string | undefined): PatchType {
  const mime = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  switch (mime) {
    case "application/merge-patch+json":
      return "merge";
    case "application/json-patch+json":
      return "json";
    case "application/strategic-merge-patch+json":
      return "strategic";
    default:
      throw new UnsupportedMediaTypeError(mime || "none");
  }
}

/** Server-side apply's bodies (YAML, of which JSON is a part); the object service's apply takes them. */
const APPLY_PATCH_TYPES = ["application/apply-patch+yaml", "application/apply-patch+json"];

export function isApplyPatch(contentType: string | undefined): boolean {
  return APPLY_PATCH_TYPES.includes((contentType ?? "").split(";")[0]!.trim().toLowerCase());
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/** Applies a patch; a strategic merge patch follows the patch strategies of `schema` (the kind's). */
export function applyPatch(type: PatchType, original: unknown, body: unknown, schema?: PatchSchema): unknown {
  switch (type) {
    case "merge":
      if (!isPlainObject(body)) throw new BadRequestError("a merge patch must be a JSON object");
      return mergePatch(original, body);
    case "strategic":
      return strategicMerge(original, body, schema);
    case "json": {
      if (!Array.isArray(body)) throw new BadRequestError("a JSON patch must be an array of operations");
      // A path through __proto__ or constructor is refused; so is moving a document into itself.
      (body as unknown[]).forEach((op, index) => {
        const bad = isPlainObject(op) && [op.path, op.from].some((p) => typeof p === "string" && /(^|\/)(__proto__|constructor|prototype)(\/|$)/.test(p));
        if (bad) throw new BadRequestError(`the JSON patch is invalid: operation ${index} (${describeOp(op)}) names __proto__, constructor or prototype`);
        if (isPlainObject(op) && (op.op === "move" || op.op === "copy") && op.from === "") {
          throw new BadRequestError(`the JSON patch is invalid: operation ${index} (${describeOp(op)}) would ${String(op.op)} the whole document into itself`);
        }
      });
      let problem;
      try {
        problem = fastJsonPatch.validate(body as Operation[], original);
      } catch (e) {
        throw new BadRequestError(`the JSON patch is invalid: ${(e as Error).message.split("\n")[0]}`);
      }
      if (problem) {
        throw new BadRequestError(`the JSON patch is invalid: ${problem.name}: operation ${problem.index} (${describeOp(problem.operation)})`);
      }
      try {
        return fastJsonPatch.applyPatch(structuredClone(original), body as Operation[], true, false).newDocument;
      } catch (e) {
        throw new BadRequestError(`the JSON patch could not be applied: ${(e as Error).message.split("\n")[0]}`);
      }
    }
  }
}

function describeOp(op: unknown): string {
  if (!isPlainObject(op)) return "not an object";
  return `${String(op.op)} ${String(op.path)}`;
}
