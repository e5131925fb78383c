// The work queue of one controller, after client-go's: a key waits at most once (adding it again while
// it waits does nothing), is handed to one worker at a time (added while being processed, it waits
// until that worker is done), and can be added after a delay or after a per-key exponential backoff.
//
// Keys wait in three lines: keys added because something changed; keys coming back on their own (a
// delay or a backoff ran out: a re-check); and idle checks of objects at rest (periodic health checks,
// informer resyncs). Workers take changed keys first, then re-checks, then idle checks. When thousands
// of objects wait on something slow, their re-checks fill the spare capacity only, instead of queueing
// every change behind a round of re-checks; a key re-checked less often costs less; and a fleet of
// healthy objects cannot hold back the ones still being built.
//
// Within the changed and re-check lines, keys are served first come first served, or, given a
// `priority`, lowest first (first come first served among equals): a controller of many clusters'
// objects serves an older cluster's keys before a younger one's, so that, when the workers are the
// bottleneck, clusters are finished one after another instead of all advancing together.
import TinyQueue from "tinyqueue";
import { systemClock, type Clock } from "./clock.ts";

export interface BackoffOptions {
  /** Delay after the first failure. */
  baseMs: number;
  /** Longest delay. */
  capMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 100, capMs: 60_000 };

/** What the queue reports, for metrics. */
export interface QueueObserver {
  depth?(keys: number): void;
  added?(): void;
  retried?(): void;
}

export interface WorkQueueOptions {
  clock?: Clock;
  backoff?: Partial<BackoffOptions>;
  observer?: QueueObserver;
  /** A key's place in the changed and re-check lines, asked as it joins one: lower is served first. */
  priority?: (key: string) => number;
}

/** The keys of one line, in the order they are served. */
interface KeyLine {
  readonly length: number;
  push(key: string): void;
  shift(): string | undefined;
}

/** A FIFO of keys that stays O(1) per operation with tens of thousands of keys. */
class KeyFifo implements KeyLine {
  private items: string[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(key: string): void {
    this.items.push(key);
  }

  shift(): string | undefined {
    if (this.head >= this.items.length) return undefined;
    const key = this.items[this.head++];
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return key;
  }
}

/** Keys lowest priority first, first come first served among equals (a binary heap, O(log n) per operation). */
class KeyHeap implements KeyLine {
  private readonly heap = new TinyQueue<{ key: string; priority: number; arrival: number }>([], (a, b) => a.priority - b.priority || a.arrival - b.arrival);
  private arrivals = 0;

  constructor(private readonly priority: (key: string) => number) {}

  get length(): number {
    return this.heap.length;
  }

  push(key: string): void {
    this.heap.push({ key, priority: this.priority(key), arrival: this.arrivals++ });
  }

  shift(): string | undefined {
    return this.heap.pop()?.key;
  }
}

/** Which line a key waits in, first served first. */
export type Line = "changed" | "recheck" | "idle";
const RANK: Record<Line, number> = { changed: 0, recheck: 1, idle: 2 };

export class WorkQueue {
  private readonly lines: Record<Line, KeyLine>;
  /**
   * Keys waiting to be processed (in a line, or re-added while processing), with the line they wait
   * in. A key moved up to a busier line leaves an entry behind in the other, skipped there.
   */
  private readonly dirty = new Map<string, Line>();
  /** Keys waiting in a line for a worker (the lines also hold entries left behind by moves). */
  private queued = 0;
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { at: number; line: Line; cancel: () => void }>();
  private readonly failures = new Map<string, number>();
  private waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly clock: Clock;
  private readonly backoff: BackoffOptions;
  private readonly observer: QueueObserver;

  constructor(options: WorkQueueOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.observer = options.observer ?? {};
    const { priority } = options;
    const ordered = () => (priority ? new KeyHeap(priority) : new KeyFifo());
    // Idle checks keep their order: each waits its turn behind every other key anyway.
    this.lines = { changed: ordered(), recheck: ordered(), idle: new KeyFifo() };
  }

  /** Keys waiting for a worker. */
  get length(): number {
    return this.queued;
  }

  /** Adds a key because something about it changed. */
  add(key: string): void {
    this.enter(key, "changed");
  }

  private enter(key: string, line: Line): void {
    if (this.shuttingDown) return;
    const waiting = this.dirty.get(key);
    if (waiting !== undefined && RANK[waiting] <= RANK[line]) return;
    this.dirty.set(key, line);
    if (waiting === undefined) this.observer.added?.();
    if (this.processing.has(key)) return;
    if (waiting === undefined) this.queued++;
    this.makeReady(key, line);
  }

  /** Hands a dirty key, counted as queued, to a waiting worker, or lines it up. */
  private makeReady(key: string, line: Line): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      this.queued--;
      this.dirty.delete(key);
      this.processing.add(key);
      this.reportDepth();
      waiter(key);
      return;
    }
    this.lines[line].push(key);
    this.reportDepth();
  }

  private reportDepth(): void {
    this.observer.depth?.(this.queued);
  }

  /** The next key to hand out, busiest line first; entries left behind by a move are skipped. */
  private next(): string | undefined {
    for (;;) {
      const from = this.lines.changed.length > 0 ? "changed" : this.lines.recheck.length > 0 ? "recheck" : "idle";
      const key = this.lines[from].shift();
      if (key === undefined) return undefined;
      const line = this.dirty.get(key);
      if (line === undefined || line !== from || this.processing.has(key)) continue;
      return key;
    }
  }

  /**
   * Adds the key once `delayMs` has passed, as a re-check (or, with `idle`, as an idle check that waits
   * behind every other key). With a delay already pending for the key, the key comes back once, at the
   * earlier of the two times, in the busier of the two lines: a re-check is never turned into an idle
   * check, which a busy queue may not reach for a long time.
   */
  addAfter(key: string, delayMs: number, line: "recheck" | "idle" = "recheck"): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) return this.enter(key, line);
    const at = this.clock.now() + delayMs;
    const pending = this.delayed.get(key);
    const busier = pending && RANK[pending.line] < RANK[line] ? pending.line : line;
    if (pending && pending.at <= at) {
      pending.line = busier;
      return;
    }
    pending?.cancel();
    const entry = {
      at,
      line: busier,
      cancel: this.clock.setTimer(() => {
        this.delayed.delete(key);
        this.enter(key, entry.line);
      }, delayMs),
    };
    this.delayed.set(key, entry);
  }

  /** Whether the key is to come back after a delay (addAfter, a backoff). */
  isScheduled(key: string): boolean {
    return this.delayed.has(key);
  }

  /** Whether the key is not waiting, not being processed, and not due again within `withinMs`. */
  quietFor(key: string, withinMs: number): boolean {
    if (this.dirty.has(key) || this.processing.has(key)) return false;
    const pending = this.delayed.get(key);
    return pending === undefined || pending.at - this.clock.now() > withinMs;
  }

  /** Adds the key after its backoff (base·2^failures, capped), and counts one more failure. */
  addWithBackoff(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const delay = Math.min(this.backoff.capMs, this.backoff.baseMs * 2 ** Math.min(failures, 40));
    this.observer.retried?.();
    this.addAfter(key, delay);
    return delay;
  }

  /** Ends the key's backoff: its next failure waits the base delay again. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Consecutive failures counted for the key. */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** The next key to process, once there is one; undefined once the queue shuts down. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.next();
    if (key !== undefined) {
      this.queued--;
      this.dirty.delete(key);
      this.processing.add(key);
      this.reportDepth();
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** A worker finished the key; if it was added meanwhile, it waits again. */
  done(key: string): void {
    this.processing.delete(key);
    const line = this.dirty.get(key);
    if (line === undefined || this.shuttingDown) return;
    this.queued++;
    this.makeReady(key, line);
  }

  /** Whether shutDown() was called. */
  get closed(): boolean {
    return this.shuttingDown;
  }

  /** Hands out no more keys; waiting workers get undefined. Keys being processed may still finish. */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const { cancel } of this.delayed.values()) cancel();
    this.delayed.clear();
    for (const resolve of this.waiters.splice(0)) resolve(undefined);
  }
}
