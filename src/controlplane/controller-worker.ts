// The controllers on a worker thread (`slipway up --controllers-in-worker`): the API server, the store and
// the object service stay on the main thread, which serves API requests first; the controllers' calls
// arrive on a MessagePort and are taken while the main loop lags little (the rule LoopPacer applies to
// reconciles when they share the loop). Each call runs through the same ObjectService with the
// controller's own identity, so authorization, admission and post-write hooks are those of the
// in-process controllers. The thread's log lines are written to the process's log; its metrics are
// served on the main thread's /metrics.
import { MessageChannel, Worker, type MessagePort } from "node:worker_threads";
import pino, { type Logger } from "pino";
import type { ApiMetrics } from "../apiserver/metrics.ts";
import type { ObjectService } from "../apiserver/objects.ts";
import type { SimProviderOptions } from "../providers/sim/index.ts";
import { LoopPacer } from "../runtime/pacer.ts";
import { serveObjects } from "../runtime/remote-objects.ts";
import type { ControllersOptions, RunningControllers } from "./controllers.ts";

/** What the thread is started with (structured-clone data, and the port of the object service). */
export interface ControllerWorkerData {
  replica: string;
  logLevel: string;
  /** How the sim provider reaches the sim cloud (an embedded one by its URL). */
  sim: Omit<SimProviderOptions, "cloud">;
  /** The etcd cluster the shard leases are held on (with --store etcd). */
  etcdEndpoints?: string[];
  url: string;
  caPem: string;
  shardLeaseTtlSeconds?: number;
  shutdownGraceMs?: number;
  pollMs?: number;
  leaseWarningMs?: number;
  resyncMs?: number;
  syncPeriodMs?: number;
  sweeper?: ControllersOptions["sweeper"];
  objects: MessagePort;
}

export type ToWorker = { t: "ask"; id: number; what: "metrics" | "unready" } | { t: "stop" };
export type FromWorker =
  | { t: "log"; line: string }
  | { t: "started" }
  | { t: "failed"; error: string }
  | { t: "answer"; id: number; value: string | undefined }
  | { t: "stopped"; error?: string };

export interface WorkerControllersOptions extends Omit<ControllerWorkerData, "objects" | "logLevel"> {
  objects: ObjectService;
  log: Logger;
  metrics: ApiMetrics;
  /**
   * Called once when the thread fails or ends after the controllers started, and not because they were
   * stopped: `slipway up` then exits, as it does when a controller fails on the main thread, so that
   * what supervises it starts it again instead of leaving an API server with no controllers.
   */
  onFailure?: (error: ControllerWorkerError) => void;
  /** The module the thread runs (default: controller-worker-entry.mjs beside this one). */
  entry?: URL;
}

/** The controllers could not start on their thread. */
export class ControllerWorkerError extends Error {
  override readonly name = "ControllerWorkerError";
}

/** Starts the controllers on a worker thread; resolves once they run (informers synced, shards taken). */
export async function startControllersInWorker(options: WorkerControllersOptions): Promise<RunningControllers> {
  const { objects, log, metrics, onFailure, entry, ...settings } = options;
  const channel = new MessageChannel();
  const pacer = new LoopPacer({ maxLagMs: 15 });
  pacer.start();
  const served = serveObjects(objects, channel.port1, { admit: () => pacer.admit() });
  const data: ControllerWorkerData = { ...settings, logLevel: log.level, objects: channel.port2 };
  // Without the parent's --import flags: the entry registers the TypeScript loader itself.
  const worker = new Worker(entry ?? new URL("./controller-worker-entry.mjs", import.meta.url), { execArgv: [], workerData: data, transferList: [channel.port2] });
  const stream = (log as unknown as Record<symbol, { write(line: string): void }>)[pino.symbols.streamSym];
  const answers = new Map<number, (value: string | undefined) => void>();
  let ids = 0;
  let gone: string | undefined;
  let running = false;
  let stopRequested = false;
  const failed = () => {
    if (!running || stopRequested) return;
    running = false;
    onFailure?.(new ControllerWorkerError(gone ?? "the controllers' thread ended"));
  };
  let onStarted: { resolve: () => void; reject: (e: Error) => void } | undefined;
  let onStopped: (() => void) | undefined;
  const started = new Promise<void>((resolve, reject) => (onStarted = { resolve, reject }));
  const ended = () => {
    for (const answer of answers.values()) answer(undefined);
    answers.clear();
    onStopped?.();
  };
  worker.on("message", (message: FromWorker) => {
    if (message.t === "log") stream?.write(message.line);
    else if (message.t === "answer") {
      answers.get(message.id)?.(message.value);
      answers.delete(message.id);
    } else if (message.t === "started") onStarted?.resolve();
    else if (message.t === "failed") onStarted?.reject(new ControllerWorkerError(`the controllers did not start on their thread: ${message.error}`));
    else if (message.t === "stopped") {
      if (message.error) log.warn({ err: message.error }, "the controllers' thread stopped with an error");
      onStopped?.();
    }
  });
  worker.on("error", (error) => {
    gone = `the controllers' thread failed: ${error.message}`;
    log.error({ err: error.message, stack: error.stack }, "the controllers' thread failed");
    onStarted?.reject(new ControllerWorkerError(gone));
    failed();
  });
  worker.on("exit", (code) => {
    // Its end may be seen before its last message: a thread asked to stop is stopped either way.
    gone ??= stopRequested ? "the controllers are stopped" : `the controllers' thread exited (code ${code})`;
    onStarted?.reject(new ControllerWorkerError(gone));
    ended();
    failed();
  });
  const ask = (what: "metrics" | "unready"): Promise<string | undefined> => {
    if (gone) return Promise.resolve(what === "unready" ? gone : undefined);
    const id = ++ids;
    return new Promise((resolve) => {
      answers.set(id, resolve);
      worker.postMessage({ t: "ask", id, what } satisfies ToWorker);
    });
  };
  const close = () => {
    served.close();
    pacer.stop();
    channel.port1.close();
  };
  try {
    await started;
  } catch (error) {
    close();
    await worker.terminate();
    throw error;
  }
  onStarted = undefined;
  running = true;
  if (gone) failed();
  metrics.include(async () => (await ask("metrics")) ?? "");
  let stopping: Promise<void> | undefined;
  return {
    unready: async () => (gone ? gone : await ask("unready")),
    stop: () =>
      (stopping ??= (async () => {
        stopRequested = true;
        if (!gone) {
          // The thread stops its controllers (their last writes still served here), then ends; it is
          // ended after the grace period and a little more if it has not.
          const stopped = new Promise<void>((resolve) => (onStopped = resolve));
          worker.postMessage({ t: "stop" } satisfies ToWorker);
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([stopped, new Promise<void>((resolve) => (timer = setTimeout(resolve, (options.shutdownGraceMs ?? 10_000) + 5_000)))]);
          clearTimeout(timer);
        }
        gone ??= "the controllers are stopped";
        close();
        await worker.terminate();
      })()),
  };
}
