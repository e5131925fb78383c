// JSON merge patches (RFC 7386) as kubectl's client-side apply computes them: the difference between two
// documents, and the three-way patch between the configuration applied last time, the one applied now
// and the live object. A merge patch replaces lists whole and removes a field by setting it to null.

export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    const keys = Object.keys(a).filter((k) => a[k] !== undefined);
    return keys.length === Object.keys(b).filter((k) => b[k] !== undefined).length && keys.every((k) => k in b && jsonEqual(a[k], b[k]));
  }
  return false;
}

/**
 * The merge patch that turns `from` into `to`: changed and added fields with their new value, fields
 * `to` lacks set to null, lists that differ in any way replaced whole.
 */
export function createMergePatch(from: JsonObject, to: JsonObject): JsonObject {
  const patch: JsonObject = {};
  for (const [key, value] of Object.entries(to)) {
    if (value === undefined) continue;
    const old = from[key];
    if (old === undefined) patch[key] = value;
    else if (isJsonObject(old) && isJsonObject(value)) {
      const nested = createMergePatch(old, value);
      if (Object.keys(nested).length > 0) patch[key] = nested;
    } else if (!jsonEqual(old, value)) patch[key] = value;
  }
  for (const key of Object.keys(from)) if (from[key] !== undefined && to[key] === undefined) patch[key] = null;
  return patch;
}

/**
 * The patch with only its removals (`keepNull`), or without them. An empty object set on purpose is a
 * value, kept among the changes; a nested patch left empty by the filter is dropped.
 */
function filterNulls(patch: JsonObject, keepNull: boolean): JsonObject {
  const kept: JsonObject = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      if (keepNull) kept[key] = null;
    } else if (isJsonObject(value)) {
      if (Object.keys(value).length === 0) {
        if (!keepNull) kept[key] = value;
        continue;
      }
      const nested = filterNulls(value, keepNull);
      if (Object.keys(nested).length > 0) kept[key] = nested;
    } else if (!keepNull) kept[key] = value;
  }
  return kept;
}

/** `patch` laid over `base` as a merge patch would be (both are patches: nulls are kept as removals). */
function mergePatches(base: JsonObject, patch: JsonObject): JsonObject {
  const merged: JsonObject = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    const under = merged[key];
    merged[key] = isJsonObject(value) && isJsonObject(under) ? mergePatches(under, value) : value;
  }
  return merged;
}

/**
 * The three-way patch of client-side apply: fields the new configuration (`modified`) sets that differ
 * from the live object (`current`), plus removals of fields the previous configuration (`original`)
 * set and the new one no longer does. Fields that neither configuration set (defaults, fields other
 * writers own, status) are left alone. Without a previous configuration only fields the new one sets
 * to null are removed.
 */
export function threeWayMergePatch(original: JsonObject | undefined, modified: JsonObject, current: JsonObject): JsonObject {
  const changes = filterNulls(createMergePatch(current, modified), false);
  const removals = filterNulls(createMergePatch(original ?? {}, modified), true);
  return mergePatches(removals, changes);
}

/** A merge patch applied to a document (RFC 7386). */
export function applyMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isJsonObject(patch)) return patch;
  const result: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

/**
 * Whether a patch changed anything between the object before it and the object the server answered:
 * only the fields the patch names are compared, so that a concurrent write elsewhere (a controller's
 * finalizer) or a default the server fills in again (a list replaced whole) does not count.
 */
export function patchChanged(patch: JsonObject, before: JsonObject, after: JsonObject): boolean {
  for (const [key, value] of Object.entries(patch)) {
    const [was, is] = [before[key], after[key]];
    if (isJsonObject(value) && Object.keys(value).length > 0 && isJsonObject(was) && isJsonObject(is)) {
      if (patchChanged(value, was, is)) return true;
    } else if (!jsonEqual(was, is)) return true;
  }
  return false;
}
