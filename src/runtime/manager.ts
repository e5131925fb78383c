// The controller manager of one replica: shared informers, the controllers, the shards they work on,
// and the order things start and stop in. Start: informers sync first, then controllers run, then the
// coordinator takes shards (and every cached key of a shard taken is queued). Stop (SIGTERM): no new
// work is taken, work in flight may finish (bounded), the shards are handed back at once, informers end.
import type { Logger } from "pino";
import type { Registry as MetricsRegistry } from "prom-client";
import type { KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import type { ObjectApi } from "../apiserver/objects.ts";
import { Client, controllerContext } from "./client.ts";
import { systemClock, type Clock } from "./clock.ts";
import { Controller, type ControllerOptions } from "./controller.ts";
import { EventRecorder } from "./events.ts";
import { Informers, type Informer } from "./informer.ts";
import { ControllerMetrics } from "./metrics.ts";
import { LoopPacer, type LoopPacerOptions } from "./pacer.ts";
import { ProcessShards, ShardSet, type ShardCoordinator } from "./shards.ts";

export interface ControllerManagerOptions {
  objects: ObjectApi;
  /** This replica's name: events' reportingInstance, shard lock holder. */
  replica: string;
  log: Logger;
  /** Decides which shards this replica works on. Default: all of them (one process). */
  coordinator?: (shards: ShardSet) => ShardCoordinator;
  /** Where the controllers' metrics are registered (served on /metrics). */
  metrics?: MetricsRegistry;
  clock?: Clock;
  /** Informer resync period. Default 10 minutes. */
  resyncMs?: number;
  /** How long a stopping replica lets work in flight finish. Default 10 s. */
  shutdownGraceMs?: number;
  shardCount?: number;
  /** Workers wait while the event loop lags more than this (the API server shares the loop). */
  pacer?: LoopPacerOptions;
}

export class ManagerStartedError extends Error {
  override readonly name = "ManagerStartedError";
  constructor() {
    super("controllers must be added before the manager starts");
  }
}

export class ControllerManager {
  readonly client: Client;
  readonly informers: Informers;
  readonly shards: ShardSet;
  readonly replica: string;
  readonly coordinator: ShardCoordinator;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly metrics?: ControllerMetrics;
  private readonly shutdownGraceMs: number;
  private readonly pacer?: LoopPacer;
  private readonly controllers: Controller<KubeObject>[] = [];
  private readonly recorders = new Map<string, EventRecorder>();
  private state: "new" | "running" | "stopped" = "new";
  /** start() has finished: informers synced, workers running, shards taken. */
  private started = false;

  constructor(options: ControllerManagerOptions) {
    this.replica = options.replica;
    this.log = options.log.child({ component: "controllers", replica: options.replica });
    this.clock = options.clock ?? systemClock;
    this.client = new Client(options.objects, undefined, controllerContext("manager"));
    this.informers = new Informers(options.objects, { log: this.log, clock: this.clock, resyncMs: options.resyncMs });
    this.shards = new ShardSet(options.shardCount);
    this.coordinator = options.coordinator ? options.coordinator(this.shards) : new ProcessShards(this.shards);
    this.shutdownGraceMs = options.shutdownGraceMs ?? 10_000;
    if (options.pacer) this.pacer = new LoopPacer(options.pacer);
    if (options.metrics) {
      const metrics = new ControllerMetrics(options.metrics);
      this.metrics = metrics;
      this.shards.onChange(() => metrics.shardsHeld.set(this.shards.activeShards().length));
    }
  }

  /** The shared informer of a kind. */
  informer<T extends KubeObject>(kind: KindDefinition<T>): Informer<T> {
    return this.informers.for(kind);
  }

  /** The event recorder of a component (e.g. slipway.dev/operation-controller), writing as `client`. */
  recorder(component: string, client = this.client): EventRecorder {
    let recorder = this.recorders.get(component);
    if (!recorder) {
      recorder = new EventRecorder({ client, component, instance: this.replica, log: this.log, clock: this.clock });
      this.recorders.set(component, recorder);
    }
    return recorder;
  }

  /**
   * Adds a controller; it acts as its own identity (controllerContext of its name) and its events are
   * recorded as `component`. Add every controller before start().
   */
  add<T extends KubeObject>(options: ControllerOptions<T> & { component: string }): Controller<T> {
    if (this.state !== "new") throw new ManagerStartedError();
    const client = this.client.as(controllerContext(options.name));
    const controller = new Controller<T>(options, {
      shards: this.shards,
      client,
      recorder: this.recorder(options.component, client),
      log: this.log,
      clock: this.clock,
      metrics: this.metrics,
      pacer: this.pacer,
    });
    this.controllers.push(controller as unknown as Controller<KubeObject>);
    return controller;
  }

  async start(): Promise<void> {
    if (this.state !== "new") return;
    this.state = "running";
    await this.informers.start();
    this.pacer?.start();
    for (const controller of this.controllers) controller.start();
    await this.coordinator.start();
    this.started = true;
    this.log.info({ controllers: this.controllers.map((c) => c.name), shards: this.shards.activeShards().length }, "controllers running");
  }

  /** Why the controllers cannot work now (not started, stopped, no shards), or undefined when they can. */
  unready(): string | undefined {
    if (this.state === "new") return "the controllers have not started";
    if (this.state === "stopped") return "the controllers are stopped";
    if (!this.started) return "the controllers are starting";
    return this.coordinator.unready();
  }

  /** Graceful: takes no new work, lets work in flight finish (bounded), hands the shards back. */
  async stop(): Promise<void> {
    if (this.state !== "running") {
      this.state = "stopped";
      return;
    }
    this.state = "stopped";
    const started = performance.now();
    for (const controller of this.controllers) controller.stopTaking();
    this.pacer?.stop();
    await this.coordinator.stop(this.shutdownGraceMs);
    // Work still running was aborted with its shard: its writes fail, so it ends quickly.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.controllers.map((c) => c.stop())),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 2_000);
      }),
    ]);
    clearTimeout(timer);
    this.informers.stop();
    this.log.info({ ms: Math.round(performance.now() - started) }, "controllers stopped");
  }
}
