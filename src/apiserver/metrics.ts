// Prometheus metrics of one API server (its own registry, so several servers can share a process).
import { Counter, Gauge, Histogram, Registry as MetricsRegistry, collectDefaultMetrics } from "prom-client";

export class ApiMetrics {
  readonly registry = new MetricsRegistry();
  readonly requests: Counter<"verb" | "resource" | "code">;
  readonly latency: Histogram<"verb" | "resource">;
  readonly watches: Gauge<"resource">;
  readonly watchEvents: Counter<"resource">;
  /** More metrics served with these, in the text format (a worker thread's registry). */
  private readonly more: (() => Promise<string>)[] = [];

  constructor(options: { defaultMetrics?: boolean } = {}) {
    this.requests = new Counter({
      name: "apiserver_request_total",
      help: "API requests by verb, resource and HTTP code.",
      labelNames: ["verb", "resource", "code"],
      registers: [this.registry],
    });
    this.latency = new Histogram({
      name: "apiserver_request_duration_seconds",
      help: "API request latency by verb and resource (watches excluded).",
      labelNames: ["verb", "resource"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [this.registry],
    });
    this.watches = new Gauge({
      name: "apiserver_watches_open",
      help: "Open watch streams by resource.",
      labelNames: ["resource"],
      registers: [this.registry],
    });
    this.watchEvents = new Counter({
      name: "apiserver_watch_events_total",
      help: "Watch events sent by resource.",
      labelNames: ["resource"],
      registers: [this.registry],
    });
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Serves another registry's metrics (by its text, e.g. from another thread) with these. */
  include(source: () => Promise<string>): void {
    this.more.push(source);
  }

  /** Every metric, in the Prometheus text format. */
  async text(): Promise<string> {
    const parts = await Promise.all([this.registry.metrics(), ...this.more.map((source) => source().catch(() => ""))]);
    return parts.filter(Boolean).map((part) => (part.endsWith("\n") ? part : `${part}\n`)).join("");
  }
}
