// Events expire, as in Kubernetes (kube-apiserver --event-ttl, one hour by default): an Event not updated
// for the TTL is deleted. Without it a fleet's events — tens per cluster — would pile up for ever.
//
// The expiry keeps its own index of when each Event was last updated: every Event is read once (at the
// start, and again only if its watch breaks), then a watch of Events keeps the index current. A sweep takes
// the expired ones off the front of the index, reading nothing. (Reading every Event on every sweep took
// a fifth of an idle `slipway up` at 10,000 clusters, with 370,000 Events.)
import { setTimeout as delay } from "node:timers/promises";
import FlatQueue from "flatqueue";
import type { Logger } from "pino";
import { eventKind, type EventObject } from "../api/core.ts";
import { ConflictError, NotFoundError } from "./errors.ts";
import type { ObjectService, ObjectWatch } from "./objects.ts";

export interface EventExpiryOptions {
  /** How long an Event lives after its last update. Default 1 hour. */
  ttlMs?: number;
  /** How often expired Events are deleted. Default 1 minute: an Event may outlive its TTL by this long. */
  intervalMs?: number;
  /** Events read per list page (reading the index), and deleted between two rests. Default 500. */
  pageSize?: number;
  /**
   * The share of the process's time the expiry may take (default 0.25): after each page it reads or
   * deletes it rests for as long as that keeps it to this share. The first reading of a large fleet's
   * Events is hundreds of pages, a sweep after an hour of provisioning deletes tens of thousands, and the
   * controllers wait while the event loop lags (runtime/pacer.ts).
   */
  share?: number;
  /** How long a broken watch waits before the Events are read again. Default 5 s. */
  retryMs?: number;
  now?: () => number;
  /** A monotonic clock for how long a page took, ms (tests). */
  elapsed?: () => number;
  /** Rests `ms` unless aborted (tests). */
  rest?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** When the Event was last updated: its lastTimestamp, else the first of the others it has. */
function lastSeen(event: EventObject): number {
  const stamp = event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp ?? event.metadata.creationTimestamp;
  const at = stamp ? Date.parse(stamp) : Number.NaN;
  return Number.isNaN(at) ? Number.POSITIVE_INFINITY : at; // no readable time: kept
}

function keyOf(event: EventObject): string {
  return `${event.metadata.namespace ?? ""}/${event.metadata.name ?? ""}`;
}

interface Seen {
  /** When the Event was last updated (ms), as its last version says. */
  at: number;
  /** Its last version's resourceVersion: the deletion's precondition. */
  version: string;
}

export class EventExpiry {
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;
  /** Resolves once every Event has been read and the watch runs; replaced when the watch breaks. */
  private indexing?: Promise<void>;
  private watch?: ObjectWatch;
  /** Keys of Events by when they were last updated, oldest first; an entry a later version superseded is skipped. */
  private readonly byTime = new FlatQueue<string>();
  /** Each Event's last version, as read or watched. */
  private readonly seen = new Map<string, Seen>();
  private readonly ttlMs: number;
  private readonly intervalMs: number;
  private readonly pageSize: number;
  private readonly share: number;
  private readonly retryMs: number;
  private readonly now: () => number;
  private readonly elapsed: () => number;
  private readonly rest: (ms: number, signal: AbortSignal) => Promise<void>;
  private readonly stopping = new AbortController();

  constructor(
    private readonly objects: ObjectService,
    private readonly log: Logger,
    options: EventExpiryOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 60 * 60_000;
    this.intervalMs = options.intervalMs ?? 60_000;
    this.pageSize = options.pageSize ?? 500;
    this.share = options.share ?? 0.25;
    this.retryMs = options.retryMs ?? 5_000;
    this.now = options.now ?? Date.now;
    this.elapsed = options.elapsed ?? (() => performance.now());
    this.rest = options.rest ?? ((ms, signal) => delay(ms, undefined, { signal }).catch(() => {}));
  }

  private get def() {
    return this.objects.registry.byKind("v1", eventKind.kind)!;
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** Reads the Events and watches them, then sweeps every interval. */
  start(): void {
    this.indexed().catch((error: unknown) => this.log.warn({ err: (error as Error).message }, "reading the Events failed; trying again at the next sweep"));
    this.timer = setInterval(() => void this.sweep(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops watching and sweeping; a reading or sweep under way ends after its page. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.stopping.abort();
    this.watch?.close();
    await Promise.allSettled([this.indexing, this.running]);
  }

  /** Deletes every expired Event; answers how many. One sweep at a time. */
  sweep(): Promise<number> {
    this.running ??= this.expire().finally(() => (this.running = undefined));
    return this.running;
  }

  /** How many Events the index holds (each Event once, whatever its versions). */
  get size(): number {
    return this.seen.size;
  }

  private indexed(): Promise<void> {
    this.indexing ??= this.index().catch((error: unknown) => {
      this.indexing = undefined;
      throw error;
    });
    return this.indexing;
  }

  /** Reads every Event (paced), then watches from the revision read. */
  private async index(): Promise<void> {
    this.seen.clear();
    this.byTime.clear();
    let token: string | undefined;
    let revision = "";
    do {
      const started = this.elapsed();
      const page = await this.objects.list(this.def, undefined, { limit: this.pageSize, continue: token });
      for (const event of page.items as EventObject[]) this.record(event);
      revision = page.metadata.resourceVersion ?? revision;
      token = page.metadata.continue;
      if (token) await this.restAfter(started);
    } while (token && !this.stopped);
    if (this.stopped) return;
    this.watch = await this.objects.watch(
      this.def,
      undefined,
      { resourceVersion: revision },
      (change) => {
        const event = change.object as EventObject;
        if (change.type === "DELETED") this.seen.delete(keyOf(event));
        else this.record(event);
      },
      (error) => this.rewatch(error),
    );
  }

  /** The watch broke (its history was compacted, say): the Events are read again after a pause. */
  private rewatch(error: Error): void {
    if (this.stopped) return;
    this.log.warn({ err: error.message, retryInMs: this.retryMs }, "the watch of Events broke; reading them again");
    this.watch = undefined;
    const again = delay(this.retryMs, undefined, { signal: this.stopping.signal }).then(
      () => this.index(),
      () => {},
    );
    this.indexing = again.catch((e: unknown) => {
      this.indexing = undefined;
      this.log.warn({ err: (e as Error).message }, "reading the Events failed; trying again at the next sweep");
    });
  }

  private record(event: EventObject): void {
    const at = lastSeen(event);
    const key = keyOf(event);
    this.seen.set(key, { at, version: event.metadata.resourceVersion ?? "" });
    if (at !== Number.POSITIVE_INFINITY) this.byTime.push(key, at);
  }

  private async expire(): Promise<number> {
    let deleted = 0;
    try {
      await this.indexed();
      const before = this.now() - this.ttlMs;
      let started = this.elapsed();
      let tried = 0;
      let popped = 0;
      while (!this.stopped && this.byTime.length > 0 && this.byTime.peekValue()! < before) {
        const at = this.byTime.peekValue()!;
        const key = this.byTime.pop()!;
        popped++;
        const seen = this.seen.get(key);
        if (!seen || seen.at !== at) continue; // deleted, or updated since: a later entry stands for it
        this.seen.delete(key);
        const slash = key.indexOf("/");
        try {
          await this.objects.delete(this.def, key.slice(0, slash) || undefined, key.slice(slash + 1), { preconditions: { resourceVersion: seen.version } });
          deleted++;
        } catch (error) {
          // Gone already, or updated since it was read (then the watch brings its new time): leave it.
          if (!(error instanceof NotFoundError) && !(error instanceof ConflictError)) throw error;
        }
        if (++tried % this.pageSize === 0) {
          await this.restAfter(started);
          started = this.elapsed();
        }
      }
      // Popped entries keep their slots (and their keys alive) until shrunk.
      if (popped > 0) this.byTime.shrink();
    } catch (error) {
      this.log.warn({ err: (error as Error).message }, "expiring events failed; trying again later");
    }
    if (deleted > 0) this.log.debug({ deleted }, "expired events deleted");
    return deleted;
  }

  /**
   * A page is read or deleted in one go; after it the expiry rests, and the API's requests and the
   * controllers go first.
   */
  private restAfter(started: number): Promise<void> {
    return this.rest(((this.elapsed() - started) * (1 - this.share)) / this.share, this.stopping.signal);
  }
}
