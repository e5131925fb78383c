// Reading a Prometheus text exposition (what `/metrics` answers): samples, sums over label sets, and
// quantiles of a histogram between two scrapes, as PromQL's histogram_quantile estimates them.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = SAMPLE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[3] ?? "").matchAll(LABEL)) labels[label[1]!] = label[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[4]) });
  }
  return samples;
}

/** The sum of every sample named `name` whose labels include `where`. */
export function sumOf(samples: readonly Sample[], name: string, where: Record<string, string> = {}): number {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(where).every(([k, v]) => s.labels[k] === v)) total += s.value;
  }
  return total;
}

/** Sums by the values of one or more labels (joined by NUL), e.g. reconciles per controller. */
export function sumBy(samples: readonly Sample[], name: string, ...labels: string[]): Map<string, number> {
  const sums = new Map<string, number>();
  for (const s of samples) {
    if (s.name !== name) continue;
    const key = labels.map((label) => s.labels[label] ?? "").join("\u0000");
    sums.set(key, (sums.get(key) ?? 0) + s.value);
  }
  return sums;
}

/** Cumulative bucket counts of histogram `name` (summed over every other label), by upper bound. */
export function histogramBuckets(samples: readonly Sample[], name: string, skip: (labels: Record<string, string>) => boolean = () => false): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket` || skip(s.labels)) continue;
    const le = s.labels.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  return buckets;
}

/** The buckets observed between two scrapes. */
export function bucketDelta(before: Map<number, number>, after: Map<number, number>): Map<number, number> {
  const delta = new Map<number, number>();
  for (const [le, count] of after) delta.set(le, count - (before.get(le) ?? 0));
  return delta;
}

/**
 * The `fraction` quantile of cumulative buckets, interpolated linearly inside the bucket it falls in
 * (histogram_quantile's estimate); the highest finite bound when it falls in the +Inf bucket.
 */
export function histogramQuantile(buckets: Map<number, number>, fraction: number): number {
  const bounds = [...buckets.keys()].sort((a, b) => a - b);
  const total = buckets.get(Number.POSITIVE_INFINITY) ?? 0;
  if (total <= 0) return Number.NaN;
  const rank = fraction * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const bound of bounds) {
    const count = buckets.get(bound)!;
    if (count >= rank) {
      if (!Number.isFinite(bound)) return lowerBound;
      const inBucket = count - lowerCount;
      return inBucket <= 0 ? bound : lowerBound + ((bound - lowerBound) * (rank - lowerCount)) / inBucket;
    }
    lowerBound = bound;
    lowerCount = count;
  }
  return lowerBound;
}
