// Values read through their schema's shape: the set of fields a value sets, how two values differ
// field by field, how an applied configuration merges into a live object, and how fields are taken out.
import { field, FieldSet, key, type PathElement, value as valueStep, displayPath } from "./field-set.ts";
import { fieldSchema, shapeOf, type Shape } from "./shape.ts";

type Schema = Record<string, unknown>;

/** A list item without its key fields, or two items with the same key. */
export class FieldPathError extends Error {
  constructor(
    readonly path: string,
    why: string,
  ) {
    super(`${path}: ${why}`);
  }
}

/** The fields a value sets, with each leaf's value (scalars and atomic values) to tell changes. */
export interface TypedFields {
  set: FieldSet;
  leaves: Map<FieldSet, unknown>;
}

export interface WalkOptions {
  /**
   * A list item without all its key fields, or a key twice, is an error (an applied configuration
   * must be unambiguous); otherwise such a list counts as one atomic value, as stored objects may
   * predate a keyed schema.
   */
  strictKeys?: boolean;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function fieldsOf(object: unknown, schema: Schema, options: WalkOptions = {}): TypedFields {
  const fields: TypedFields = { set: new FieldSet(), leaves: new Map() };
  walk(object, schema, fields.set, fields, [], options);
  return fields;
}

/** The key step of a keyed list's item, or why it has none. */
function itemKey(item: unknown, keys: string[]): PathElement | string {
  if (!isObject(item)) return "list item is not an object";
  const values: Record<string, unknown> = {};
  for (const name of keys) {
    const v = item[name];
    if (v === undefined || isObject(v) || Array.isArray(v)) return `item has no value for key field "${name}"`;
    values[name] = v;
  }
  return key(values);
}

function leaf(node: FieldSet, v: unknown, fields: TypedFields): void {
  node.member = true;
  fields.leaves.set(node, v);
}

function walk(v: unknown, schema: Schema | undefined, node: FieldSet, fields: TypedFields, path: PathElement[], options: WalkOptions): void {
  const shape = shapeOf(schema, v);
  if (v === null || v === undefined) return leaf(node, null, fields);
  switch (shape.kind) {
    case "scalar":
    case "atomic":
      return leaf(node, v, fields);
    case "set": {
      if (!Array.isArray(v)) return leaf(node, v, fields);
      for (const item of v) leaf(node.child(valueStep(item)), item, fields);
      return;
    }
    case "map-list": {
      if (!Array.isArray(v)) return leaf(node, v, fields);
      const steps = v.map((item) => itemKey(item, shape.keys));
      const problem = steps.find((s) => !s.startsWith("k:")) ?? (new Set(steps).size < steps.length ? "duplicate entries for one key" : undefined);
      if (problem) {
        if (options.strictKeys) throw new FieldPathError(displayPath(path), problem);
        return leaf(node, v, fields);
      }
      v.forEach((item, i) => {
        const child = node.child(steps[i]!);
        child.member = true;
        path.push(steps[i]!);
        walk(item, shape.items, child, fields, path, options);
        path.pop();
      });
      return;
    }
    case "struct": {
      if (!isObject(v)) return leaf(node, v, fields);
      const entries = Object.entries(v);
      if (entries.length === 0) return leaf(node, v, fields);
      for (const [name, child] of entries) {
        if (child === undefined) continue;
        const { schema: childSchema, declared } = fieldSchema(shape, name);
        const step = field(name);
        const childNode = node.child(step);
        path.push(step);
        walk(child, childSchema, childNode, fields, path, options);
        path.pop();
        if (!declared) childNode.member = true;
      }
      return;
    }
  }
}

export interface Comparison {
  added: FieldSet;
  removed: FieldSet;
  modified: FieldSet;
}

/** How `after` differs from `before`: fields it adds, fields it drops, leaves whose value changed. */
export function compare(before: TypedFields, after: TypedFields): Comparison {
  const changes: Comparison = { added: new FieldSet(), removed: new FieldSet(), modified: new FieldSet() };
  diff(before.set, after.set, before.leaves, after.leaves, changes);
  return changes;
}

/**
 * Compares two nodes in one walk, filling the nodes of `out` (made only where something differs, as
 * most writes change a few fields of many).
 */
function diff(a: FieldSet, b: FieldSet, leavesA: Map<FieldSet, unknown>, leavesB: Map<FieldSet, unknown>, out: Comparison): void {
  if (a.member && b.member && !sameValue(leavesA.get(a), leavesB.get(b))) out.modified.member = true;
  else if (a.member && !b.member) out.removed.member = true;
  else if (!a.member && b.member) out.added.member = true;
  for (const [step, childA] of a.children) {
    const childB = b.children.get(step);
    if (childB) {
      const nested: Comparison = { added: new FieldSet(), removed: new FieldSet(), modified: new FieldSet() };
      diff(childA, childB, leavesA, leavesB, nested);
      for (const kind of ["added", "removed", "modified"] as const) {
        const node = nested[kind];
        if (node.member || node.children.size > 0) out[kind].setChild(step, node);
      }
    } else {
      out.removed.setChild(step, childA);
    }
  }
  for (const [step, childB] of b.children) if (!a.children.has(step)) out.added.setChild(step, childB);
}

/** Deep equality of two JSON values (key order aside). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** The live value with an applied configuration merged in, field by field as the schema says. */
export function merge(live: unknown, config: unknown, schema: Schema | undefined): unknown {
  if (config === undefined) return live;
  if (live === undefined || live === null) return config;
  const shape = shapeOf(schema, config);
  switch (shape.kind) {
    case "struct": {
      if (!isObject(live) || !isObject(config)) return config;
      const out: Record<string, unknown> = { ...live };
      for (const [name, v] of Object.entries(config)) out[name] = merge(live[name], v, fieldSchema(shape, name).schema);
      return out;
    }
    case "set":
      if (!Array.isArray(live) || !Array.isArray(config)) return config;
      return mergeLists(live, config, (item) => JSON.stringify(item), (_l, c) => c);
    case "map-list": {
      if (!Array.isArray(live) || !Array.isArray(config)) return config;
      return mergeLists(live, config, (item) => itemKey(item, shape.keys), (l, c) => merge(l, c, shape.items));
    }
    default:
      return config;
  }
}

/**
 * Merges two lists by the identity of their items: the configuration's items in its order, each merged
 * with the live item of the same identity; live items it does not name keep their place relative to
 * the items around them.
 */
function mergeLists(live: unknown[], config: unknown[], identity: (item: unknown) => string, mergeItem: (live: unknown, config: unknown) => unknown): unknown[] {
  const liveIds = live.map(identity);
  const configIds = new Map(config.map((item, i) => [identity(item), i]));
  const out: unknown[] = [];
  const emitted = new Set<string>();
  let liveAt = 0;
  const flushLiveOnly = (until: number) => {
    for (; liveAt < until; liveAt++) {
      const id = liveIds[liveAt]!;
      if (!configIds.has(id) && !emitted.has(id)) {
        out.push(live[liveAt]);
        emitted.add(id);
      }
    }
  };
  for (const item of config) {
    const id = identity(item);
    if (emitted.has(id)) continue;
    const at = liveIds.indexOf(id);
    if (at >= 0) {
      flushLiveOnly(at);
      out.push(mergeItem(live[at], item));
    } else {
      out.push(item);
    }
    emitted.add(id);
  }
  flushLiveOnly(live.length);
  return out;
}

/**
 * The value without the fields of `remove`, except where `keep` still holds something beneath them
 * (an item someone else still manages a field of stays, without the fields no one manages). Objects
 * and lists left empty by a removal go too, unless `keep` holds them.
 */
export function removeFields(v: unknown, remove: FieldSet, keep: FieldSet | undefined, schema: Schema | undefined): unknown {
  const shape: Shape = shapeOf(schema, v);
  if (shape.kind === "struct" && isObject(v)) {
    const out: Record<string, unknown> = {};
    for (const [name, child] of Object.entries(v)) {
      const step = field(name);
      const next = prune(child, remove.children.get(step), keep?.children.get(step), fieldSchema(shape, name).schema);
      if (next !== undefined) out[name] = next;
    }
    return out;
  }
  if ((shape.kind === "map-list" || shape.kind === "set") && Array.isArray(v)) {
    const out: unknown[] = [];
    for (const item of v) {
      const step = shape.kind === "set" ? valueStep(item) : itemKey(item, shape.keys);
      const next = prune(item, remove.children.get(step), keep?.children.get(step), shape.items);
      // An item that stays keeps the fields that name it.
      if (next !== undefined) out.push(shape.kind === "map-list" && isObject(next) && isObject(item) ? { ...pick(item, shape.keys), ...next } : next);
    }
    return out;
  }
  return v;
}

function pick(item: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => item[k] !== undefined).map((k) => [k, item[k]]));
}

function prune(child: unknown, remove: FieldSet | undefined, keep: FieldSet | undefined, schema: Schema | undefined): unknown {
  if (!remove || remove.isEmpty()) return child;
  const kept = keep && !keep.isEmpty();
  if (remove.member && !kept) return undefined;
  const next = removeFields(child, remove, keep, schema);
  const emptied = (isObject(next) && Object.keys(next).length === 0 && !(isObject(child) && Object.keys(child).length === 0)) || (Array.isArray(next) && next.length === 0 && Array.isArray(child) && child.length > 0);
  return emptied && !kept ? undefined : next;
}
