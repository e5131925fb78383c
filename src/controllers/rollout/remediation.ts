// When a failed machine of a set (a pool, the control plane) is replaced, as Cluster API's
// MachineHealthCheck remediates: at once the first time, then with a delay doubling from 10 s up to
// 5 min after each replacement, so a machine that fails the same way each time does not loop through
// the cloud; the count starts over once every wanted machine is Ready. With more machines failed at
// once than the set's maxUnhealthy (api/slipway/health.ts; 40 % of those wanted by default, at least
// one), nothing is replaced: something beyond one machine is wrong (the cloud, the image, the network)
// and replacing only adds to it. Machines whose failure was the control plane's — they failed to join
// before it was initialised, as when a first control-plane machine failed and was replaced while the
// workers waited — are not counted: that cause is gone, and they cannot heal themselves.
import { DEFAULT_MAX_UNHEALTHY, maxUnhealthyCount, type MaxUnhealthy } from "../../api/slipway/health.ts";

export const REMEDIATION_INITIAL_DELAY_MS = 10_000;
export const REMEDIATION_MAX_DELAY_MS = 5 * 60_000;
/** On the set: False while failed machines wait for their backoff, or while too many failed at once. */
export const REMEDIATION_ALLOWED = "RemediationAllowed";
export const REASON_TOO_MANY_UNHEALTHY = "TooManyUnhealthy";

/** What is recorded between reconciles: replacements since the set was last all Ready, and the last one's time. */
export interface RemediationRecord {
  attempts: number;
  lastTime: string;
}

/** The wait after `attempts` replacements before the next one. */
export function remediationDelayMs(attempts: number): number {
  if (attempts <= 0) return 0;
  return Math.min(REMEDIATION_MAX_DELAY_MS, REMEDIATION_INITIAL_DELAY_MS * 2 ** (attempts - 1));
}

export type RemediationDecision =
  | { action: "none" }
  | { action: "replace" }
  | { action: "wait"; afterMs: number; message: string }
  | { action: "paused"; message: string };

export interface RemediationInput {
  /** Names of the machines failed for good, not yet being deleted. */
  failed: readonly string[];
  /** Those of `failed` not counted against maxUnhealthy (their failure was the control plane's, now there). */
  excused?: readonly string[];
  desired: number;
  /** The set's spec.maxUnhealthy (default 40%). */
  maxUnhealthy?: MaxUnhealthy;
  record: RemediationRecord | undefined;
  nowMs: number;
}

export function decideRemediation({ failed, excused = [], desired, maxUnhealthy = DEFAULT_MAX_UNHEALTHY, record, nowMs }: RemediationInput): RemediationDecision {
  if (failed.length === 0) return { action: "none" };
  const limit = maxUnhealthyCount(maxUnhealthy, desired);
  const names = failed.join(", ");
  const counted = failed.filter((name) => !excused.includes(name));
  if (counted.length > limit) {
    const percent = typeof maxUnhealthy === "string" ? ` (${maxUnhealthy})` : "";
    return { action: "paused", message: `${counted.length} machines failed (${counted.join(", ")}), more than maxUnhealthy ${limit} of ${desired}${percent}: not replacing them until fewer are failed` };
  }
  if (!record) return { action: "replace" };
  const dueMs = Date.parse(record.lastTime) + remediationDelayMs(record.attempts);
  if (!(nowMs < dueMs)) return { action: "replace" };
  const afterMs = dueMs - nowMs;
  return { action: "wait", afterMs, message: `replacing ${names} in ${Math.ceil(afterMs / 1000)}s (backing off after ${record.attempts} replacement(s))` };
}

/** The record after replacing machines now. */
export function recordReplacement(record: RemediationRecord | undefined, now: string): RemediationRecord {
  return { attempts: (record?.attempts ?? 0) + 1, lastTime: now };
}
