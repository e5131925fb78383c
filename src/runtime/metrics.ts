// Prometheus metrics of the controllers, labelled by controller: queue depth, adds, retries, how long
// reconciles take and how they end, and how many shards this replica works on.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { QueueObserver } from "./queue.ts";

export type ReconcileOutcome = "success" | "requeue" | "error" | "conflict" | "shard_lost";

export class ControllerMetrics {
  readonly depth: Gauge<"controller">;
  readonly adds: Counter<"controller">;
  readonly retries: Counter<"controller">;
  readonly duration: Histogram<"controller" | "outcome">;
  readonly shardsHeld: Gauge;
  readonly paced: Counter<"controller">;

  constructor(registry: Registry) {
    this.depth = new Gauge({
      name: "slipway_workqueue_depth",
      help: "Keys waiting for a worker, by controller.",
      labelNames: ["controller"],
      registers: [registry],
    });
    this.adds = new Counter({
      name: "slipway_workqueue_adds_total",
      help: "Keys added to the work queue, by controller.",
      labelNames: ["controller"],
      registers: [registry],
    });
    this.retries = new Counter({
      name: "slipway_workqueue_retries_total",
      help: "Keys requeued after a failure or a conflict, by controller.",
      labelNames: ["controller"],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: "slipway_reconcile_duration_seconds",
      help: "Time spent reconciling one key, by controller and outcome.",
      labelNames: ["controller", "outcome"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    this.paced = new Counter({
      name: "slipway_controller_paced_seconds_total",
      help: "Time workers waited for room on the event loop before starting a key they hold, summed over workers, by controller.",
      labelNames: ["controller"],
      registers: [registry],
    });
    this.shardsHeld = new Gauge({
      name: "slipway_controller_shards_active",
      help: "Shards of the controllers' work this replica works on.",
      registers: [registry],
    });
  }

  queueObserver(controller: string): QueueObserver {
    // Present from the start, at zero, rather than appearing with the first key.
    this.depth.set({ controller }, 0);
    this.retries.inc({ controller }, 0);
    this.adds.inc({ controller }, 0);
    this.paced.inc({ controller }, 0);
    return {
      depth: (keys) => this.depth.set({ controller }, keys),
      added: () => this.adds.inc({ controller }),
      retried: () => this.retries.inc({ controller }),
    };
  }
}
