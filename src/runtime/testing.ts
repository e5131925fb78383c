// Helpers for the runtime's tests and for controllers' tests: a clock driven by hand, an object service
// on an in-memory store with the default namespaces, a logger whose lines can be read back, and polling
// on a condition, and a record of the keys a controller queues.
import { Writable } from "node:stream";
import pino, { type Logger } from "pino";
import { defaultRegistry } from "../api/kinds.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { Clock } from "./clock.ts";
import { Client } from "./client.ts";
import type { Controller, ReconcileContext } from "./controller.ts";
import type { KubeObject } from "../api/meta.ts";

interface ManualTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** A clock that moves only when told to; timers fire, in order, as it passes them. */
export class ManualClock implements Clock {
  private time: number;
  private seq = 0;
  private timers: ManualTimer[] = [];

  constructor(start = Date.parse("2025-01-01T00:00:00Z")) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimer(fn: () => void, ms: number): () => void {
    const timer: ManualTimer = { at: this.time + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  /** Moves time forward, firing every timer due on the way. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.time = Math.max(this.time, due.at);
      due.cancelled = true;
      due.fn();
    }
    this.time = end;
  }
}

/** An object service over a fresh in-memory store, with the namespace "default". */
export async function memoryObjects(): Promise<ObjectService> {
  const objects = new ObjectService(defaultRegistry(), SqliteStore.open(":memory:"));
  await objects.create(objects.registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
  return objects;
}

/** A logger that keeps its lines, for tests that check what a user would read in the log. */
export function recordingLogger(level = "debug"): { log: Logger; lines: () => { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line.trim()) lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { log: pino({ level }, sink), lines: () => lines };
}

export const silentLogger: Logger = pino({ level: "silent" });

/** A reconcile context for tests of phases and summaries that talk to nothing (its client has no API). */
export function reconcileContext(overrides: Partial<ReconcileContext> = {}): ReconcileContext {
  return {
    key: "default/demo",
    namespace: "default",
    name: "demo",
    signal: new AbortController().signal,
    client: new Client(undefined as unknown as ObjectService),
    log: silentLogger,
    clock: new ManualClock(),
    failures: 0,
    event: async () => {},
    ...overrides,
  };
}

/** Polls until `check` returns something other than undefined/false, or fails after the timeout. */
export async function until<R>(check: () => R | Promise<R>, what: string, timeoutMs = 3000): Promise<Exclude<R, false | undefined>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await check();
    if (result !== undefined && result !== false) return result as Exclude<R, false | undefined>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Records the keys a controller queues from now on (its watches' and its own informer's). */
export function queuedKeys(controller: Pick<Controller<KubeObject>, "enqueue">): string[] {
  const keys: string[] = [];
  const enqueue = controller.enqueue.bind(controller);
  controller.enqueue = (key) => {
    keys.push(key);
    enqueue(key);
  };
  return keys;
}
