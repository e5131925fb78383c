// Reconciles share the event loop with the API server. While the loop lags — a request arriving now
// would wait behind controller work — workers wait before taking their next key: requests keep a short
// wait, and the controllers use the time the API leaves them. (Kubernetes gets the same from API
// priority and fairness, which lets user requests ahead of controller traffic.)
//
// Lag is a moving average, so it also needs a bound on what starts at once: workers resume together (all
// those that yielded before the same turn of the loop, all those held that wake on the same sample), and
// each runs its reconcile in one go when it only reads caches and writes the in-process store. Work
// admitted in one turn of the loop is therefore cut off after `turnBudgetMs`; the rest waits for the next
// turn, after the loop has polled for I/O (requests, replies) once more.
import { setImmediate as nextTurn, setTimeout as delay } from "node:timers/promises";

export interface LoopPacerOptions {
  /** Workers wait while the event loop's recent lag is above this. */
  maxLagMs: number;
  /** How often the lag is sampled. Default 20 ms. */
  sampleMs?: number;
  /** Workers admitted in one turn of the loop, until this long after the first of them. Default 25 ms. */
  turnBudgetMs?: number;
}

export class LoopPacer {
  private lagMs = 0;
  private timer?: NodeJS.Timeout;
  private readonly sampleMs: number;
  private readonly turnBudgetMs: number;
  /** When the first worker of this turn of the loop was admitted (undefined: none yet). */
  private turnStartedAt: number | undefined;

  constructor(private readonly options: LoopPacerOptions) {
    this.sampleMs = options.sampleMs ?? 20;
    this.turnBudgetMs = options.turnBudgetMs ?? 25;
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
   * Resolves once the loop has room for more controller work (at once when it has; never held after
   * stop), with how long it held the caller, ms.
   */
  async admit(signal?: AbortSignal): Promise<number> {
    if (!this.timer || (this.lagMs <= this.options.maxLagMs && this.withinTurn())) return 0;
    const since = performance.now();
    while (this.timer && !signal?.aborted) {
      if (this.lagMs > this.options.maxLagMs) await delay(this.sampleMs);
      else if (this.withinTurn()) break;
      else await nextTurn();
    }
    return performance.now() - since;
  }

  /** Whether this turn of the loop still has room for more work: the first admission of a turn opens it. */
  private withinTurn(): boolean {
    const now = performance.now();
    if (this.turnStartedAt === undefined) {
      this.turnStartedAt = now;
      // Queued before any worker that finds the turn full: the next turn opens anew before they retry.
      setImmediate(() => (this.turnStartedAt = undefined));
    }
    return now - this.turnStartedAt < this.turnBudgetMs;
  }
}
