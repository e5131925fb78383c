// The Store contract: a key-value store with etcd's semantics, so the API server behaves the same on the
// embedded SQLite store and on an etcd cluster. One conformance suite (conformance.ts) holds every
// implementation to it.
//
// Semantics every implementation MUST keep:
// - One global revision, starting at 1 for an empty store and rising by exactly one on every successful
//   write (create, update, delete). Reads never change it.
// - A key's `modRevision` is the revision of the write that last changed it, `createRevision` that of the
//   write that created it; both survive a restart.
// - `get` reads the latest write unless `mayLag` is set: then it may answer an older copy of the key (or
//   none when it was only just created). Such a copy is only for a read-modify-write whose write compares
//   `modRevision`: a stale copy is refused there, with the current value.
// - `create` fails with KeyExistsError when the key exists; `update` and `delete` compare `modRevision`
//   with the expected one and fail with RevisionMismatchError (carrying the current value) when it
//   differs, and with KeyNotFoundError when the key is gone.
// - `list` returns keys in byte order, at most `limit` of them, all as of one revision (`revision`, or the
//   current one); `continueAfter` resumes after a key. Listing at a compacted revision fails with
//   CompactedError, at a revision not reached yet with FutureRevisionError. `listSparse`, where a store
//   has it, answers exactly what `list` would, except that it may leave out the values its caller did not
//   want (it may also read them all).
// - `watch` delivers, in revision order and without gaps, every change under the prefix with a revision
//   strictly greater than `afterRevision`, then every later change, until it is closed. Starting below
//   the compacted revision fails with CompactedError (through `onError`), as does a watch that falls
//   behind a compaction.
// - `compact(rev)` forgets history before `rev`; current values are never lost. Compacting at or below
//   the compacted revision does nothing; past the current revision fails with FutureRevisionError.
// - `close()` ends every watch (without calling `onError`) and releases the store; it may be called
//   again. Any other call afterwards fails with StoreClosedError.

export interface KeyValue {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
}

export interface ListOptions {
  /** Maximum number of keys to return; 0 or undefined means all. */
  limit?: number;
  /** Return keys strictly after this key (a continuation). */
  continueAfter?: string;
  /** Read as of this revision; undefined means the current revision. */
  revision?: number;
  /**
   * How many keys the previous page of this list (same revision) said remain after `continueAfter`: a
   * store that counts by walking the range may take its count from there instead. Only a hint.
   */
  remainingAfter?: number;
}

export interface GetOptions {
  /**
   * Any recent copy will do (etcd: the value this client last wrote or read, else one member's copy
   * without a quorum round). For the read before a write that compares `modRevision`, which refuses a
   * stale copy; anything else decided from such a copy (a conflict, a no-op, "not found") must be checked
   * with a read of the latest write before it is answered.
   */
  mayLag?: boolean;
}

export interface ListResult {
  items: KeyValue[];
  /** The revision the list was read at. */
  revision: number;
  /** True when keys remain after the last item returned. */
  more: boolean;
  /** How many keys remain after the last item returned (set when `more`). */
  remaining?: number;
}

/** A key of a sparse list: its value (and createRevision) only where the lister wanted it, or where the store read it anyway. */
export interface SparseKeyValue {
  key: string;
  modRevision: number;
  value?: string;
  createRevision?: number;
}

export interface SparseListResult extends Omit<ListResult, "items"> {
  items: SparseKeyValue[];
}

/** Which values a sparse list is to read, by key and revision. */
export type Wanted = (key: string, modRevision: number) => boolean;

export type WatchEvent =
  | { type: "put"; kv: KeyValue; prev?: KeyValue }
  | { type: "delete"; key: string; revision: number; prev: KeyValue };

export interface WatchOptions {
  /** Deliver changes with a revision strictly greater than this one. */
  afterRevision: number;
  /**
   * Called once per change, never from inside the write that made it. An exception thrown here ends the
   * watch and is passed to `onError`.
   */
  onEvent: (event: WatchEvent) => void;
  /** Called at most once; the watch has ended when it is. */
  onError: (error: Error) => void;
}

export interface Watch {
  close(): void;
  /**
   * The revision up to which every change under the watched prefix has been handed to `onEvent`, when
   * the store can tell now (nothing is waiting to be handed over); undefined when it cannot. It moves
   * with the whole store's writes, not only the prefix's, as etcd's progress notification does: a
   * bookmark that carries it lets a watch of a quiet prefix resume after history elsewhere was compacted.
   */
  progress?(): number | undefined;
}

export interface Store {
  /** The current revision. */
  revision(): Promise<number>;
  get(key: string, options?: GetOptions): Promise<KeyValue | undefined>;
  list(prefix: string, options?: ListOptions): Promise<ListResult>;
  /**
   * list(), reading a key's value only where `wanted(key, modRevision)` answers true: for a reader that
   * keeps what it made of each value by revision (Table rows), so that a list of thousands reads only the
   * values that changed. Optional; a store may read every value all the same.
   */
  listSparse?(prefix: string, wanted: Wanted, options?: ListOptions): Promise<SparseListResult>;
  /** Counts keys under the prefix at the current revision. */
  count(prefix: string): Promise<number>;
  create(key: string, value: string): Promise<KeyValue>;
  update(key: string, value: string, expectedModRevision: number): Promise<KeyValue>;
  /**
   * Deletes the key, comparing `modRevision` first when `expectedModRevision` is given. Returns the value
   * that was deleted, with `modRevision` set to the revision of the deletion.
   */
  delete(key: string, expectedModRevision?: number): Promise<KeyValue>;
  watch(prefix: string, options: WatchOptions): Watch;
  /** Forgets history before `revision`. */
  compact(revision: number): Promise<void>;
  /** The revision below which history is gone (0 when nothing was compacted). */
  compactedRevision(): Promise<number>;
  close(): Promise<void>;
}

/** A sparse list where the store has one, else its list() (every value read). */
export function listSparsely(store: Store, prefix: string, wanted: Wanted, options?: ListOptions): Promise<SparseListResult> {
  return store.listSparse ? store.listSparse(prefix, wanted, options) : store.list(prefix, options);
}

export class KeyExistsError extends Error {
  override readonly name = "KeyExistsError";
  constructor(readonly key: string) {
    super(`key ${key} already exists`);
  }
}

export class KeyNotFoundError extends Error {
  override readonly name = "KeyNotFoundError";
  constructor(readonly key: string) {
    super(`key ${key} not found`);
  }
}

export class RevisionMismatchError extends Error {
  override readonly name = "RevisionMismatchError";
  constructor(
    readonly key: string,
    readonly current: KeyValue,
  ) {
    super(`key ${key} was modified at revision ${current.modRevision}`);
  }
}

export class CompactedError extends Error {
  override readonly name = "CompactedError";
  constructor(
    readonly requested: number,
    readonly compacted: number,
  ) {
    super(`revision ${requested} has been compacted (oldest kept: ${compacted})`);
  }
}

export class FutureRevisionError extends Error {
  override readonly name = "FutureRevisionError";
  constructor(
    readonly requested: number,
    readonly current: number,
  ) {
    super(`revision ${requested} is in the future (current: ${current})`);
  }
}

export class StoreClosedError extends Error {
  override readonly name = "StoreClosedError";
  constructor() {
    super("the store is closed");
  }
}

/** The smallest string greater than every string starting with `prefix` (for range ends). */
export function prefixEnd(prefix: string): string {
  return prefix + "\uffff";
}
