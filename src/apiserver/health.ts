// Health endpoints as kube-apiserver answers them: /readyz runs named checks; `ok` when all pass, and
// otherwise 503 with one line per check, the failing ones marked [-] (the reason goes to the log, not
// to an unauthenticated caller). `?verbose` lists every check either way; `/readyz/<name>` runs one;
// `?exclude=<name>` skips one.

/** A named check: it throws, saying why, when what it checks is not ready. */
export interface HealthCheck {
  name: string;
  check(): Promise<void> | void;
}

export interface HealthReport {
  /** HTTP status: 200 or 503. */
  code: number;
  body: string;
  /** The checks that failed, with why (for the log). */
  failed: { name: string; reason: string }[];
}

export interface HealthQuery {
  verbose?: boolean;
  exclude?: readonly string[];
  /** Only this check (from /readyz/<name>). */
  only?: string;
}

/** Checks no server can fail while it answers at all. */
export const PING: HealthCheck = { name: "ping", check: () => undefined };

/** A check that fails when `check` takes longer than `ms`. */
export function withTimeout(check: HealthCheck, ms: number): HealthCheck {
  return {
    name: check.name,
    check: async () => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          check.check(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * Runs the checks (all at once) and words the answer; undefined when `only` names no check (404).
 * `what` is the endpoint's name as it appears in the last line ("readyz").
 */
export async function runHealthChecks(what: string, checks: readonly HealthCheck[], query: HealthQuery = {}): Promise<HealthReport | undefined> {
  const selected = query.only !== undefined ? checks.filter((c) => c.name === query.only) : checks.filter((c) => !query.exclude?.includes(c.name));
  if (query.only !== undefined && selected.length === 0) return undefined;
  const results = await Promise.all(
    selected.map(async (c) => {
      try {
        await c.check();
        return { name: c.name };
      } catch (error) {
        return { name: c.name, reason: error instanceof Error ? error.message : String(error) };
      }
    }),
  );
  const failed = results.flatMap((r) => (r.reason === undefined ? [] : [{ name: r.name, reason: r.reason }]));
  const lines = results.map((r) => (r.reason === undefined ? `[+]${r.name} ok` : `[-]${r.name} failed: reason withheld`));
  if (failed.length > 0) return { code: 503, body: `${lines.join("\n")}\n${what} check failed\n`, failed };
  if (!query.verbose) return { code: 200, body: "ok", failed };
  return { code: 200, body: `${lines.join("\n")}\n${what} check passed\n`, failed };
}
