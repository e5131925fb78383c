// The phase of every object of one collection, kept current through one list + watch stream (a relist
// whenever the stream ends), so that a benchmark can count objects by phase every second without
// listing thousands of objects each time.
import { request } from "node:https";
import type { ClientRequest } from "node:http";
import type { BenchClient } from "./client.ts";

interface Item {
  metadata: { name: string; resourceVersion?: string };
  status?: { phase?: string };
}

interface ListPage {
  metadata: { resourceVersion: string; continue?: string };
  items: Item[];
}

interface WatchLine {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: Item & { code?: number; message?: string };
}

const NO_PHASE = "(none)";
const PAGE = 500;

export class PhaseWatch {
  private readonly phases = new Map<string, string>();
  private readonly counts = new Map<string, number>();
  private readonly listeners = new Set<() => void>();
  private request?: ClientRequest;
  private closed = false;
  /** Streams restarted after an error or an end (relists). */
  restarts = 0;

  constructor(
    private readonly client: BenchClient,
    private readonly collection: string,
  ) {}

  /** Lists, then watches; resolves once the first list is in. */
  async start(): Promise<void> {
    const revision = await this.relist();
    this.watch(revision);
  }

  close(): void {
    this.closed = true;
    this.request?.destroy();
  }

  /** Objects known now. */
  get size(): number {
    return this.phases.size;
  }

  count(phase: string): number {
    return this.counts.get(phase) ?? 0;
  }

  /** Objects by phase, e.g. {Running: 812, Provisioning: 188}. */
  byPhase(): Record<string, number> {
    return Object.fromEntries([...this.counts].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]));
  }

  /** Resolves with the time (performance.now()) at which `done` first held, checked after every change. */
  until(done: () => boolean): Promise<number> {
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        this.listeners.delete(check);
        resolve(performance.now());
      };
      this.listeners.add(check);
      check();
    });
  }

  private set(name: string, phase: string | undefined): void {
    const before = this.phases.get(name);
    const after = phase ?? NO_PHASE;
    if (before === after) return;
    if (before !== undefined) this.counts.set(before, (this.counts.get(before) ?? 0) - 1);
    this.phases.set(name, after);
    this.counts.set(after, (this.counts.get(after) ?? 0) + 1);
  }

  private remove(name: string): void {
    const before = this.phases.get(name);
    if (before === undefined) return;
    this.phases.delete(name);
    this.counts.set(before, (this.counts.get(before) ?? 0) - 1);
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }

  private async relist(): Promise<string> {
    const seen = new Set<string>();
    let token: string | undefined;
    let revision = "";
    do {
      const query = `?limit=${PAGE}${token ? `&continue=${encodeURIComponent(token)}` : ""}`;
      const page = await this.client.json<ListPage>("GET", this.collection + query);
      for (const item of page.items) {
        seen.add(item.metadata.name);
        this.set(item.metadata.name, item.status?.phase);
      }
      revision = page.metadata.resourceVersion;
      token = page.metadata.continue;
    } while (token);
    for (const name of [...this.phases.keys()]) if (!seen.has(name)) this.remove(name);
    this.changed();
    return revision;
  }

  private watch(revision: string): void {
    if (this.closed) return;
    const path = `${this.collection}?watch=true&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(revision)}`;
    const restart = () => {
      if (this.closed) return;
      this.restarts++;
      setTimeout(() => {
        this.relist().then(
          (fresh) => this.watch(fresh),
          () => restart(),
        );
      }, 500);
    };
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      restart();
    };
    const req = request(this.client.options("GET", path), (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        end();
        return;
      }
      let buffered = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffered += chunk;
        let newline = buffered.indexOf("\n");
        let any = false;
        while (newline !== -1) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          newline = buffered.indexOf("\n");
          if (line.trim() === "") continue;
          const event = JSON.parse(line) as WatchLine;
          if (event.type === "ERROR") {
            res.destroy();
            end();
            return;
          }
          if (event.type === "DELETED") this.remove(event.object.metadata.name);
          else if (event.type !== "BOOKMARK") this.set(event.object.metadata.name, event.object.status?.phase);
          any = true;
        }
        if (any) this.changed();
      });
      res.on("end", end);
      res.on("error", end);
    });
    req.on("error", end);
    req.end();
    this.request = req;
  }
}
