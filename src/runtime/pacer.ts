// Reconciles share the event loop with the API server. While the loop lags — a request arriving now
// would wait behind controller work — workers wait before taking their next key: requests keep a short
// wait, and the controllers use the time the API leaves them. (Kubernetes gets the same from API
// priority and fairness, which lets user requests ahead of controller traffic.)
import { setTimeout as delay } from "node:timers/promises";

export interface LoopPacerOptions {
  /** Workers wait while the event loop's recent lag is above this. */
  maxLagMs: number;
  /** How often the lag is sampled. Default 20 ms. */
  sampleMs?: number;
}

export class LoopPacer {
  private lagMs = 0;
  private timer?: NodeJS.Timeout;
  private readonly sampleMs: number;

  constructor(private readonly options: LoopPacerOptions) {
    this.sampleMs = options.sampleMs ?? 20;
  }

  /** The loop's recent lag, ms (a moving average of how late a timer fires). */
  get lag(): number {
    return this.lagMs;
  }

  start(): void {
    if (this.timer) return;
    const sample = () => {
      const due = performance.now() + this.sampleMs;
      this.timer = setTimeout(() => {
        const late = Math.max(0, performance.now() - due);
        this.lagMs = 0.75 * this.lagMs + 0.25 * late;
        sample();
      }, this.sampleMs);
      this.timer.unref();
    };
    sample();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.lagMs = 0;
  }

  /**
   * Resolves once the loop has room for more controller work (at once when it has; never after stop),
   * with how long it held the caller, ms.
   */
  async admit(signal?: AbortSignal): Promise<number> {
    if (!this.timer || this.lagMs <= this.options.maxLagMs) return 0;
    const since = performance.now();
    while (this.timer && this.lagMs > this.options.maxLagMs && !signal?.aborted) {
      await delay(this.sampleMs);
    }
    return performance.now() - since;
  }
}
