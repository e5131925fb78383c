// A collection kept current: listed, then watched (watched again when the server ends a watch, listed
// again when it no longer has the version asked for, retried while it cannot be reached) — what a
// command waiting on objects, or a console showing them live, reads.
import type { KubeClient, KubeObject } from "./client.ts";
import { KubeGoneError, KubeUnreachableError } from "./errors.ts";
import type { KubeWatch, WatchEvent } from "./watch.ts";

const RETRY_MS = 1000;
/** The longest pause between watches that keep ending at once. */
const MAX_PAUSE_MS = 30_000;
/**
 * The shortest time the server keeps one watch open before the client opens the next; each watch asks for
 * between this and twice this, at random (client-go's reflector does the same), so the watches a process
 * keeps — one per workload cluster — do not all end and open again together, and end less often.
 */
export const MIN_WATCH_SECONDS = 300;

export interface Selector {
  labelSelector?: string;
  fieldSelector?: string;
}

export interface LiveCollectionOptions<T> {
  /** What is kept of each object (by default all of it): a large collection held long keeps only what its reader reads. */
  keep?: (object: T) => T;
  /** A number in [0, 1) for each watch's length (default Math.random; tests give a seeded one). */
  random?: () => number;
}

/** The objects of a collection (in one namespace, or cluster-scoped) that match a selector, kept current, by name. */
export class LiveCollection<T extends KubeObject> {
  readonly items = new Map<string, T>();
  private resourceVersion: string | undefined;
  private current: KubeWatch | undefined;
  private stopped = false;
  /** Ends the pause between watches early (on stop). */
  private wake: (() => void) | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly path: string,
    private readonly selector: Selector,
    private readonly onChange: () => void,
    /** Told when the server cannot be reached and the watch is retried. */
    private readonly onRetry: (error: KubeUnreachableError) => void,
    private readonly options: LiveCollectionOptions<T> = {},
  ) {}

  private keep(object: T): T {
    return this.options.keep ? this.options.keep(object) : object;
  }

  /** Lists the objects; then keeps them current until `stop`. The promise it answers ends when watching ends. */
  async start(): Promise<{ watching: Promise<void> }> {
    await this.relist();
    return { watching: this.run() };
  }

  stop(): void {
    this.stopped = true;
    this.current?.close();
    this.wake?.();
  }

  private async relist(): Promise<void> {
    const list = await this.client.list<T>(this.path, this.selector);
    this.items.clear();
    for (const item of list.items) this.items.set(item.metadata.name ?? "", this.keep(item));
    this.resourceVersion = list.metadata.resourceVersion;
  }

  private apply(event: WatchEvent<T>): void {
    if (this.stopped) return;
    this.resourceVersion = event.object.metadata.resourceVersion ?? this.resourceVersion;
    if (event.type === "BOOKMARK") return;
    const name = event.object.metadata.name ?? "";
    if (event.type === "DELETED") this.items.delete(name);
    else this.items.set(name, this.keep(event.object));
    this.onChange();
  }

  private async run(): Promise<void> {
    // Watches that end at once with nothing said (refused, or closed by the server as soon as opened) one
    // after the other are opened again only after a pause that doubles, not in a tight loop; a watch that
    // told something or lasted resets it. The first such end is answered at once (a relist may be all it
    // needed).
    let quickEnds = 0;
    while (!this.stopped) {
      const openedAt = Date.now();
      let told = false;
      const timeoutSeconds = Math.floor(MIN_WATCH_SECONDS * (1 + (this.options.random ?? Math.random)()));
      try {
        this.current = this.client.watch<T>(
          this.path,
          { ...this.selector, allowWatchBookmarks: true, timeoutSeconds, ...(this.resourceVersion ? { resourceVersion: this.resourceVersion } : {}) },
          (event) => {
            told = true;
            this.apply(event);
          },
        );
        await this.current.done;
      } catch (error) {
        if (this.stopped) return;
        if (error instanceof KubeGoneError) await this.recover();
        else if (error instanceof KubeUnreachableError) {
          this.onRetry(error);
          await this.recover();
        } else throw error;
      }
      quickEnds = told || Date.now() - openedAt >= RETRY_MS ? 0 : quickEnds + 1;
      if (quickEnds >= 2) await this.pause(Math.min(RETRY_MS * 2 ** (quickEnds - 2), MAX_PAUSE_MS));
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Lists again, as soon as the server answers. */
  private async recover(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.relist();
        this.onChange();
        return;
      } catch (error) {
        if (!(error instanceof KubeUnreachableError)) throw error;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }
}

