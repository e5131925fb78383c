// A view of a store under a key prefix: keys are prefixed on the way in and stripped on the way out, and
// lists, counts and watches see only the view's keys. Many views can share one store (the sim cloud keeps
// every emulated workload cluster in one SQLite file this way).
//
// Revisions, compaction and history are the underlying store's: a view's revision rises with writes made
// through other views too (it stays monotonic, and every watch and list remains consistent), and
// `compact` compacts the whole store.
//
// Views made by one `PrefixedStoreFamily` share a single watch on the underlying store, so thousands of
// views cost one watcher there instead of one per view, and an event reaches its view by a map lookup.
import {
  KeyExistsError,
  KeyNotFoundError,
  RevisionMismatchError,
  StoreClosedError,
  type GetOptions,
  type KeyValue,
  type ListOptions,
  type ListResult,
  listSparsely,
  type SparseListResult,
  type Store,
  type Watch,
  type WatchEvent,
  type WatchOptions,
  type Wanted,
} from "./store.ts";
import { WatchChannel } from "./watch-channel.ts";

export interface PrefixedStoreOptions {
  /** Close the underlying store when the view is closed (default false). */
  ownsBase?: boolean;
  /** Deliver watches through this family's shared watch (set by `PrefixedStoreFamily.view`). */
  family?: PrefixedStoreFamily;
}

function eventKey(event: WatchEvent): string {
  return event.type === "put" ? event.kv.key : event.key;
}

function eventRevision(event: WatchEvent): number {
  return event.type === "put" ? event.kv.modRevision : event.revision;
}

export class PrefixedStore implements Store {
  private closed = false;
  private readonly watches = new Set<Watch>();

  constructor(
    private readonly base: Store,
    readonly prefix: string,
    private readonly options: PrefixedStoreOptions = {},
  ) {
    if (prefix === "") throw new Error("a prefixed store needs a non-empty prefix");
  }

  private inner(key: string): string {
    return this.prefix + key;
  }

  private outer(key: string): string {
    return key.startsWith(this.prefix) ? key.slice(this.prefix.length) : key;
  }

  /** A list's options as the underlying store takes them (the key it resumes after, prefixed). */
  private innerList(options: ListOptions): ListOptions {
    return options.continueAfter === undefined ? options : { ...options, continueAfter: this.inner(options.continueAfter) };
  }

  private strip(kv: KeyValue): KeyValue {
    return { ...kv, key: this.outer(kv.key) };
  }

  /** The event as the view shows it. */
  translate(event: WatchEvent): WatchEvent {
    if (event.type === "put") {
      return event.prev ? { type: "put", kv: this.strip(event.kv), prev: this.strip(event.prev) } : { type: "put", kv: this.strip(event.kv) };
    }
    return { type: "delete", key: this.outer(event.key), revision: event.revision, prev: this.strip(event.prev) };
  }

  /** Runs a call on the underlying store, naming keys in its errors as the view does. */
  private async call<T>(run: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreClosedError();
    try {
      return await run();
    } catch (error) {
      if (error instanceof KeyExistsError) throw new KeyExistsError(this.outer(error.key));
      if (error instanceof KeyNotFoundError) throw new KeyNotFoundError(this.outer(error.key));
      if (error instanceof RevisionMismatchError) throw new RevisionMismatchError(this.outer(error.key), this.strip(error.current));
      throw error;
    }
  }

  revision(): Promise<number> {
    return this.call(() => this.base.revision());
  }

  get(key: string, options?: GetOptions): Promise<KeyValue | undefined> {
    return this.call(async () => {
      const kv = await this.base.get(this.inner(key), options);
      return kv ? this.strip(kv) : undefined;
    });
  }

  list(prefix: string, options: ListOptions = {}): Promise<ListResult> {
    return this.call(async () => {
      const result = await this.base.list(this.inner(prefix), this.innerList(options));
      return { ...result, items: result.items.map((kv) => this.strip(kv)) };
    });
  }

  listSparse(prefix: string, wanted: Wanted, options: ListOptions = {}): Promise<SparseListResult> {
    return this.call(async () => {
      const result = await listSparsely(this.base, this.inner(prefix), (key, modRevision) => wanted(this.outer(key), modRevision), this.innerList(options));
      return { ...result, items: result.items.map((kv) => ({ ...kv, key: this.outer(kv.key) })) };
    });
  }

  count(prefix: string): Promise<number> {
    return this.call(() => this.base.count(this.inner(prefix)));
  }

  create(key: string, value: string): Promise<KeyValue> {
    return this.call(async () => this.strip(await this.base.create(this.inner(key), value)));
  }

  update(key: string, value: string, expectedModRevision: number): Promise<KeyValue> {
    return this.call(async () => this.strip(await this.base.update(this.inner(key), value, expectedModRevision)));
  }

  delete(key: string, expectedModRevision?: number): Promise<KeyValue> {
    return this.call(async () => this.strip(await this.base.delete(this.inner(key), expectedModRevision)));
  }

  watch(prefix: string, options: WatchOptions): Watch {
    if (this.closed) {
      const channel = new WatchChannel(options);
      channel.fail(new StoreClosedError());
      return channel;
    }
    const full = this.inner(prefix);
    let watch: Watch | undefined = this.options.family?.subscribe(this, full, options, () => this.watches.delete(watch!));
    if (!watch) {
      const direct = this.base.watch(full, {
        afterRevision: options.afterRevision,
        onEvent: (event) => options.onEvent(this.translate(event)),
        onError: (error) => {
          this.watches.delete(handle);
          options.onError(error);
        },
      });
      const handle: Watch = {
        close: () => {
          this.watches.delete(handle);
          direct.close();
        },
        progress: () => direct.progress?.(),
      };
      watch = handle;
    }
    this.watches.add(watch);
    return watch;
  }

  compact(revision: number): Promise<void> {
    return this.call(() => this.base.compact(revision));
  }

  compactedRevision(): Promise<number> {
    return this.call(() => this.base.compactedRevision());
  }

  /** Ends the view's watches (without calling their `onError`); later calls fail with StoreClosedError. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const watch of [...this.watches]) watch.close();
    this.watches.clear();
    if (this.options.ownsBase) await this.base.close();
  }
}

interface Subscriber {
  view: PrefixedStore;
  /** The full key prefix watched (the view's prefix and the watch's own). */
  prefix: string;
  afterRevision: number;
  channel: WatchChannel;
}

/**
 * Views named `root + name + "/"` over one store, whose watches share one watch on `root`. A watch
 * starting at or after the revision the shared watch has reached joins it; one starting further back
 * (it needs history the shared watch has already passed) gets a watch of its own on the store.
 */
export class PrefixedStoreFamily {
  private shared: Watch | undefined;
  /** The last revision the shared watch delivered (or the one it started after). */
  private cursor = 0;
  private readonly byView = new Map<string, Set<Subscriber>>();
  private subscriberCount = 0;

  constructor(
    private readonly base: Store,
    readonly root: string,
  ) {
    if (!root.endsWith("/")) throw new Error(`the root of a store family must end with "/" (got "${root}")`);
  }

  /** The view of one member, e.g. `view("c-1")` → keys under `<root>c-1/`. */
  view(name: string): PrefixedStore {
    if (name === "" || name.includes("/")) throw new Error(`"${name}" cannot name a view (empty, or containing "/")`);
    return new PrefixedStore(this.base, `${this.root}${name}/`, { family: this });
  }

  /** Joins the shared watch, or answers undefined when the watch must replay history of its own. */
  subscribe(view: PrefixedStore, prefix: string, options: WatchOptions, onEnd: () => void): Watch | undefined {
    if (!view.prefix.startsWith(this.root)) return undefined;
    if (this.shared && options.afterRevision < this.cursor) return undefined;
    const subscriber: Subscriber = {
      view,
      prefix,
      afterRevision: options.afterRevision,
      // Every change the shared watch has handed over is dispatched at once: the member is as far as it.
      channel: new WatchChannel(
        options,
        () => {
          this.unsubscribe(subscriber);
          onEnd();
        },
        () => this.shared?.progress?.(),
      ),
    };
    let set = this.byView.get(view.prefix);
    if (!set) this.byView.set(view.prefix, (set = new Set()));
    set.add(subscriber);
    this.subscriberCount += 1;
    if (!this.shared) this.start(options.afterRevision);
    return subscriber.channel;
  }

  private start(afterRevision: number): void {
    this.cursor = afterRevision;
    this.shared = this.base.watch(this.root, {
      afterRevision,
      onEvent: (event) => this.dispatch(event),
      onError: (error) => {
        // Every member watch ends with the error (its consumer relists and watches again).
        this.shared = undefined;
        for (const set of [...this.byView.values()]) for (const subscriber of [...set]) subscriber.channel.fail(error);
      },
    });
  }

  private dispatch(event: WatchEvent): void {
    const revision = eventRevision(event);
    this.cursor = revision;
    const key = eventKey(event);
    const end = key.indexOf("/", this.root.length);
    if (end < 0) return;
    const set = this.byView.get(key.slice(0, end + 1));
    if (!set) return;
    for (const subscriber of set) {
      if (revision <= subscriber.afterRevision || !key.startsWith(subscriber.prefix)) continue;
      subscriber.channel.push(subscriber.view.translate(event));
    }
  }

  private unsubscribe(subscriber: Subscriber): void {
    const set = this.byView.get(subscriber.view.prefix);
    if (!set?.delete(subscriber)) return;
    this.subscriberCount -= 1;
    if (set.size === 0) this.byView.delete(subscriber.view.prefix);
    if (this.subscriberCount === 0 && this.shared) {
      // Nobody listens: stop the shared watch; the next subscriber starts it again where it needs.
      const shared = this.shared;
      this.shared = undefined;
      shared.close();
    }
  }

  /** Members currently watching (for tests and metrics). */
  get watchers(): number {
    return this.subscriberCount;
  }
}
