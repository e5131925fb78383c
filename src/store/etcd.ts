// The store on an etcd cluster (v3 API, through the etcd3 client). Conditional writes are etcd
// transactions comparing a key's create or mod revision, so the semantics are etcd's own. An optional key
// prefix lets several stores share one cluster; compaction and revisions are still cluster-wide.
//
// Every write is one round trip (one transaction). Reads that may lag (`mayLag`, the read before a
// conditional write) are answered from the values this client last wrote, read or watched, else by a
// serializable read of one member, instead of a linearizable read, which costs the leader a quorum round.
// Reads of the latest value asked for in one turn of the event loop share one request (a read-only
// transaction).
import {
  Etcd3,
  GRPCOutOfRangeError,
  type IKeyValue,
  type IRangeRequest,
  type IRangeResponse,
  type IWatchResponse,
  type Watcher,
} from "etcd3";
import {
  CompactedError,
  FutureRevisionError,
  type GetOptions,
  KeyExistsError,
  KeyNotFoundError,
  RevisionMismatchError,
  StoreClosedError,
  type KeyValue,
  type ListOptions,
  type ListResult,
  type SparseKeyValue,
  type SparseListResult,
  type Store,
  type Watch,
  type WatchEvent,
  type WatchOptions,
  type Wanted,
} from "./store.ts";
import { WatchChannel } from "./watch-channel.ts";
import { EtcdLeases } from "./etcd-leases.ts";
import type { Leases } from "./leases.ts";

export interface EtcdStoreOptions {
  /** Prepended to every key, so that several stores can share one etcd cluster. */
  prefix?: string;
  /** Deadline of one request (default 10 s). */
  requestTimeoutMs?: number;
  /**
   * Bytes of recent values kept to answer reads that may lag, counted as two a character (default
   * 96 MiB, about half that in memory for ASCII values; 0 keeps none). The objects a controller writes
   * again and again take about 55 kB a cluster being made, so the default holds those of ~1,400 at once.
   */
  recentValueBytes?: number;
}

/**
 * The newest value this client knows of each recently used key (from its writes, its reads and its
 * watches), bounded by the bytes of keys and values. A value here may be older than the key's latest
 * write; it only answers reads that accept that.
 *
 * Two segments, least recently used first out of each: a key enters on probation and is kept (moves to
 * the protected segment, at most PROTECTED_SHARE of the bytes) once it is used again — read, or written
 * again. So keys written once and never read (Events) pass through probation and go first, and do not
 * push out the objects that are read and written over and over, whatever the number of the first.
 */
export class RecentValues {
  private readonly probation = new Map<string, KeyValue>();
  private readonly kept = new Map<string, KeyValue>();
  private bytes = 0;
  private keptBytes = 0;

  constructor(private readonly limit: number) {}

  get(key: string): KeyValue | undefined {
    const kv = this.peek(key);
    if (kv) this.keep(kv);
    return kv;
  }

  /** The value held, without counting as a use. */
  peek(key: string): KeyValue | undefined {
    return this.kept.get(key) ?? this.probation.get(key);
  }

  /** Keeps `kv` unless a later value of the key is held; a key held already counts as used again. */
  put(kv: KeyValue): void {
    const held = this.peek(kv.key);
    if (held && held.modRevision > kv.modRevision) return;
    if (held) this.drop(held);
    if (sizeOf(kv) > this.limit) return;
    const copy = Object.freeze({ ...kv });
    if (held) this.keep(copy);
    else this.add(this.probation, copy);
    this.evict();
  }

  /** A watched change: updates a key already held (in the segment it is in), never adds one. */
  changed(kv: KeyValue): void {
    const held = this.peek(kv.key);
    if (!held || held.modRevision > kv.modRevision) return;
    const segment = this.kept.has(kv.key) ? this.kept : this.probation;
    this.drop(held);
    if (sizeOf(kv) > this.limit) return;
    this.add(segment, Object.freeze({ ...kv }));
    this.evict();
  }

  /** The key was deleted at `revision` (forgotten whatever it held when the revision is unknown). */
  deleted(key: string, revision = Number.POSITIVE_INFINITY): void {
    const held = this.peek(key);
    if (held && held.modRevision < revision) this.drop(held);
  }

  get size(): number {
    return this.probation.size + this.kept.size;
  }

  /** Moves `kv` (held or just dropped) to the most recently used end of the protected segment. */
  private keep(kv: KeyValue): void {
    if (this.peek(kv.key)) this.drop(kv);
    this.add(this.kept, kv);
    // The protected segment's least recently used go back on probation, as the most recent there.
    for (const oldest of this.kept.values()) {
      if (this.keptBytes <= this.limit * PROTECTED_SHARE) break;
      this.drop(oldest);
      this.add(this.probation, oldest);
    }
  }

  private add(segment: Map<string, KeyValue>, kv: KeyValue): void {
    segment.set(kv.key, kv);
    this.bytes += sizeOf(kv);
    if (segment === this.kept) this.keptBytes += sizeOf(kv);
  }

  private drop(kv: KeyValue): void {
    if (this.kept.delete(kv.key)) this.keptBytes -= sizeOf(kv);
    else if (!this.probation.delete(kv.key)) return;
    this.bytes -= sizeOf(kv);
  }

  private evict(): void {
    for (const segment of [this.probation, this.kept]) {
      for (const oldest of segment.values()) {
        if (this.bytes <= this.limit) return;
        this.drop(oldest);
      }
    }
  }
}

/** The share of RecentValues' bytes that keys used more than once may take. */
const PROTECTED_SHARE = 0.8;

/** About what a value held in RecentValues costs. */
function sizeOf(kv: KeyValue): number {
  return 2 * (kv.key.length + kv.value.length) + 64;
}

/** How long close() waits for etcd to acknowledge the cancellation of open watches. */
const WATCH_CANCEL_WAIT_MS = 1_000;
/** Reads in one transaction; etcd takes at most 128 operations a transaction by default (--max-txn-ops). */
const MAX_TXN_READS = 128;
/** Keys per range request when a whole range is read. */
const LIST_PAGE = 1_000;

/** etcd refuses an empty key; the smallest key, "\0", starts the same range. */
function rangeStart(prefix: Buffer): Buffer {
  return prefix.length === 0 ? Buffer.from([0]) : prefix;
}

/** The first key after every key that starts with `prefix`, as etcd expects a range end. */
function rangeEnd(prefix: Buffer): Buffer {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const byte = prefix[i] as number;
    if (byte < 0xff) {
      const end = Buffer.from(prefix.subarray(0, i + 1));
      end[i] = byte + 1;
      return end;
    }
  }
  return Buffer.from([0]); // every key
}

type RevisionProblem = "compacted" | "future" | undefined;

/** etcd reports both as OUT_OF_RANGE; only the message tells them apart. */
function revisionProblem(error: unknown): RevisionProblem {
  if (!(error instanceof GRPCOutOfRangeError)) return undefined;
  if (error.message.includes("required revision has been compacted")) return "compacted";
  if (error.message.includes("required revision is a future revision")) return "future";
  return undefined;
}

/**
 * Where an etcd watch delivering changes after `afterRevision` starts. etcd refuses a start below its
 * compaction revision; starting at `afterRevision` itself (its events are dropped as already seen) makes
 * it refuse exactly the watches the contract refuses, those after a revision below the compaction.
 * Revision 0 would mean "from now", so the earliest start is 1.
 */
function watchStart(afterRevision: number): number {
  return Math.max(1, afterRevision);
}

interface PendingRead {
  key: Buffer;
  resolve: (kv: IKeyValue | undefined) => void;
  reject: (error: unknown) => void;
}

interface EtcdWatch {
  channel: WatchChannel;
  watcher: Watcher;
  /** The revision of the last event passed on; a reconnecting watch resumes after it. */
  last: number;
  /** Set once etcd ended the watch itself; there is nothing left to cancel then. */
  canceledByServer: boolean;
}

export class EtcdStore implements Store {
  private compacted = 0;
  private closed = false;
  private readonly watches = new Set<EtcdWatch>();
  private readonly cancellations = new Set<Promise<void>>();
  private readonly keyPrefix: Buffer;
  private readonly recent: RecentValues;
  /** Reads of the latest value asked for in this turn of the event loop, sent together after it. */
  private pendingReads: PendingRead[] | undefined;

  private constructor(
    private readonly client: Etcd3,
    private readonly prefix: string,
    recentValueBytes: number,
  ) {
    this.keyPrefix = Buffer.from(prefix, "utf8");
    this.recent = new RecentValues(recentValueBytes);
  }

  static async connect(endpoints: string[], options: EtcdStoreOptions = {}): Promise<EtcdStore> {
    const timeoutMs = options.requestTimeoutMs ?? 10_000;
    const client = new Etcd3({
      hosts: endpoints,
      // A range's response may be larger than gRPC's default 4 MiB (lists are read in pages, but a page
      // of large objects can still be); as Kubernetes' API server does, no limit on what is received.
      grpcOptions: { "grpc.max_receive_message_length": 2 ** 31 - 1 },
      // Watches are long-lived streams; every other call gets a deadline.
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + timeoutMs }),
    });
    const store = new EtcdStore(client, options.prefix ?? "", options.recentValueBytes ?? 96 * 2 ** 20);
    try {
      await store.revision();
    } catch (error) {
      client.close();
      throw error;
    }
    return store;
  }

  /** Leases on the same cluster and under the same key prefix, for coordinating replicas. */
  leases(): Leases {
    this.assertOpen();
    return new EtcdLeases(this.client, (key) => this.fullKey(key));
  }

  async revision(): Promise<number> {
    const response = await this.range({ key: this.fullKey("\0"), count_only: true });
    return Number(response.header.revision);
  }

  async get(key: string, options: GetOptions = {}): Promise<KeyValue | undefined> {
    if (options.mayLag) {
      this.assertOpen();
      const recent = this.recent.get(key);
      if (recent) return recent;
    }
    const kv = options.mayLag ? (await this.range({ key: this.fullKey(key), serializable: true })).kvs[0] : await this.readLatest(this.fullKey(key));
    if (!kv) {
      if (!options.mayLag) this.recent.deleted(key);
      return undefined;
    }
    const read = this.toKeyValue(kv);
    this.recent.put(read);
    return read;
  }

  /**
   * The latest value of a key. The reads asked for in one turn of the event loop go to etcd together, as
   * one read-only transaction (linearizable as a range is, one revision for all): each was asked for
   * before the request left and is answered after it came back, so it sees every write that ended first.
   */
  private readLatest(key: Buffer): Promise<IKeyValue | undefined> {
    this.assertOpen();
    return new Promise((resolve, reject) => {
      if (!this.pendingReads) {
        this.pendingReads = [];
        setImmediate(() => this.sendReads());
      }
      this.pendingReads.push({ key, resolve, reject });
    });
  }

  private sendReads(): void {
    const reads = this.pendingReads ?? [];
    this.pendingReads = undefined;
    for (let start = 0; start < reads.length; start += MAX_TXN_READS) void this.sendReadBatch(reads.slice(start, start + MAX_TXN_READS));
  }

  private async sendReadBatch(batch: PendingRead[]): Promise<void> {
    try {
      if (batch.length === 1) {
        batch[0]!.resolve((await this.range({ key: batch[0]!.key })).kvs[0]);
        return;
      }
      const response = await this.call(() => this.client.kv.txn({ compare: [], success: batch.map((read) => ({ request_range: { key: read.key } })), failure: [] }));
      batch.forEach((read, i) => read.resolve(response.responses[i]?.response_range?.kvs[0]));
    } catch (error) {
      for (const read of batch) read.reject(error);
    }
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListResult> {
    const result = await this.rangeOf(prefix, options, false);
    return { ...result, items: result.items.map((kv) => this.toKeyValue(kv)) };
  }

  /**
   * The keys and their revisions first (a keys-only range), then the wanted values as they are now, in
   * read-only transactions of up to 128 reads: where one of them changed since the keys were read, or
   * where more than a quarter of the values are wanted, every value is read at the keys' revision instead.
   */
  async listSparse(prefix: string, wanted: Wanted, options: ListOptions = {}): Promise<SparseListResult> {
    const listed = await this.rangeOf(prefix, options, true);
    const items: SparseKeyValue[] = listed.items.map((kv) => ({ key: this.keyOf(kv), modRevision: Number(kv.mod_revision) }));
    const wanting = items.filter((kv) => wanted(kv.key, kv.modRevision));
    const everyValue = () => this.list(prefix, { ...options, revision: listed.revision });
    if (wanting.length * 4 > items.length) return everyValue();
    const values = new Map<string, KeyValue>();
    for (let start = 0; start < wanting.length; start += MAX_TXN_READS) {
      const batch = wanting.slice(start, start + MAX_TXN_READS);
      const response = await this.call(() => this.client.kv.txn({ compare: [], success: batch.map((kv) => ({ request_range: { key: this.fullKey(kv.key) } })), failure: [] }));
      for (const answer of response.responses) {
        const kv = answer.response_range?.kvs[0];
        if (kv) values.set(this.keyOf(kv), this.toKeyValue(kv));
      }
    }
    if (wanting.some((kv) => values.get(kv.key)?.modRevision !== kv.modRevision)) return everyValue();
    return { ...listed, items: items.map((kv) => values.get(kv.key) ?? kv) };
  }

  /** A list's range (its values left out with `keysOnly`), at one revision, paged as list() pages. */
  private async rangeOf(prefix: string, options: ListOptions, keysOnly: boolean): Promise<Omit<ListResult, "items"> & { items: IKeyValue[] }> {
    const from = this.fullKey(prefix);
    let start = rangeStart(from);
    if (options.continueAfter !== undefined) {
      const after = this.fullKey(`${options.continueAfter}\0`);
      if (Buffer.compare(after, from) > 0) start = after;
    }
    const limit = options.limit && options.limit > 0 ? Math.trunc(options.limit) : 0;
    const revision = options.revision && options.revision > 0 ? options.revision : 0;
    if (limit === 0) return this.rangeAll(start, rangeEnd(from), revision, keysOnly);
    const response = await this.range({ key: start, range_end: rangeEnd(from), limit, revision, keys_only: keysOnly });
    return {
      items: response.kvs,
      revision: revision || Number(response.header.revision),
      more: response.more,
      // etcd counts the whole range asked for, the page included.
      ...(response.more ? { remaining: Number(response.count) - response.kvs.length } : {}),
    };
  }

  /**
   * A whole range, read in pages of LIST_PAGE keys at one revision (the first page's), so that no one
   * response grows with the range (thousands of Events are megabytes) and the result is one snapshot.
   */
  private async rangeAll(start: Buffer, end: Buffer, revision: number, keysOnly: boolean): Promise<Omit<ListResult, "items"> & { items: IKeyValue[] }> {
    const items: IKeyValue[] = [];
    let at = revision;
    let key = start;
    for (;;) {
      const response = await this.range({ key, range_end: end, limit: LIST_PAGE, revision: at, keys_only: keysOnly });
      at ||= Number(response.header.revision);
      items.push(...response.kvs);
      const last = response.kvs[response.kvs.length - 1];
      if (!response.more || !last) break;
      key = Buffer.concat([last.key, Buffer.from([0])]);
    }
    return { items, revision: at, more: false };
  }

  async count(prefix: string): Promise<number> {
    const from = this.fullKey(prefix);
    const response = await this.range({ key: rangeStart(from), range_end: rangeEnd(from), count_only: true });
    return Number(response.count);
  }

  async create(key: string, value: string): Promise<KeyValue> {
    const full = this.fullKey(key);
    const response = await this.call(() =>
      this.client.kv.txn({
        compare: [{ key: full, target: "Create", result: "Equal", create_revision: 0 }],
        success: [{ request_put: { key: full, value: Buffer.from(value, "utf8") } }],
        failure: [],
      }),
    );
    if (!response.succeeded) throw new KeyExistsError(key);
    const revision = Number(response.header.revision);
    const created = { key, value, createRevision: revision, modRevision: revision };
    this.recent.put(created);
    return created;
  }

  async update(key: string, value: string, expectedModRevision: number): Promise<KeyValue> {
    const full = this.fullKey(key);
    // A write that succeeds replaces exactly the value at `expectedModRevision`, so a copy of that value
    // gives the create revision; without one, the transaction reads the key back (without its value).
    const held = this.recent.peek(key);
    const knownCreateRevision = held?.modRevision === expectedModRevision ? held.createRevision : undefined;
    const put = { request_put: { key: full, value: Buffer.from(value, "utf8") } };
    const response = await this.call(() =>
      this.client.kv.txn({
        compare: [
          { key: full, target: "Create", result: "Greater", create_revision: 0 },
          { key: full, target: "Mod", result: "Equal", mod_revision: expectedModRevision },
        ],
        success: knownCreateRevision === undefined ? [put, { request_range: { key: full, keys_only: true } }] : [put],
        failure: [{ request_range: { key: full } }],
      }),
    );
    if (!response.succeeded) this.refused(key, response.responses[0]?.response_range?.kvs[0]);
    const written = response.responses[1]?.response_range?.kvs[0];
    const revision = Number(response.header.revision);
    const createRevision = knownCreateRevision ?? (written ? Number(written.create_revision) : revision);
    const updated = { key, value, createRevision, modRevision: revision };
    this.recent.put(updated);
    return updated;
  }

  async delete(key: string, expectedModRevision?: number): Promise<KeyValue> {
    const full = this.fullKey(key);
    const compare =
      expectedModRevision === undefined
        ? [{ key: full, target: "Create" as const, result: "Greater" as const, create_revision: 0 }]
        : [
            { key: full, target: "Create" as const, result: "Greater" as const, create_revision: 0 },
            { key: full, target: "Mod" as const, result: "Equal" as const, mod_revision: expectedModRevision },
          ];
    const response = await this.call(() =>
      this.client.kv.txn({
        compare,
        success: [{ request_delete_range: { key: full, prev_kv: true } }],
        failure: [{ request_range: { key: full } }],
      }),
    );
    if (!response.succeeded) this.refused(key, response.responses[0]?.response_range?.kvs[0]);
    this.recent.deleted(key, Number(response.header.revision));
    const previous = response.responses[0]?.response_delete_range?.prev_kvs[0];
    if (!previous) throw new KeyNotFoundError(key);
    return {
      key,
      value: previous.value.toString("utf8"),
      createRevision: Number(previous.create_revision),
      modRevision: Number(response.header.revision),
    };
  }

  watch(prefix: string, options: WatchOptions): Watch {
    const from = this.fullKey(prefix);
    if (this.closed || options.afterRevision < this.compacted) {
      const refused = new WatchChannel(options);
      refused.fail(this.closed ? new StoreClosedError() : new CompactedError(options.afterRevision, this.compacted));
      return refused;
    }
    const state: EtcdWatch = {
      channel: new WatchChannel(options, () => this.endWatch(state)),
      watcher: this.client
        .watch()
        .inRange({ start: rangeStart(from), end: rangeEnd(from) })
        .withPreviousKV()
        .startRevision(String(watchStart(options.afterRevision)))
        .watcher(),
      last: options.afterRevision,
      canceledByServer: false,
    };
    this.watches.add(state);

    state.watcher.on("data", (response: IWatchResponse) => this.deliver(state, response));
    // After a lost connection the client resumes from the last revision it saw in a response header,
    // which can be past events not yet received; resume from the last event passed on instead.
    state.watcher.on("disconnected", () => {
      state.watcher.request.start_revision = watchStart(state.last);
    });
    state.watcher.on("error", (error: Error) => {
      state.canceledByServer = true;
      void this.watchFailure(state, error);
    });
    return state.channel;
  }

  async compact(revision: number): Promise<void> {
    if (revision <= this.compacted) {
      this.assertOpen();
      return;
    }
    try {
      await this.call(() => this.client.kv.compact({ revision, physical: true }));
      this.compacted = Math.max(this.compacted, revision);
    } catch (error) {
      const problem = revisionProblem(error);
      if (problem === "compacted") return; // someone compacted further already
      if (problem === "future") throw new FutureRevisionError(revision, await this.revision());
      throw error;
    }
  }

  /**
   * etcd does not report its compaction revision, but it is the oldest revision a read can still ask
   * for: search for it upwards from the last one known.
   */
  async compactedRevision(): Promise<number> {
    let low = Math.max(this.compacted, 1);
    if (await this.readableAt(low)) return this.compacted;
    let high = await this.revision();
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (await this.readableAt(middle)) high = middle;
      else low = middle;
    }
    this.compacted = Math.max(this.compacted, high);
    return this.compacted;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    for (const state of [...this.watches]) state.channel.close();
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.cancellations]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, WATCH_CANCEL_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    this.client.close();
  }

  private fullKey(key: string): Buffer {
    return this.prefix === "" ? Buffer.from(key, "utf8") : Buffer.from(this.prefix + key, "utf8");
  }

  private keyOf(kv: IKeyValue): string {
    return kv.key.subarray(this.keyPrefix.length).toString("utf8");
  }

  private toKeyValue(kv: IKeyValue): KeyValue {
    return {
      key: this.keyOf(kv),
      value: kv.value.toString("utf8"),
      createRevision: Number(kv.create_revision),
      modRevision: Number(kv.mod_revision),
    };
  }

  /** A write whose compare failed: the transaction read the key's current value instead. */
  private refused(key: string, current: IKeyValue | undefined): never {
    if (!current) {
      this.recent.deleted(key);
      throw new KeyNotFoundError(key);
    }
    const kv = this.toKeyValue(current);
    this.recent.put(kv);
    throw new RevisionMismatchError(key, kv);
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreClosedError();
  }

  private async call<T>(request: () => Promise<T>): Promise<T> {
    this.assertOpen();
    return request();
  }

  private async range(request: IRangeRequest): Promise<IRangeResponse> {
    try {
      return await this.call(() => this.client.kv.range(request));
    } catch (error) {
      const requested = Number(request.revision ?? 0);
      const problem = revisionProblem(error);
      if (problem === "compacted") throw new CompactedError(requested, await this.compactedRevision());
      if (problem === "future") throw new FutureRevisionError(requested, await this.revision());
      throw error;
    }
  }

  private async readableAt(revision: number): Promise<boolean> {
    try {
      await this.call(() => this.client.kv.range({ key: this.fullKey("\0"), count_only: true, revision }));
      return true;
    } catch (error) {
      if (revisionProblem(error) === "compacted") return false;
      throw error;
    }
  }

  private deliver(state: EtcdWatch, response: IWatchResponse): void {
    // Every event of one revision arrives in one response; anything at or below `last` was passed on
    // already (or, at the start, is the revision the watch asked to follow).
    const seen = state.last;
    for (const event of response.events) {
      const revision = Number(event.kv.mod_revision);
      if (revision <= seen) continue;
      state.last = Math.max(state.last, revision);
      const change = this.toWatchEvent(event.type, event.kv, event.prev_kv, revision);
      if (change.type === "put") this.recent.changed(change.kv);
      else this.recent.deleted(change.key, revision);
      state.channel.push(change);
    }
  }

  private toWatchEvent(
    type: "Put" | "Delete",
    kv: IKeyValue,
    prevKv: IKeyValue | undefined,
    revision: number,
  ): WatchEvent {
    const prev = prevKv ? this.toKeyValue(prevKv) : undefined;
    if (type === "Delete") {
      const key = kv.key.subarray(this.keyPrefix.length).toString("utf8");
      // The previous value is missing only when its revision was compacted away meanwhile.
      return { type: "delete", key, revision, prev: prev ?? { key, value: "", createRevision: 0, modRevision: 0 } };
    }
    const current = this.toKeyValue(kv);
    return prev ? { type: "put", kv: current, prev } : { type: "put", kv: current };
  }

  /** etcd cancels a watch that starts (or falls) behind a compaction; the client only says "canceled". */
  private async watchFailure(state: EtcdWatch, error: Error): Promise<void> {
    if (state.channel.isEnded) return;
    let compacted = this.compacted;
    try {
      if (!this.closed) compacted = await this.compactedRevision();
    } catch {
      // keep the last known compaction revision
    }
    if (state.last < compacted) state.channel.fail(new CompactedError(state.last, compacted));
    else state.channel.fail(error);
  }

  private endWatch(state: EtcdWatch): void {
    if (!this.watches.delete(state) || state.canceledByServer) return;
    const cancellation = state.watcher
      .cancel()
      .catch(() => {})
      .finally(() => this.cancellations.delete(cancellation));
    this.cancellations.add(cancellation);
  }
}
