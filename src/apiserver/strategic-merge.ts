// Strategic merge patch, as kube-apiserver applies it to its built-in kinds: the schema says which lists
// merge by a key (x-kubernetes-patch-strategy: merge with x-kubernetes-patch-merge-key, or a map-type
// list with one key), and the patch's directives say what else to do — `$patch: delete|replace|merge`,
// `$retainKeys`, `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>`. kubectl apply computes
// such patches from the same schema (served in /openapi/v2), so an unchanged manifest patches nothing and
// a changed worker pool leaves the others alone. Lists without a strategy are replaced whole.
import { fieldSchema, shapeOf } from "./apply/shape.ts";
import { BadRequestError } from "./errors.ts";

type Json = Record<string, unknown>;
/** The part of a JSON schema the merge reads. */
export type PatchSchema = Json | undefined;

const SET_ORDER = "$setElementOrder/";
const DELETE_FROM = "$deleteFromPrimitiveList/";

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * How a list field of the schema merges: by a key, as a set of primitives, or not at all (replaced). The
 * patch strategy is strategic merge's own word; list types are read as server-side apply reads them.
 */
export function listStrategy(schema: PatchSchema): { mergeKey?: string; merge: boolean } {
  if (!schema) return { merge: false };
  const strategy = String(schema["x-kubernetes-patch-strategy"] ?? "");
  const key = schema["x-kubernetes-patch-merge-key"];
  if (strategy.split(",").includes("merge")) return { merge: true, ...(typeof key === "string" ? { mergeKey: key } : {}) };
  const shape = shapeOf(schema, []);
  if (shape.kind === "map-list" && shape.keys.length === 1) return { merge: true, mergeKey: shape.keys[0] };
  return { merge: shape.kind === "set" };
}

/** The schema of an object's field, as server-side apply finds it (declared, or the object's elements). */
function field(schema: PatchSchema, name: string): PatchSchema {
  if (!schema) return undefined;
  const shape = shapeOf(schema, {});
  return shape.kind === "struct" ? fieldSchema(shape, name).schema : undefined;
}

/** Applies a strategic merge patch to `original` under `schema`; neither is changed. */
export function strategicMerge(original: unknown, patch: unknown, schema: PatchSchema): unknown {
  if (!isObject(patch)) throw new BadRequestError("a strategic merge patch must be a JSON object");
  return mergeObject(isObject(original) ? original : {}, patch, schema, "");
}

function mergeObject(original: Json, patch: Json, schema: PatchSchema, path: string): unknown {
  const directive = patch.$patch;
  if (directive === "delete") return undefined;
  if (directive === "replace") return withoutDirectives(patch);
  if (directive !== undefined && directive !== "merge") throw new BadRequestError(`${path || "the patch"}: unknown $patch directive "${String(directive)}"`);
  const result: Json = { ...original };
  const retain = patch.$retainKeys;
  if (retain !== undefined) {
    if (!Array.isArray(retain)) throw new BadRequestError(`${path}.$retainKeys must be a list of field names`);
    for (const key of Object.keys(result)) if (!retain.includes(key)) delete result[key];
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key === "$patch" || key === "$retainKeys") continue;
    if (key.startsWith(SET_ORDER) || key.startsWith(DELETE_FROM)) continue;
    if (key.startsWith("$")) throw new BadRequestError(`${path}.${key}: unknown strategic merge directive`);
    const at = `${path}.${key}`;
    const sub = field(schema, key);
    if (value === null) {
      delete result[key];
    } else if (Array.isArray(value)) {
      result[key] = mergeList(Array.isArray(result[key]) ? (result[key] as unknown[]) : [], value, sub, at);
    } else if (isObject(value)) {
      const merged = mergeObject(isObject(result[key]) ? (result[key] as Json) : {}, value, sub, at);
      if (merged === undefined) delete result[key];
      else result[key] = merged;
    } else {
      result[key] = value;
    }
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith(DELETE_FROM)) {
      const name = key.slice(DELETE_FROM.length);
      if (!Array.isArray(value)) throw new BadRequestError(`${path}.${key} must be a list`);
      if (Array.isArray(result[name])) result[name] = (result[name] as unknown[]).filter((item) => !value.some((v) => v === item));
    }
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith(SET_ORDER)) {
      const name = key.slice(SET_ORDER.length);
      if (!Array.isArray(value)) throw new BadRequestError(`${path}.${key} must be a list`);
      if (Array.isArray(result[name])) result[name] = ordered(result[name] as unknown[], value, listStrategy(field(schema, name)).mergeKey);
    }
  }
  return result;
}

function mergeList(original: unknown[], patch: unknown[], schema: PatchSchema, path: string): unknown[] {
  const { merge, mergeKey } = listStrategy(schema);
  const itemSchema = schema && isObject(schema.items) ? schema.items : undefined;
  // `[{"$patch": "replace"}, …]` replaces the list with the other items, whatever the strategy.
  if (patch.some((item) => isObject(item) && item.$patch === "replace" && Object.keys(item).length === 1)) {
    return patch.filter((item) => !(isObject(item) && item.$patch === "replace")).map(withoutDirectives);
  }
  if (!merge) return patch.map(withoutDirectives);
  if (mergeKey === undefined) {
    const result = [...original];
    for (const item of patch) if (!result.some((existing) => existing === item)) result.push(item);
    return result;
  }
  const result = original.map((item) => structuredClone(item));
  for (const item of patch) {
    if (!isObject(item)) throw new BadRequestError(`${path}: the items of this list are merged by "${mergeKey}" and must be objects`);
    if (!(mergeKey in item)) throw new BadRequestError(`${path}: an item has no "${mergeKey}", the key this list is merged by`);
    const index = result.findIndex((existing) => isObject(existing) && existing[mergeKey] === item[mergeKey]);
    if (item.$patch === "delete") {
      if (index >= 0) result.splice(index, 1);
      continue;
    }
    if (index >= 0) {
      result[index] = mergeObject(result[index] as Json, item, itemSchema, `${path}[${mergeKey}=${String(item[mergeKey])}]`);
    } else {
      result.push(mergeObject({}, item, itemSchema, `${path}[${mergeKey}=${String(item[mergeKey])}]`));
    }
  }
  return result.filter((item) => item !== undefined);
}

/** Orders a list as `$setElementOrder` says; items it does not name keep their place after those it does. */
function ordered(list: unknown[], order: unknown[], mergeKey: string | undefined): unknown[] {
  const identity = (item: unknown) => (mergeKey !== undefined && isObject(item) ? item[mergeKey] : item);
  const wanted = order.map((entry) => (mergeKey !== undefined && isObject(entry) ? entry[mergeKey] : entry));
  const named = wanted.flatMap((id) => list.filter((item) => identity(item) === id));
  const rest = list.filter((item) => !wanted.includes(identity(item)));
  return [...named, ...rest];
}

function withoutDirectives(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutDirectives);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [key, sub] of Object.entries(value)) if (!key.startsWith("$")) out[key] = withoutDirectives(sub);
  return out;
}
