// The consumer side of a watch, shared by the store implementations: events are buffered and handed to
// `onEvent` on a later turn of the event loop, so a writer never runs consumer code and a consumer that
// falls behind only grows its own buffer. An error is delivered after the events queued before it, at
// most once, and ends the watch.
import type { Watch, WatchEvent, WatchOptions } from "./store.ts";

export class WatchChannel implements Watch {
  private queue: WatchEvent[] = [];
  private pendingError: Error | undefined;
  private scheduled = false;
  private ended = false;
  /** True while a batch is being handed over: its later events are out of the queue but not yet delivered. */
  private delivering = false;

  constructor(
    private readonly options: WatchOptions,
    private readonly onEnd: () => void = () => {},
    /** The revision up to which the source has pushed every change it will push (undefined: unknown). */
    private readonly pushedTo: () => number | undefined = () => undefined,
  ) {}

  /**
   * The revision up to which every change has been handed to `onEvent`: the source's, once the queue is
   * empty and no batch is being handed over (asked from inside `onEvent`, the rest of its batch is still due).
   */
  progress(): number | undefined {
    if (this.isEnded || this.delivering || this.queue.length > 0) return undefined;
    return this.pushedTo();
  }

  /** True once the watch was closed or failed; later pushes are dropped. */
  get isEnded(): boolean {
    return this.ended || this.pendingError !== undefined;
  }

  push(event: WatchEvent): void {
    if (this.isEnded) return;
    this.queue.push(event);
    this.schedule();
  }

  /** Ends the watch with an error, after the events already queued. */
  fail(error: Error): void {
    if (this.isEnded) return;
    this.pendingError = error;
    this.onEnd();
    this.schedule();
  }

  close(): void {
    if (this.ended) return;
    const wasFailing = this.pendingError !== undefined;
    this.ended = true;
    this.queue = [];
    this.pendingError = undefined;
    if (!wasFailing) this.onEnd();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.drain());
  }

  private drain(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    this.delivering = true;
    try {
      for (const event of batch) {
        if (this.ended) return;
        try {
          this.options.onEvent(event);
        } catch (error) {
          this.queue = [];
          this.finish(error instanceof Error ? error : new Error(String(error)));
          return;
        }
      }
    } finally {
      this.delivering = false;
    }
    if (this.queue.length > 0) return;
    if (this.pendingError !== undefined) this.finish(this.pendingError);
  }

  private finish(error: Error): void {
    if (this.ended) return;
    const alreadyEnded = this.pendingError !== undefined;
    this.ended = true;
    this.pendingError = undefined;
    if (!alreadyEnded) this.onEnd();
    this.options.onError(error);
  }
}
