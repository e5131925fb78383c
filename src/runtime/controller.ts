// A controller: an informer's changes become keys in a work queue; workers take keys and reconcile
// them, each key by one worker at a time. Only keys of the shards this replica works on are queued
// and processed; when a shard becomes active, every cached key of it is queued. A reconcile's result
// decides what follows: done, again after a delay (requeueAfter), or again after the key's backoff
// (errors, and 409 conflicts — those quietly, as a stale read is expected now and then).
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Logger } from "pino";
import type { KubeObject } from "../api/meta.ts";
import { ConflictError } from "../apiserver/errors.ts";
import type { Client } from "./client.ts";
import type { Clock } from "./clock.ts";
import type { EventRecorder, EventType } from "./events.ts";
import type { Informer } from "./informer.ts";
import { InternalReconcileError } from "./failures.ts";
import { objectKey, splitKey } from "./keys.ts";
import type { ControllerMetrics, ReconcileOutcome } from "./metrics.ts";
import { WorkQueue, type BackoffOptions } from "./queue.ts";
import type { LoopPacer } from "./pacer.ts";
import { ShardLostError, type ShardSet } from "./shards.ts";

export interface Result {
  /** Reconcile the key again after this long (e.g. to check on something slow). */
  requeueAfterMs?: number;
  /** Reconcile the key again after its backoff, without reporting an error. */
  requeue?: boolean;
  /**
   * The requeue after `requeueAfterMs` is a periodic check of an object at rest (a health check): it
   * waits behind every changed key and every re-check of objects still on their way.
   */
  idle?: boolean;
}

export interface ReconcileContext {
  readonly key: string;
  readonly namespace?: string;
  readonly name: string;
  /** Aborts when this replica loses the key's shard; writes through `client` then fail. */
  readonly signal: AbortSignal;
  /** Writes are fenced by `signal` (and, as every write, by resourceVersion when one is given). */
  readonly client: Client;
  readonly log: Logger;
  readonly clock: Clock;
  /** How many reconciles of the key failed in a row before this one (0 after a success). */
  readonly failures: number;
  /**
   * Records an Event about the object (skipped once the shard is lost, unless it reports a write
   * already made: `written`, since the replica taking over finds no change left to report).
   */
  event(object: KubeObject, type: EventType, reason: string, message: string, options?: { written?: boolean }): Promise<void>;
}

export type Reconcile = (ctx: ReconcileContext) => Promise<Result | void>;

export interface ControllerOptions<T extends KubeObject> {
  /** Short name: logs, metrics, e.g. "operation". */
  name: string;
  /** The informer of the kind reconciled. */
  informer: Informer<T>;
  reconcile: Reconcile;
  /** Keys reconciled at once (never the same key twice). Default 4. */
  concurrency?: number;
  backoff?: Partial<BackoffOptions>;
  /**
   * The key of the root object the key belongs to, which decides its shard: map a child to its owner
   * so that one cluster's objects are reconciled by one replica. Default: the key itself.
   */
  rootKey?: (key: string) => string;
  /**
   * When set, an update of a reconciled object queues it only when this says the change matters (e.g.
   * `notStatusOnly`: a controller whose own status writes need no second look). Creations, deletions
   * and resyncs always queue it.
   */
  changed?: (previous: T, object: T) => boolean;
  /**
   * Which objects the informer's resync queues for an idle check (default: every one). A resync is the
   * safety net for what no watch tells: an object the controller acts on only when it or something
   * watched changes (an ended Operation, a cluster that is not this controller's business) is left out,
   * as each check of it is a reconcile for nothing — ten thousand of them a sync period at 10,000 clusters.
   */
  resyncs?: (object: T) => boolean;
  /**
   * Which waiting key a worker takes first, lower first (see WorkQueue): e.g. an older cluster's
   * objects before a younger one's. Default: first come first served.
   */
  priority?: (key: string) => number;
}

/**
 * The object changed beyond its status: a new generation (spec), or other metadata (labels, finalizers,
 * deletion). The record of who wrote what (managedFields) moves with every write, a status write too.
 */
export function notStatusOnly(previous: KubeObject, object: KubeObject): boolean {
  if (previous.metadata.generation !== object.metadata.generation) return true;
  const { resourceVersion: _a, managedFields: _c, ...before } = previous.metadata;
  const { resourceVersion: _b, managedFields: _d, ...after } = object.metadata;
  return JSON.stringify(before) !== JSON.stringify(after);
}

export interface ControllerDependencies {
  shards: ShardSet;
  client: Client;
  recorder: EventRecorder;
  log: Logger;
  clock: Clock;
  metrics?: ControllerMetrics;
  /** When set, workers wait for room on the event loop before taking a key. */
  pacer?: LoopPacer;
}

/** Something that queues keys from events of its own (see Controller.addSource). */
export interface EventSource {
  start(): void;
  stop(): void;
}

export class Controller<T extends KubeObject> {
  readonly name: string;
  readonly queue: WorkQueue;
  private readonly informer: Informer<T>;
  private readonly reconcileFn: Reconcile;
  private readonly concurrency: number;
  private readonly rootKey: (key: string) => string;
  private readonly log: Logger;
  private readonly unsubscribe: (() => void)[] = [];
  private readonly sources: EventSource[] = [];
  private workers: Promise<void>[] = [];
  private readonly resyncs?: (object: T) => boolean;

  constructor(
    options: ControllerOptions<T>,
    private readonly deps: ControllerDependencies,
  ) {
    this.name = options.name;
    this.informer = options.informer;
    this.reconcileFn = options.reconcile;
    this.concurrency = options.concurrency ?? 4;
    this.rootKey = options.rootKey ?? ((key) => key);
    this.resyncs = options.resyncs;
    this.log = deps.log.child({ controller: options.name });
    this.queue = new WorkQueue({ clock: deps.clock, backoff: options.backoff, observer: deps.metrics?.queueObserver(options.name), priority: options.priority });
    this.unsubscribe.push(
      this.informer.on({
        added: (o) => this.enqueue(objectKey(o)),
        // A resync hands the same object again: an idle check, which must not crowd out real work.
        updated: (previous, o) => {
          if (previous === o) this.idleCheck(objectKey(o));
          else if (!options.changed || options.changed(previous, o)) this.enqueue(objectKey(o));
        },
        deleted: (o) => this.enqueue(objectKey(o)),
      }),
      deps.shards.onActivated((shards) => this.enqueueShards(shards)),
    );
  }

  /** The shard of a key of this controller. */
  shardOf(key: string): number {
    return this.deps.shards.shardOf(this.rootKey(key));
  }

  /** Queues the key if this replica works on its shard. */
  enqueue(key: string): void {
    if (this.deps.shards.isActive(this.shardOf(key))) this.queue.add(key);
  }

  /**
   * Queues the key for an idle check (behind every other key) if this replica works on its shard. A
   * resync is there for keys nobody would look at again: one already due back later (a safety poll, a
   * health check) is left to that, so a large fleet at rest is not checked twice over; so is one that
   * `resyncs` leaves out.
   */
  private idleCheck(key: string): void {
    if (this.queue.isScheduled(key)) return;
    const object = this.resyncs && this.informer.cache.get(key);
    if (object && !this.resyncs!(object)) return;
    if (this.deps.shards.isActive(this.shardOf(key))) this.queue.addAfter(key, 0, "idle");
  }

  /**
   * Changes to objects of another kind queue the keys `keysOf` names (e.g. an owner's key). With
   * `changed`, an update queues them only when it says the change matters to this controller (every
   * status write of a busy kind would otherwise queue its watchers again).
   */
  watch<U extends KubeObject>(informer: Informer<U>, keysOf: (object: U) => readonly string[], changed?: (previous: U, object: U) => boolean): void {
    const each = (object: U) => {
      for (const key of keysOf(object)) this.enqueue(key);
    };
    this.unsubscribe.push(
      informer.on({
        added: each,
        updated: (previous, object) => {
          // A resync of a watched kind queues nothing: this controller's own informer resyncs every key it
          // has, at a rate held over the fleet. Fanned out, one Connection's resync every 10 minutes
          // checked each of its 10,000 clusters and their Infrastructures again whatever that rate.
          if (previous === object) return;
          if (!changed || changed(previous, object)) each(object);
        },
        deleted: each,
      }),
    );
  }

  /**
   * Events from outside the object service (a cloud's change feed) that queue keys of this controller:
   * started with the controller's workers, stopped with them.
   */
  addSource(source: EventSource): void {
    this.sources.push(source);
  }

  start(): void {
    for (let i = 0; i < this.concurrency; i++) this.workers.push(this.work());
    for (const source of this.sources) source.start();
  }

  /** Takes no more keys; resolves once every worker has finished its current key. */
  async stop(): Promise<void> {
    this.queue.shutDown();
    for (const source of this.sources) source.stop();
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    await Promise.all(this.workers);
    this.workers = [];
  }

  /** Stops handing out keys (the first step of a graceful shutdown). */
  stopTaking(): void {
    this.queue.shutDown();
  }

  private enqueueShards(shards: number[]): void {
    const wanted = new Set(shards);
    for (const key of this.informer.cache.keys()) if (wanted.has(this.shardOf(key))) this.queue.add(key);
  }

  private async work(): Promise<void> {
    for (;;) {
      // A turn of the event loop before each key. Reconciles that only read the caches and write the
      // in-process store (SQLite is synchronous) never leave the microtask queue: without it one worker
      // ran key after key in a single turn — seconds while deleting 10,000 clusters, with timers, network
      // replies, API requests and the pacer's samples all waiting behind it.
      await nextTurn();
      const key = await this.queue.get();
      if (key === undefined) return;
      // With the key in hand, so that the pacer is asked right before the work and holds only workers
      // that have some.
      const held = (await this.deps.pacer?.admit()) ?? 0;
      if (held > 0) this.deps.metrics?.paced.inc({ controller: this.name }, held / 1000);
      if (this.queue.closed) {
        this.queue.done(key);
        return;
      }
      const ticket = this.deps.shards.begin(this.shardOf(key));
      if (!ticket) {
        // The shard moved to another replica while the key waited.
        this.queue.forget(key);
        this.queue.done(key);
        continue;
      }
      const started = performance.now();
      let outcome: ReconcileOutcome = "error";
      try {
        outcome = await this.process(key, ticket.signal);
      } finally {
        ticket.end();
        this.queue.done(key);
        this.deps.metrics?.duration.observe({ controller: this.name, outcome }, (performance.now() - started) / 1000);
      }
    }
  }

  private async process(key: string, signal: AbortSignal): Promise<ReconcileOutcome> {
    const { namespace, name } = splitKey(key);
    const log = this.log.child(namespace ? { namespace, name } : { name });
    const client = this.deps.client.fencedBy(signal);
    const ctx: ReconcileContext = {
      key,
      namespace,
      name,
      signal,
      client,
      log,
      clock: this.deps.clock,
      failures: this.queue.failuresOf(key),
      event: (object, type, reason, message, options) => this.deps.recorder.record(object, type, reason, message, options?.written ? {} : { signal }),
    };
    try {
      const result = (await this.reconcileFn(ctx)) ?? {};
      if (signal.aborted) return "shard_lost";
      if (result.requeueAfterMs !== undefined && result.requeueAfterMs > 0) {
        this.queue.forget(key);
        this.queue.addAfter(key, result.requeueAfterMs, result.idle ? "idle" : "recheck");
        return "requeue";
      }
      if (result.requeue) {
        this.queue.addWithBackoff(key);
        return "requeue";
      }
      this.queue.forget(key);
      return "success";
    } catch (error) {
      if (signal.aborted || error instanceof ShardLostError) {
        log.debug("shard lost during reconcile; its new holder takes over");
        return "shard_lost";
      }
      if (error instanceof ConflictError) {
        const delay = this.queue.addWithBackoff(key);
        log.debug({ retryInMs: delay }, "conflict; retrying with a fresh read");
        return "conflict";
      }
      const delay = this.queue.addWithBackoff(key);
      if (error instanceof InternalReconcileError) {
        // A defect: the whole error, stack included, for the report the status asks for.
        log.error({ err: error.cause, step: error.step, retryInMs: delay, failures: this.queue.failuresOf(key) }, `reconcile failed with an unexpected error: ${error.message}`);
      } else {
        log.warn({ err: (error as Error).message, retryInMs: delay, failures: this.queue.failuresOf(key) }, "reconcile failed");
      }
      return "error";
    }
  }
}
