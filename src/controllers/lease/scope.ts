// What the lease controller's phases share: its dependencies and timings, and one reconcile's scope.
import type { ConnectionObject, LeaseObject } from "../../api/kinds.ts";
import type { Scope } from "../../runtime/reconciler.ts";
import type { ProviderResolver } from "../providers.ts";

export interface LeaseDeps {
  providers: ProviderResolver;
}

export interface LeaseTiming {
  /** How long before its end a lease warns (Warning Event LeaseEndingSoon) (default 5 minutes). */
  endingSoonMs: number;
  /** Requeue delay while the cloud's reservations are checked on (default 30 s; sooner when a moment is due). */
  recheckMs: number;
}

export interface LeaseScope extends Scope<LeaseObject> {
  deps: LeaseDeps;
  timing: LeaseTiming;
  connection: ConnectionObject | undefined;
  /** Set by a phase that reached a final failure for this generation. */
  problem?: { reason: string; message: string };
}
