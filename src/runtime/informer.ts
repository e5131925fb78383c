// Informers: one list + watch per kind into an indexed cache (cache.ts), with handlers told of every
// change. A watch that ends with 410 Gone (its resourceVersion was compacted away) relists and tells
// the handlers what changed meanwhile; any other watch failure resumes from the last resourceVersion
// seen. Every resync period the handlers hear of every cached object again, so a controller that missed
// something catches up; the period grows with the cache so that a fleet's resyncs cost the same on
// average whatever its size (safetyNetInterval).
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Logger } from "pino";
import type { KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { GoneError } from "../apiserver/errors.ts";
import type { ObjectEvent, ObjectApi, ObjectWatch } from "../apiserver/objects.ts";
import { ObjectCache } from "./cache.ts";
import { sleep, systemClock, type Clock } from "./clock.ts";
import { objectKey } from "./keys.ts";

export interface InformerHandler<T> {
  added?(object: T): void;
  /** Also called on every resync, with `previous` the same object. */
  updated?(previous: T, object: T): void;
  /** The last state the informer knew of the object. */
  deleted?(object: T): void;
}

export interface InformerOptions {
  log: Logger;
  clock?: Clock;
  /**
   * How often handlers hear of every cached object again (0: never). Default 10 minutes, or longer where
   * the cache holds more than `resyncPerSecond` objects per second of it.
   */
  resyncMs?: number;
  /** Most objects a resync hands out per second on average (default SAFETY_CHECKS_PER_SECOND; 0: no bound). */
  resyncPerSecond?: number;
  /** Objects per page when listing. Default 500. */
  pageSize?: number;
  /** First and longest wait before retrying a failed list or watch. Default 200 ms and 10 s. */
  retryBaseMs?: number;
  retryCapMs?: number;
}

const DEFAULT_RESYNC_MS = 10 * 60_000;

/**
 * How many safety-net checks a second — a resync's idle checks of a kind, a Running machine's look at what
 * its watches already follow — a fleet pays for on average. They are there for a change nobody told, so
 * their cost is held the same at any size: a fixed period up to `perSecond × period` objects, longer beyond
 * (at 2 a second, 1,200 objects are looked at every 10 minutes, 10,000 about every 83 minutes).
 */
export const SAFETY_CHECKS_PER_SECOND = 2;

/** The period of a safety net over `count` objects: `baseMs`, or long enough to look at only `perSecond` of them a second. */
export function safetyNetInterval(baseMs: number, count: number, perSecond = SAFETY_CHECKS_PER_SECOND): number {
  return perSecond > 0 ? Math.max(baseMs, Math.ceil((count * 1000) / perSecond)) : baseMs;
}

/** Objects a resync hands out per turn of the event loop. */
const RESYNC_SLICE = 500;

export class Informer<T extends KubeObject> {
  readonly cache = new ObjectCache<T>();
  private readonly handlers = new Set<InformerHandler<T>>();
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly resyncMs: number;
  private readonly resyncPerSecond: number;
  private readonly pageSize: number;
  private readonly retryBaseMs: number;
  private readonly retryCapMs: number;
  private readonly stopping = new AbortController();
  private watch?: ObjectWatch;
  /** Counts watches started; events and errors of a superseded watch are ignored. */
  private watchGeneration = 0;
  private revision = "";
  private synced = false;
  private started?: Promise<void>;
  private cancelResync?: () => void;

  constructor(
    private readonly objects: ObjectApi,
    readonly kind: KindDefinition<T>,
    options: InformerOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.log = options.log.child({ informer: kind.plural });
    this.resyncMs = options.resyncMs ?? DEFAULT_RESYNC_MS;
    this.resyncPerSecond = options.resyncPerSecond ?? SAFETY_CHECKS_PER_SECOND;
    this.pageSize = options.pageSize ?? 500;
    this.retryBaseMs = options.retryBaseMs ?? 200;
    this.retryCapMs = options.retryCapMs ?? 10_000;
  }

  private get def(): KindDefinition {
    return this.kind as unknown as KindDefinition;
  }

  /** Adds a handler; returns the function that removes it. */
  on(handler: InformerHandler<T>): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Lists, starts watching, and resolves once the cache holds the first list. Idempotent. */
  start(): Promise<void> {
    this.started ??= this.listAndWatch().then(() => this.scheduleResync());
    return this.started;
  }

  stop(): void {
    this.stopping.abort();
    this.watch?.close();
    this.watch = undefined;
    this.cancelResync?.();
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async listAndWatch(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        await this.relist();
        await this.startWatch();
        return;
      } catch (error) {
        if (this.stopped) return;
        this.log.warn({ err: (error as Error).message, attempt }, "listing failed; retrying");
        await sleep(this.clock, this.retryDelay(attempt), this.stopping.signal);
      }
    }
  }

  private retryDelay(attempt: number): number {
    return Math.min(this.retryCapMs, this.retryBaseMs * 2 ** Math.min(attempt, 20));
  }

  /** Reads every object (a consistent snapshot, page by page) and brings the cache to it. */
  private async relist(): Promise<void> {
    const fresh = new Map<string, T>();
    let token: string | undefined;
    let revision = "";
    do {
      const page = await this.objects.list(this.def, undefined, { limit: this.pageSize, continue: token });
      for (const object of page.items) fresh.set(objectKey(object), object as T);
      revision = page.metadata.resourceVersion;
      token = page.metadata.continue;
    } while (token && !this.stopped);
    if (this.stopped) return;
    for (const key of [...this.cache.keys()]) {
      if (fresh.has(key)) continue;
      const gone = this.cache.delete(key);
      if (gone) this.notify((h) => h.deleted?.(gone));
    }
    for (const object of fresh.values()) this.apply(object);
    this.revision = revision;
    this.synced = true;
  }

  private apply(object: T): void {
    const previous = this.cache.set(object);
    const current = this.cache.get(objectKey(object)) as T;
    if (!previous) this.notify((h) => h.added?.(current));
    else if (previous.metadata.resourceVersion !== current.metadata.resourceVersion) this.notify((h) => h.updated?.(previous, current));
  }

  private async startWatch(): Promise<void> {
    const generation = ++this.watchGeneration;
    const current = () => generation === this.watchGeneration;
    const watch = await this.objects.watch(
      this.def,
      undefined,
      { resourceVersion: this.revision },
      (event) => {
        if (current()) this.onEvent(event);
      },
      (error) => {
        if (current()) this.onWatchError(error);
      },
    );
    if (this.stopped || !current()) watch.close();
    else this.watch = watch;
  }

  private onEvent(event: ObjectEvent): void {
    if (this.stopped) return;
    const object = event.object as T;
    if (event.type === "ADDED" || event.type === "MODIFIED") this.apply(object);
    else if (event.type === "DELETED") {
      const gone = this.cache.delete(objectKey(object)) ?? object;
      this.notify((h) => h.deleted?.(gone));
    } else return;
    this.revision = object.metadata.resourceVersion ?? this.revision;
  }

  private onWatchError(error: Error): void {
    this.watchGeneration++;
    this.watch?.close();
    this.watch = undefined;
    if (this.stopped) return;
    if (error instanceof GoneError) {
      this.log.info({ resourceVersion: this.revision }, "watch expired (410 Gone); relisting");
      void this.listAndWatch();
      return;
    }
    this.log.warn({ err: error.message, resourceVersion: this.revision }, "watch failed; resuming");
    void this.resumeWatch();
  }

  /** Watches again from the last resourceVersion seen; a Gone from there relists. */
  private async resumeWatch(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      await sleep(this.clock, this.retryDelay(attempt), this.stopping.signal);
      if (this.stopped) return;
      try {
        await this.startWatch();
        return;
      } catch (error) {
        if (error instanceof GoneError) {
          void this.listAndWatch();
          return;
        }
        this.log.warn({ err: (error as Error).message, attempt }, "resuming the watch failed; retrying");
      }
    }
  }

  private scheduleResync(): void {
    if (this.resyncMs <= 0 || this.stopped) return;
    this.cancelResync = this.clock.setTimer(() => void this.resync(), safetyNetInterval(this.resyncMs, this.cache.size, this.resyncPerSecond));
  }

  /**
   * Hands every cached object to the handlers again, a slice at a time with the event loop's other work
   * between slices (every kind's resync at once held it for two seconds at 10,000 clusters). An object
   * changed or deleted meanwhile is left out: the handlers have heard of that change already.
   */
  private async resync(): Promise<void> {
    const objects = [...this.cache.values()];
    for (let start = 0; start < objects.length && !this.stopped; start += RESYNC_SLICE) {
      if (start > 0) await nextTurn();
      for (const object of objects.slice(start, start + RESYNC_SLICE)) {
        if (this.cache.get(objectKey(object)) === object) this.notify((h) => h.updated?.(object, object));
      }
    }
    this.scheduleResync();
  }

  private notify(call: (handler: InformerHandler<T>) => void): void {
    for (const handler of this.handlers) {
      try {
        call(handler);
      } catch (error) {
        this.log.error({ err: (error as Error).message }, "informer handler failed");
      }
    }
  }
}

/** One informer per kind, shared by every controller that reads that kind. */
export class Informers {
  private readonly byKind = new Map<string, Informer<KubeObject>>();
  private running = false;

  constructor(
    private readonly objects: ObjectApi,
    private readonly options: InformerOptions,
  ) {}

  /** The informer of a kind some controller already reads, without starting one for it. */
  existing<T extends KubeObject>(kind: KindDefinition<T>): Informer<T> | undefined {
    return this.byKind.get(`${kind.group}/${kind.version}/${kind.plural}`) as Informer<T> | undefined;
  }

  for<T extends KubeObject>(kind: KindDefinition<T>): Informer<T> {
    const id = `${kind.group}/${kind.version}/${kind.plural}`;
    let informer = this.byKind.get(id) as Informer<T> | undefined;
    if (!informer) {
      informer = new Informer<T>(this.objects, kind, this.options);
      this.byKind.set(id, informer as unknown as Informer<KubeObject>);
      if (this.running) void informer.start();
    }
    return informer;
  }

  /** Starts every informer and resolves once all have synced. */
  async start(): Promise<void> {
    this.running = true;
    await Promise.all([...this.byKind.values()].map((i) => i.start()));
  }

  stop(): void {
    this.running = false;
    for (const informer of this.byKind.values()) informer.stop();
  }
}
