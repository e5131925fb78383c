// The informer's cache of one kind: objects by key, with indexes by namespace, owner uid, label and any
// index a controller adds. Objects are stored and handed out as they came from the API but for their
// managedFields — deeply frozen, never copied on read: with tens of thousands of objects a copy per read
// would cost more than the cache itself. Treat them as immutable; clone (structuredClone) before
// changing one.
import type { KubeObject } from "../api/meta.ts";
import { objectKey } from "./keys.ts";

/** The values an object is indexed under (none: the object is not in that index). */
export type IndexFunction<T> = (object: T) => readonly string[];

export const NAMESPACE_INDEX = "namespace";
export const OWNER_INDEX = "owner";
export const LABEL_INDEX = "label";

interface Index<T> {
  fn: IndexFunction<T>;
  keys: Map<string, Set<string>>;
}

export class DuplicateIndexError extends Error {
  override readonly name = "DuplicateIndexError";
  constructor(readonly index: string) {
    super(`the cache already has an index named ${index}`);
  }
}

export class UnknownIndexError extends Error {
  override readonly name = "UnknownIndexError";
  constructor(readonly index: string) {
    super(`the cache has no index named ${index}`);
  }
}

export function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  for (const field of Object.values(value)) deepFreeze(field);
  return Object.freeze(value);
}

/**
 * The object without the API server's record of who wrote which field: no controller reads it, a write
 * that leaves it out keeps it as it is, and it was a quarter of what a fleet's cache held. The object
 * itself is not changed (it may be shared with other watchers).
 */
export function withoutManagedFields<T extends KubeObject>(object: T): T {
  if (object.metadata.managedFields === undefined) return object;
  const { managedFields: _dropped, ...metadata } = object.metadata;
  return { ...object, metadata };
}

export class ObjectCache<T extends KubeObject> {
  private readonly objects = new Map<string, T>();
  private readonly indexes = new Map<string, Index<T>>();

  constructor() {
    this.addIndex(NAMESPACE_INDEX, (o) => (o.metadata.namespace ? [o.metadata.namespace] : []));
    this.addIndex(OWNER_INDEX, (o) => (o.metadata.ownerReferences ?? []).map((r) => r.uid));
    this.addIndex(LABEL_INDEX, (o) => Object.entries(o.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`));
  }

  /**
   * Adds an index; objects already cached are indexed at once. Adding the same function under the same
   * name again does nothing (controllers sharing an informer share its indexes); another one is refused.
   */
  addIndex(name: string, fn: IndexFunction<T>): void {
    const existing = this.indexes.get(name);
    if (existing?.fn === fn) return;
    if (existing) throw new DuplicateIndexError(name);
    const index: Index<T> = { fn, keys: new Map() };
    this.indexes.set(name, index);
    for (const [key, object] of this.objects) this.indexInto(index, key, object);
  }

  get size(): number {
    return this.objects.size;
  }

  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  keys(): IterableIterator<string> {
    return this.objects.keys();
  }

  values(): IterableIterator<T> {
    return this.objects.values();
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  /** Keys of the objects indexed under `value`. */
  indexKeys(index: string, value: string): string[] {
    const found = this.indexOf(index).keys.get(value);
    return found ? [...found] : [];
  }

  byIndex(index: string, value: string): T[] {
    const found = this.indexOf(index).keys.get(value);
    if (!found) return [];
    const out: T[] = [];
    for (const key of found) {
      const object = this.objects.get(key);
      if (object) out.push(object);
    }
    return out;
  }

  inNamespace(namespace: string): T[] {
    return this.byIndex(NAMESPACE_INDEX, namespace);
  }

  ownedBy(uid: string): T[] {
    return this.byIndex(OWNER_INDEX, uid);
  }

  withLabel(label: string, value: string): T[] {
    return this.byIndex(LABEL_INDEX, `${label}=${value}`);
  }

  /**
   * Stores (and freezes) the object without its metadata.managedFields; returns the one it replaces. For
   * the informer that fills the cache.
   */
  set(object: T): T | undefined {
    const key = objectKey(object);
    const previous = this.objects.get(key);
    if (previous) for (const index of this.indexes.values()) this.unindexFrom(index, key, previous);
    const frozen = deepFreeze(withoutManagedFields(object));
    this.objects.set(key, frozen);
    for (const index of this.indexes.values()) this.indexInto(index, key, frozen);
    return previous;
  }

  /** Removes the object under the key; returns it. For the informer that fills the cache. */
  delete(key: string): T | undefined {
    const previous = this.objects.get(key);
    if (!previous) return undefined;
    for (const index of this.indexes.values()) this.unindexFrom(index, key, previous);
    this.objects.delete(key);
    return previous;
  }

  private indexOf(name: string): Index<T> {
    const index = this.indexes.get(name);
    if (!index) throw new UnknownIndexError(name);
    return index;
  }

  private indexInto(index: Index<T>, key: string, object: T): void {
    for (const value of index.fn(object)) {
      let keys = index.keys.get(value);
      if (!keys) index.keys.set(value, (keys = new Set()));
      keys.add(key);
    }
  }

  private unindexFrom(index: Index<T>, key: string, object: T): void {
    for (const value of index.fn(object)) {
      const keys = index.keys.get(value);
      if (!keys) continue;
      keys.delete(key);
      if (keys.size === 0) index.keys.delete(value);
    }
  }
}
