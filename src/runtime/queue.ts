// The work queue of one controller, after client-go's: a key waits at most once (adding it again while
// it waits does nothing), is handed to one worker at a time (added while being processed, it waits
// until that worker is done), and can be added after a delay or after a per-key exponential backoff.
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
}

/** A FIFO of keys that stays O(1) per operation with tens of thousands of keys. */
class KeyFifo {
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

export class WorkQueue {
  private readonly ready = new KeyFifo();
  /** Keys waiting to be processed (in `ready`, or re-added while processing). */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { at: number; cancel: () => void }>();
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
  }

  /** Keys waiting for a worker. */
  get length(): number {
    return this.ready.length;
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    this.observer.added?.();
    if (!this.processing.has(key)) this.makeReady(key);
  }

  /** Hands a dirty key to a waiting worker, or lines it up. */
  private makeReady(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.ready.push(key);
    this.observer.depth?.(this.ready.length);
  }

  /** Adds the key once `delayMs` has passed; an earlier pending delay for the key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    const at = this.clock.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    pending?.cancel();
    const cancel = this.clock.setTimer(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.delayed.set(key, { at, cancel });
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
    const key = this.ready.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      this.observer.depth?.(this.ready.length);
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** A worker finished the key; if it was added meanwhile, it waits again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shuttingDown) this.makeReady(key);
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
