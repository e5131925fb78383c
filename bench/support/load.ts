// A closed-loop load generator: a fixed number of requests, at most `concurrency` in flight, each
// worker sending its next request as soon as the previous one answered. Latencies are per request.

export interface LoadOptions {
  count: number;
  concurrency: number;
  /** Sends request number `index` and resolves when its whole response has arrived. */
  send: (index: number) => Promise<void>;
}

export interface LoadResult {
  count: number;
  concurrency: number;
  elapsedMs: number;
  /** One entry per request, in milliseconds, sorted ascending. */
  latenciesMs: number[];
}

export interface Summary {
  count: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export async function runClosedLoop(options: LoadOptions): Promise<LoadResult> {
  const latenciesMs: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < options.count) {
      const index = next++;
      const start = process.hrtime.bigint();
      await options.send(index);
      latenciesMs.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(options.concurrency, options.count) }, worker));
  const elapsedMs = Number(process.hrtime.bigint() - start) / 1e6;
  latenciesMs.sort((a, b) => a - b);
  return { count: options.count, concurrency: options.concurrency, elapsedMs, latenciesMs };
}

/** The nearest-rank percentile of ascending `sorted` values. */
export function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(fraction * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export function summarize(latenciesMs: readonly number[], count: number, elapsedMs: number): Summary {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  return {
    count,
    perSecond: count / (elapsedMs / 1000),
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    maxMs: sorted.at(-1) ?? Number.NaN,
  };
}
