// What a cluster's reconciles found in place lately (its Secrets, its kubeconfig for an endpoint), by
// what was checked (the cluster's uid and the thing): not read again for `recheckMs`. A cluster is
// reconciled dozens of times while it is built, and each check read and decrypted a Secret; one deleted by
// hand is made again within the period. Held by the cluster controller, so that two control planes in
// one process (tests) never share what they saw.

export const DEFAULT_RECHECK_MS = 5 * 60_000;
/** The oldest entries go beyond this many. */
const DEFAULT_KEPT = 65_536;

export class RecentChecks {
  private readonly checkedAt = new Map<string, number>();

  constructor(
    private readonly recheckMs = DEFAULT_RECHECK_MS,
    private readonly kept = DEFAULT_KEPT,
  ) {}

  /** Whether `what` was found in place less than `recheckMs` before `nowMs`. */
  recent(what: string, nowMs: number): boolean {
    const at = this.checkedAt.get(what);
    return at !== undefined && nowMs - at < this.recheckMs;
  }

  /** Records that `what` was found (or made) in place at `nowMs`. */
  mark(what: string, nowMs: number): void {
    this.checkedAt.delete(what);
    this.checkedAt.set(what, nowMs);
    if (this.checkedAt.size > this.kept) this.checkedAt.delete(this.checkedAt.keys().next().value!);
  }

  get size(): number {
    return this.checkedAt.size;
  }
}
