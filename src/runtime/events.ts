// Events (core v1 Event) about the objects controllers work on, as `kubectl describe` and
// `kubectl get events` show them. Repeats of one event (same object, type, reason, message and
// component) are aggregated into one Event whose count rises; each object may emit at most `burst`
// events, then one per `refillMs` (a token bucket), so a controller stuck in a loop cannot flood the
// store. Recording never fails the caller: a write that keeps failing is logged and dropped.
import { randomInt } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { KubeObject } from "../api/meta.ts";
import { eventKind, type EventObject } from "../api/core.ts";
import { apiVersionOf } from "../api/registry.ts";
import { isAlreadyExists, isNotFound } from "../api/presence.ts";
import { isApiError } from "../apiserver/errors.ts";
import { nowTimestamp } from "../apiserver/objects.ts";
import type { Client } from "./client.ts";
import { sleep, systemClock, type Clock } from "./clock.ts";

export type EventType = "Normal" | "Warning";

export interface EventRecorderOptions {
  client: Client;
  /** The controller, e.g. slipway.dev/operation-controller (reportingComponent, source.component). */
  component: string;
  /** This replica (reportingInstance). */
  instance: string;
  log: Logger;
  clock?: Clock;
  /** Events an object may emit at once. Default 25. */
  burst?: number;
  /** One more event allowed per this period. Default 5 minutes. */
  refillMs?: number;
  /** Recent events remembered for aggregation, and objects for rate limiting. Default 4096. */
  cacheSize?: number;
  /** Attempts to write an event before it is dropped. Default 5. */
  attempts?: number;
}

export interface RecordOptions {
  /** When it aborts (the shard was lost), the event is not written. */
  signal?: AbortSignal;
  action?: string;
}

interface Recorded {
  namespace: string;
  name: string;
  count: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** A Map used as a least-recently-used cache of bounded size. */
function touch<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > limit) map.delete(map.keys().next().value as K);
}

function definedOnly<T extends Record<string, unknown>>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as T;
}

export class EventRecorder {
  private readonly clock: Clock;
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly cacheSize: number;
  private readonly attempts: number;
  private readonly recent = new Map<string, Recorded>();
  private readonly buckets = new Map<string, Bucket>();
  private readonly host = hostname();

  constructor(private readonly options: EventRecorderOptions) {
    this.clock = options.clock ?? systemClock;
    this.burst = options.burst ?? 25;
    this.refillMs = options.refillMs ?? 5 * 60_000;
    this.cacheSize = options.cacheSize ?? 4096;
    this.attempts = options.attempts ?? 5;
  }

  /** Records an event about the object; resolves once written (or dropped). */
  async record(object: KubeObject, type: EventType, reason: string, message: string, options: RecordOptions = {}): Promise<void> {
    const uid = object.metadata.uid ?? `${object.kind}/${object.metadata.namespace ?? ""}/${object.metadata.name ?? ""}`;
    if (!this.allow(uid)) {
      this.options.log.debug({ object: object.metadata.name, reason }, "event dropped: too many events for this object");
      return;
    }
    const id = [uid, type, reason, message].join("\u0000");
    const client = options.signal ? this.options.client.fencedBy(options.signal) : this.options.client;
    const events = client.of(eventKind);
    for (let attempt = 1; ; attempt++) {
      if (options.signal?.aborted) return;
      try {
        const now = new Date(this.clock.now());
        const seen = this.recent.get(id);
        if (seen) {
          try {
            await events.patch(seen.namespace, seen.name, "merge", { count: seen.count + 1, lastTimestamp: nowTimestamp(now) });
            touch(this.recent, id, { ...seen, count: seen.count + 1 }, this.cacheSize);
            return;
          } catch (error) {
            if (!isNotFound(error)) throw error;
            this.recent.delete(id); // the Event was removed: start a new one
          }
        }
        const created = await events.create(this.eventFor(object, type, reason, message, now, options.action));
        touch(this.recent, id, { namespace: created.metadata.namespace ?? "", name: created.metadata.name ?? "", count: 1 }, this.cacheSize);
        return;
      } catch (error) {
        if (options.signal?.aborted) return;
        // The API refused the event itself (invalid, forbidden, namespace gone): retrying will not help.
        const refused = isApiError(error) && error.code < 500 && !isAlreadyExists(error);
        if (refused || attempt >= this.attempts || !(error instanceof Error)) {
          this.options.log.warn({ err: (error as Error).message, object: object.metadata.name, reason }, "could not record an event");
          return;
        }
        if (!isAlreadyExists(error)) await sleep(this.clock, 100 * 2 ** (attempt - 1));
      }
    }
  }

  private allow(uid: string): boolean {
    const now = this.clock.now();
    const bucket = this.buckets.get(uid) ?? { tokens: this.burst, at: now };
    const refilled = Math.min(this.burst, bucket.tokens + (now - bucket.at) / this.refillMs);
    const allowed = refilled >= 1;
    touch(this.buckets, uid, { tokens: allowed ? refilled - 1 : refilled, at: now }, this.cacheSize);
    return allowed;
  }

  private eventFor(object: KubeObject, type: EventType, reason: string, message: string, now: Date, action?: string): EventObject {
    const namespace = object.metadata.namespace ?? "default";
    const stamp = nowTimestamp(now);
    const unique = (BigInt(now.getTime()) * 1_000_000n + BigInt(randomInt(1_000_000))).toString(16);
    return {
      apiVersion: apiVersionOf(eventKind),
      kind: "Event",
      metadata: { name: `${object.metadata.name ?? "object"}.${unique}`, namespace },
      involvedObject: definedOnly({
        apiVersion: object.apiVersion,
        kind: object.kind,
        namespace: object.metadata.namespace,
        name: object.metadata.name,
        uid: object.metadata.uid,
        resourceVersion: object.metadata.resourceVersion,
      }),
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      eventTime: now.toISOString().replace("Z", "000Z"),
      source: { component: this.options.component, host: this.host },
      reportingComponent: this.options.component,
      reportingInstance: this.options.instance,
      ...(action ? { action } : {}),
    };
  }
}
