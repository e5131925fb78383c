// The reconciler shape every controller follows (after Cluster API): read the object from the
// informer cache; ensure its finalizer; if it is being deleted run the delete phases (and drop the
// finalizer once they are done), otherwise run the phases; then, whatever happened, write the status —
// conditions, phase, observedGeneration — through the status subresource, fenced by the
// resourceVersion that was read, so a replica working from a stale read cannot overwrite newer state.
// observedGeneration moves only when the reconcile ran to its end (every phase did its part or stopped
// on purpose, to wait or to report a failure of the generation in the status): a reconcile that broke
// off with an error is retried, and the generation it was given is not yet applied.
import type { KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { isNotFound } from "../api/presence.ts";
import { deepFreeze, withoutManagedFields, type ObjectCache } from "./cache.ts";
import type { Reconcile, ReconcileContext, Result } from "./controller.ts";
import { InternalReconcileError, judgeFailure } from "./failures.ts";

export interface Scope<T extends KubeObject> {
  /** The object as the cache held it when the reconcile began (frozen). */
  readonly original: T;
  /** The working copy: phases set its status; the deferred status write persists it. */
  object: T;
}

export interface PhaseResult extends Result {
  /** The remaining phases wait for a later reconcile (e.g. something they need is not ready yet). */
  halt?: boolean;
}

/** One idempotent step of a reconcile. */
export type Phase<S> = (ctx: ReconcileContext, scope: S) => Promise<PhaseResult | void> | PhaseResult | void;

export interface ObjectReconcilerOptions<T extends KubeObject, S extends Scope<T>> {
  kind: KindDefinition<T>;
  /** Where the object is read from: the informer cache of the kind. */
  cache: ObjectCache<T>;
  /** Held on the object while it exists, so that its delete phases run before it goes. */
  finalizer?: string;
  /** Builds the scope the phases share (default: just the object). */
  scope?: (ctx: ReconcileContext, base: Scope<T>) => S | Promise<S>;
  phases: readonly Phase<S>[];
  deletePhases?: readonly Phase<S>[];
  /**
   * Sums the state up into the status (conditions, phase, reason); runs before every status write,
   * also after a phase failed (`error`: the error thrown, or an InternalReconcileError once an
   * unexpected error has had its attempts — failures.ts).
   */
  summarize?: (ctx: ReconcileContext, scope: S, error: unknown) => void;
  /**
   * Sets status.observedGeneration to the generation reconciled, once a reconcile ran to its end (or
   * failed it for good with InternalError), never after one that broke off with an error.
   */
  observedGeneration?: boolean;
  /**
   * Runs after the status was written, when it changed (e.g. events on a phase change). Its events are
   * recorded even if the shard is lost meanwhile: the replica taking over sees no change to report.
   */
  afterStatusWrite?: (ctx: ReconcileContext, scope: S, previous: T, written: T) => Promise<void> | void;
  /**
   * Whether a change of the status, from the one last written to the one about to be, only reports
   * progress (a step's start, a count, a message). Such a change is written at most once per
   * `progressIntervalMs` per object: until then the reconcile is queued again for when the interval
   * ends, and that reconcile writes the newest status. Any other change is written at once.
   */
  progressOnly?: (written: T["status"], next: T["status"]) => boolean;
  /** Default 1 s. */
  progressIntervalMs?: number;
}

/** Merges phase results: the earliest requeue wins (and says whether it is an idle check). */
function mergeResults(a: Result, b: Result): Result {
  const timed = [a, b].filter((r) => r.requeueAfterMs !== undefined && r.requeueAfterMs > 0).sort((x, y) => x.requeueAfterMs! - y.requeueAfterMs!);
  const first = timed[0];
  return {
    ...(first ? { requeueAfterMs: first.requeueAfterMs } : {}),
    ...(first?.idle ? { idle: true } : {}),
    ...(a.requeue || b.requeue ? { requeue: true } : {}),
  };
}

/** Runs the phases in order until one halts; `at.step` names the phase running (the one that threw). */
async function runPhases<S>(ctx: ReconcileContext, scope: S, phases: readonly Phase<S>[], at: { step?: string }): Promise<{ result: Result; halted: boolean }> {
  let result: Result = {};
  for (const [index, phase] of phases.entries()) {
    at.step = phase.name || `phase ${index + 1}`;
    const outcome = (await phase(ctx, scope)) ?? {};
    result = mergeResults(result, outcome);
    if (outcome.halt) return { result, halted: true };
  }
  return { result, halted: false };
}

function statusOf(object: KubeObject): unknown {
  return object.status;
}

/**
 * JSON of objects as the cache or the API handed them (never changed afterwards), made once per object
 * and kept for the most recent ones: a working copy is parsed from it, and the status write compares
 * against its status. Kept for every cached object (a WeakMap), it was a second copy of a fleet's cache
 * as strings — a third of `slipway up`'s heap at 10,000 clusters.
 */
class RecentJson {
  private readonly json = new Map<KubeObject, { object: string; status: string | undefined }>();

  constructor(private readonly limit = 1024) {}

  of(object: KubeObject): { object: string; status: string | undefined } {
    let json = this.json.get(object);
    if (!json) {
      json = { object: JSON.stringify(object), status: JSON.stringify(statusOf(object)) };
      this.json.set(object, json);
      if (this.json.size > this.limit) this.json.delete(this.json.keys().next().value!);
    }
    return json;
  }

  /** A working copy of an object read from the cache or written (plain JSON data). */
  copyOf<T extends KubeObject>(object: T): T {
    return JSON.parse(this.of(object).object) as T;
  }
}

/** Whether resourceVersion `a` is later than `b` (both are store revisions: decimal integers). */
function laterVersion(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return a.length !== b.length ? a.length > b.length : a > b;
}

/**
 * The reconciler's own writes, by key, until the informer cache holds them (or something later). A
 * watch delivers a write some time after it was made — milliseconds in-process, up to seconds from a
 * busy etcd — and a reconcile that began from the older cached copy would have its status write
 * refused (409) and be retried with backoff, again and again while the watch lags.
 */
class OwnWrites<T extends KubeObject> {
  private readonly written = new Map<string, T>();

  constructor(
    private readonly cache: ObjectCache<T>,
    private readonly limit = 65_536,
  ) {}

  /** What the reconcile starts from: the cached object, or this reconciler's later write of it. */
  newest(key: string, cached: T | undefined): T | undefined {
    const mine = this.written.get(key);
    if (!mine) return cached;
    if (this.ahead(mine, cached)) return mine;
    this.written.delete(key);
    return cached;
  }

  record(key: string, object: T): void {
    this.written.delete(key);
    this.written.set(key, deepFreeze(withoutManagedFields(object)));
    if (this.written.size > this.limit) this.written.delete(this.written.keys().next().value!);
    this.forgetCaughtUp();
  }

  forget(key: string): void {
    this.written.delete(key);
  }

  /** Whether this reconciler's write is later than what the cache holds of the same object. */
  private ahead(mine: T, cached: T | undefined): boolean {
    return cached !== undefined && cached.metadata.uid === mine.metadata.uid && laterVersion(mine.metadata.resourceVersion, cached.metadata.resourceVersion);
  }

  /**
   * Forgets the oldest writes the cache has caught up with. Left until the key's next reconcile, every
   * object's last write stayed here (a copy of each Running cluster's objects until the next resync).
   */
  private forgetCaughtUp(): void {
    let looked = 0;
    for (const [key, mine] of this.written) {
      if (++looked > 8 || this.ahead(mine, this.cache.get(key))) return;
      this.written.delete(key);
    }
  }
}

/** When each object's status was last written by this reconciler (a bounded map, oldest dropped first). */
class LastWrites {
  private readonly at = new Map<string, number>();

  constructor(private readonly limit = 65_536) {}

  get(key: string): number | undefined {
    return this.at.get(key);
  }

  record(key: string, now: number): void {
    this.at.delete(key);
    this.at.set(key, now);
    if (this.at.size > this.limit) this.at.delete(this.at.keys().next().value!);
  }
}

/** The object was deleted while it was being reconciled: there is nothing left to write. */
class ObjectGone extends Error {
  override readonly name = "ObjectGone";
}

/** One of the reconciler's own writes to the object; NotFound means the object is gone. */
async function ownWrite<R>(write: () => Promise<R>): Promise<R> {
  try {
    return await write();
  } catch (error) {
    if (isNotFound(error)) throw new ObjectGone((error as Error).message, { cause: error });
    throw error;
  }
}

/** A Reconcile following the reconciler shape for objects of one kind. */
export function objectReconciler<T extends KubeObject, S extends Scope<T> = Scope<T>>(options: ObjectReconcilerOptions<T, S>): Reconcile {
  const own = new OwnWrites<T>(options.cache);
  const json = new RecentJson();
  const statusWrites = new LastWrites();
  const progressIntervalMs = options.progressIntervalMs ?? 1000;
  const reconcile = async (ctx: ReconcileContext): Promise<Result> => {
    const cached = own.newest(ctx.key, options.cache.get(ctx.key));
    if (!cached) return {};
    const objects = ctx.client.of(options.kind);
    /** One of the reconciler's own writes to the object, remembered until the cache holds it. */
    const write = async (call: () => Promise<T>): Promise<T> => {
      const written = await ownWrite(call);
      own.record(ctx.key, written);
      return written;
    };
    let object = json.copyOf(cached);
    const finalizer = options.finalizer;
    const deleting = object.metadata.deletionTimestamp !== undefined;
    const holdsFinalizer = finalizer !== undefined && (object.metadata.finalizers ?? []).includes(finalizer);

    /** The object as last read or written: the status write compares against it (never changed). */
    let persisted: T = cached;
    if (finalizer && !deleting && !holdsFinalizer) {
      object.metadata.finalizers = [...(object.metadata.finalizers ?? []), finalizer];
      const withFinalizer = object;
      object = await write(() => objects.update(withFinalizer));
      persisted = object;
      object = json.copyOf(object);
    }
    // Deleted without our finalizer (or before we added it): nothing of ours to clean up.
    if (deleting && finalizer && !holdsFinalizer) return {};

    const scope = options.scope ? await options.scope(ctx, { original: cached, object }) : ({ original: cached, object } as S);
    let result: Result = {};
    let failure: unknown;
    let statusWritten = false;
    /** Whether writeStatus stored a change (`statusWritten`: whether it ran): then `persisted` is newer than `scope.object`. */
    let statusStored = false;
    let removed = false;
    const at: { step?: string } = {};

    /** Until a progress-only status change may be written (ms), when it was held back. */
    let heldBackMs: number | undefined;
    /** `last`: the write before the finalizer goes, which nothing follows. */
    const writeStatus = async (last = false): Promise<void> => {
      statusWritten = true;
      options.summarize?.(ctx, scope, failure);
      if (options.observedGeneration && (failure === undefined || failure instanceof InternalReconcileError)) {
        const working: KubeObject = scope.object;
        working.status = { ...(statusOf(working) as object | undefined), observedGeneration: working.metadata.generation };
      }
      if (JSON.stringify(statusOf(scope.object)) === json.of(persisted).status) return;
      const lastWrite = statusWrites.get(ctx.key);
      const waitMs = lastWrite === undefined ? 0 : lastWrite + progressIntervalMs - ctx.clock.now();
      if (!last && waitMs > 0 && options.progressOnly?.(persisted.status as T["status"], scope.object.status as T["status"])) {
        heldBackMs = waitMs;
        return;
      }
      const previous = persisted;
      const written = await write(() => objects.updateStatus(scope.object));
      statusWrites.record(ctx.key, ctx.clock.now());
      persisted = written;
      // The reconcile ends with this write (the finalizer's removal starts from `persisted`): no working
      // copy of what was written is needed.
      statusStored = true;
      // The events of a status change that was written are due even if the shard is lost meanwhile.
      await options.afterStatusWrite?.({ ...ctx, event: (o, type, reason, message) => ctx.event(o, type, reason, message, { written: true }) }, scope, previous, written);
    };

    try {
      if (deleting) {
        const run = await runPhases(ctx, scope, options.deletePhases ?? [], at);
        result = run.result;
        const done = !run.halted && !result.requeue && result.requeueAfterMs === undefined;
        if (finalizer && done) {
          // The status goes first: removing the last finalizer removes the object.
          await writeStatus(true);
          const next = JSON.parse(JSON.stringify(statusStored ? persisted : scope.object)) as T;
          next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== finalizer);
          await ownWrite(() => objects.update(next));
          own.forget(ctx.key);
          removed = true;
        }
      } else {
        result = (await runPhases(ctx, scope, options.phases, at)).result;
      }
    } catch (error) {
      failure = judgeFailure(error, ctx.failures, at.step ?? "reconcile");
    }
    if (!removed && !statusWritten) {
      try {
        await writeStatus();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
    return heldBackMs === undefined ? result : mergeResults(result, { requeueAfterMs: heldBackMs });
  };
  return async (ctx) => {
    try {
      return await reconcile(ctx);
    } catch (error) {
      if (error instanceof ObjectGone) return {};
      throw error;
    }
  };
}
