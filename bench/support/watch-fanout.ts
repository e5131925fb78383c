// Watch fan-out: many watch streams on one collection, a paced series of writes, and for every
// (watcher, write) pair the time from the write's response to that watcher reading the event.
import { request } from "node:https";
import type { BenchClient } from "./client.ts";

interface WatchEvent {
  type: string;
  object: { metadata?: { resourceVersion?: string }; message?: string };
}

/** One open watch stream and what it has read. */
export class Watcher {
  /** resourceVersion → when the event carrying it was read (hrtime ns). */
  readonly arrivals = new Map<string, bigint>();
  readonly problems: string[] = [];
  private lastRevision = 0;
  private closed = false;
  private destroy: () => void = () => {};

  constructor(
    readonly index: number,
    private readonly onProgress: () => void,
  ) {}

  /** Opens the stream; resolves once the server has answered with 200. */
  open(client: BenchClient, path: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = request(client.options("GET", path), (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`watcher ${this.index}: GET ${path} answered ${res.statusCode}`));
          return;
        }
        this.destroy = () => res.destroy();
        let buffered = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          // Every event completed by this chunk was read now, whatever parsing the ones before costs.
          const readAt = process.hrtime.bigint();
          buffered += chunk;
          let newline = buffered.indexOf("\n");
          while (newline !== -1) {
            const line = buffered.slice(0, newline);
            buffered = buffered.slice(newline + 1);
            if (line.trim() !== "") this.record(JSON.parse(line) as WatchEvent, readAt);
            newline = buffered.indexOf("\n");
          }
          this.onProgress();
        });
        res.on("end", () => {
          if (!this.closed) this.problems.push("the server ended the stream early");
          this.onProgress();
        });
        res.on("error", (error) => {
          if (!this.closed) this.problems.push(`stream error: ${error.message}`);
        });
        resolve();
      });
      req.on("error", (error) => {
        if (this.closed) return;
        reject(error);
        this.problems.push(`request error: ${error.message}`);
      });
      req.end();
    });
  }

  private record(event: WatchEvent, readAt: bigint): void {
    if (event.type !== "MODIFIED") {
      this.problems.push(`unexpected ${event.type} event${event.object.message ? `: ${event.object.message}` : ""}`);
      return;
    }
    const revision = event.object.metadata?.resourceVersion ?? "";
    if (this.arrivals.has(revision)) this.problems.push(`resourceVersion ${revision} delivered twice`);
    if (Number(revision) <= this.lastRevision) this.problems.push(`resourceVersion ${revision} arrived after ${this.lastRevision}`);
    this.lastRevision = Math.max(this.lastRevision, Number(revision));
    this.arrivals.set(revision, readAt);
  }

  close(): void {
    this.closed = true;
    this.destroy();
  }
}

export interface Write {
  sentAt: bigint;
  respondedAt: bigint;
  resourceVersion: string;
}

export interface FanoutOptions {
  /** A client whose agent allows one socket per watcher. */
  watchClient: BenchClient;
  writeClient: BenchClient;
  /** The collection, e.g. /apis/slipway.dev/v1alpha1/namespaces/default/connections */
  collection: string;
  watchers: number;
  writes: number;
  /** Writes start at most once per interval (a steady rate), each after the previous one answered; 0 sends them back to back. */
  writeIntervalMs: number;
  /** Names this round in the label values written, so that no write repeats an earlier round's value. */
  round: string;
  /** The object the write number `index` patches. */
  target: (index: number) => string;
  /** How long to wait for every watcher to read an event (the priming write, and after the last write). */
  drainTimeoutMs: number;
}

export interface FanoutResult {
  writes: Write[];
  watchers: Watcher[];
  /** Delivery latencies (write response → event read), ms, one per delivered (watcher, write) pair. */
  deliveriesMs: number[];
  /** First write sent → last event read, ms. */
  elapsedMs: number;
  /** One line per watcher that missed events or saw something unexpected. */
  failures: string[];
}

export async function runWatchFanout(options: FanoutOptions): Promise<FanoutResult> {
  const { watchClient, writeClient, collection } = options;
  const list = await writeClient.json<{ metadata: { resourceVersion: string } }>("GET", `${collection}?limit=1`);
  const path = `${collection}?watch=true&resourceVersion=${encodeURIComponent(list.metadata.resourceVersion)}`;

  let wake: () => void = () => {};
  const watchers = Array.from({ length: options.watchers }, (_, index) => new Watcher(index, () => wake()));
  const patch = async (index: number, suffix: string) => {
    const value = `${options.round}-${suffix}`;
    const object = await writeClient.json<{ metadata: { resourceVersion: string } }>("PATCH", `${collection}/${options.target(index)}`, {
      body: { metadata: { labels: { "bench.slipway.dev/write": value } } },
      contentType: "application/merge-patch+json",
    });
    return object.metadata.resourceVersion;
  };
  /** Resolves once `done` holds, re-checked whenever a watcher reads something; false after `timeoutMs`. */
  const until = (done: () => boolean, timeoutMs: number) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(done()), timeoutMs);
      wake = () => {
        if (!done()) return;
        clearTimeout(timer);
        resolve(true);
      };
      wake();
    });
  try {
    const opened = Promise.all(watchers.map((watcher) => watcher.open(watchClient, path)));
    opened.catch(() => undefined);
    // A server may hold a watch's response headers back until its first event. One write before the
    // measured ones (the streams start at an earlier resourceVersion, so none can miss it) releases
    // them and shows that every stream is live.
    const priming = await patch(0, "priming");
    const primed = await until(() => watchers.every((w) => w.arrivals.has(priming) || w.problems.length > 0), options.drainTimeoutMs);
    await opened;
    if (!primed) throw new Error(`watch fan-out: only ${watchers.filter((w) => w.arrivals.has(priming)).length} of ${watchers.length} watch streams read the priming write`);
    for (const watcher of watchers) watcher.arrivals.delete(priming);

    const writes: Write[] = [];
    const start = process.hrtime.bigint();
    for (let index = 0; index < options.writes; index++) {
      const slot = start + BigInt(Math.round(index * options.writeIntervalMs * 1e6));
      const waitMs = Number(slot - process.hrtime.bigint()) / 1e6;
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
      const sentAt = process.hrtime.bigint();
      const resourceVersion = await patch(index, String(index));
      writes.push({ sentAt, respondedAt: process.hrtime.bigint(), resourceVersion });
    }

    await until(() => watchers.every((w) => w.arrivals.size >= options.writes || w.problems.length > 0), options.drainTimeoutMs);

    const deliveriesMs: number[] = [];
    const failures: string[] = [];
    let lastRead = start;
    for (const watcher of watchers) {
      let missing = 0;
      for (const write of writes) {
        const readAt = watcher.arrivals.get(write.resourceVersion);
        if (readAt === undefined) {
          missing++;
          continue;
        }
        deliveriesMs.push(Number(readAt - write.respondedAt) / 1e6);
        if (readAt > lastRead) lastRead = readAt;
      }
      const extra = watcher.arrivals.size - (writes.length - missing);
      const problems = [...watcher.problems];
      if (missing > 0) problems.push(`missed ${missing} of ${writes.length} events`);
      if (extra > 0) problems.push(`read ${extra} events no write accounts for`);
      if (problems.length > 0) failures.push(`watcher ${watcher.index}: ${problems.slice(0, 3).join("; ")}`);
    }
    return { writes, watchers, deliveriesMs, elapsedMs: Number(lastRead - start) / 1e6, failures };
  } finally {
    for (const watcher of watchers) watcher.close();
  }
}
