// Usage errors end the command with exit code 2, as with unknown commands and flags.
import pino from "pino";

export class UsageError extends Error {
  override readonly name = "UsageError";
}

export function parsePort(text: string, flag: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`${flag} must be a port number between 0 and 65535 (got "${text}")`);
  return port;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "250ms", "5s", "2m", "1h" → milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim());
  if (!m) throw new UsageError(`${flag} must be a duration such as 500ms, 30s or 5m (got "${text}")`);
  return Number(m[1]) * UNITS[m[2]!]!;
}

/** A whole number of at least 1, e.g. a count of connections. */
export function parseCount(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`${flag} must be a whole number of at least 1 (got "${text}")`);
  return n;
}

/** A level of the process logger (pino's own: trace, debug, info, warn, error, fatal; or silent). */
export function parseLogLevel(text: string, flag: string): string {
  if (text !== "silent" && !(text in pino.levels.values)) throw new UsageError(`${flag} must be one of ${[...Object.keys(pino.levels.values), "silent"].join(", ")} (got "${text}")`);
  return text;
}
