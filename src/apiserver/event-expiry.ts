// Events expire, as in Kubernetes (kube-apiserver --event-ttl, one hour by default): an Event not updated
// for the TTL is deleted. Without it a fleet's events — tens per cluster — would pile up for ever.
import { setTimeout as delay } from "node:timers/promises";
import type { Logger } from "pino";
import { eventKind, type EventObject } from "../api/core.ts";
import { ConflictError, NotFoundError } from "./errors.ts";
import type { ObjectService } from "./objects.ts";

export interface EventExpiryOptions {
  /** How long an Event lives after its last update. Default 1 hour. */
  ttlMs?: number;
  /**
   * How often expired Events are looked for. Default 5 minutes: a sweep reads every Event (hundreds of
   * thousands in a large fleet), so an Event may outlive its TTL by up to this long and the sweep's own.
   */
  intervalMs?: number;
  /** Events read per list page. Default 500. */
  pageSize?: number;
  /**
   * The share of the process's time a sweep may take (default 0.25): after each page it rests for as long
   * as that keeps it to this share. A sweep of a large fleet's Events deletes tens of thousands, and the
   * controllers wait while the event loop lags (runtime/pacer.ts): unpaced, at 10,000 clusters, its pages
   * and deletes took a third to a half of the process's time in profiles of the fleet's deletion.
   */
  share?: number;
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

export class EventExpiry {
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;
  private readonly ttlMs: number;
  private readonly intervalMs: number;
  private readonly pageSize: number;
  private readonly share: number;
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
    this.intervalMs = options.intervalMs ?? 5 * 60_000;
    this.pageSize = options.pageSize ?? 500;
    this.share = options.share ?? 0.25;
    this.now = options.now ?? Date.now;
    this.elapsed = options.elapsed ?? (() => performance.now());
    this.rest = options.rest ?? ((ms, signal) => delay(ms, undefined, { signal }).catch(() => {}));
  }

  start(): void {
    this.timer = setInterval(() => void this.sweep(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops sweeping; a sweep under way ends after its page. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }

  /** Deletes every expired Event; answers how many. One sweep at a time. */
  sweep(): Promise<number> {
    this.running ??= this.expire().finally(() => (this.running = undefined));
    return this.running;
  }

  private async expire(): Promise<number> {
    const def = this.objects.registry.byKind("v1", eventKind.kind)!;
    const before = this.now() - this.ttlMs;
    let deleted = 0;
    let token: string | undefined;
    try {
      do {
        const pageStarted = this.elapsed();
        const page = await this.objects.list(def, undefined, { limit: this.pageSize, continue: token });
        for (const event of page.items as EventObject[]) {
          if (lastSeen(event) >= before) continue;
          try {
            await this.objects.delete(def, event.metadata.namespace, event.metadata.name!, { preconditions: { resourceVersion: event.metadata.resourceVersion } });
            deleted++;
          } catch (error) {
            // Gone already, or updated since it was read (then it is not expired): either way, leave it.
            if (!(error instanceof NotFoundError) && !(error instanceof ConflictError)) throw error;
          }
        }
        token = page.metadata.continue;
        // A page is read and judged in one go; between pages the sweep rests, and the API's requests and
        // the controllers go first (a sweep of a fleet's Events reads hundreds of pages).
        if (token) await this.rest(((this.elapsed() - pageStarted) * (1 - this.share)) / this.share, this.stopping.signal);
      } while (token && !this.stopping.signal.aborted);
    } catch (error) {
      this.log.warn({ err: (error as Error).message }, "expiring events failed; trying again later");
    }
    if (deleted > 0) this.log.debug({ deleted }, "expired events deleted");
    return deleted;
  }
}
