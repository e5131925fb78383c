// The lease controller: makes a Lease's capacity reservations through its connection's provider, follows
// them through their window, warns before the end, deletes the clusters that adopted it when it ends, and
// cancels the reservations when the Lease is deleted.
import type { ConnectionObject, LeaseObject } from "../../api/kinds.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { FINALIZER_LEASE, leaseKind } from "../../api/slipway/lease.ts";
import type { Controller } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler } from "../../runtime/reconciler.ts";
import { leaseDeletePhases, leasePhases } from "./phases.ts";
import type { LeaseDeps, LeaseScope, LeaseTiming } from "./scope.ts";
import { summarizeLease } from "./status.ts";

export const LEASE_COMPONENT = "slipway.dev/lease-controller";

export interface LeaseControllerOptions extends Partial<LeaseTiming> {
  concurrency?: number;
}

export function registerLeaseController(manager: ControllerManager, deps: LeaseDeps, options: LeaseControllerOptions = {}): Controller<LeaseObject> {
  const leases = manager.informer(leaseKind);
  const connections = manager.informer(connectionKind);
  const timing: LeaseTiming = { endingSoonMs: options.endingSoonMs ?? 5 * 60_000, recheckMs: options.recheckMs ?? 30_000 };
  const reconcile = objectReconciler<LeaseObject, LeaseScope>({
    kind: leaseKind,
    cache: leases.cache,
    finalizer: FINALIZER_LEASE,
    observedGeneration: true,
    scope: (_ctx, base) => ({
      ...base,
      deps,
      timing,
      connection: connections.cache.get(keyFor(base.object.metadata.namespace, base.object.spec.connection)) as ConnectionObject | undefined,
    }),
    phases: leasePhases,
    deletePhases: leaseDeletePhases,
    summarize: summarizeLease,
    afterStatusWrite: async (ctx, _scope, previous, written) => {
      const phase = written.status?.phase;
      if (phase === previous.status?.phase) return;
      if (phase === "Active") await ctx.event(written, "Normal", "LeaseActive", written.status?.conditions?.find((c) => c.type === "Active")?.message ?? "lease is Active");
      if (phase === "Expired") await ctx.event(written, "Normal", "LeaseExpired", written.status?.message ?? "lease ended");
      if (phase === "Failed") await ctx.event(written, "Warning", written.status?.reason ?? "LeaseFailed", written.status?.message ?? "");
    },
  });
  const controller = manager.add<LeaseObject>({ name: "lease", component: LEASE_COMPONENT, informer: leases, reconcile, concurrency: options.concurrency ?? 4 });
  controller.watch(connections, (c) =>
    leases.cache
      .list()
      .filter((l) => l.metadata.namespace === c.metadata.namespace && l.spec.connection === c.metadata.name)
      .map((l) => keyFor(l.metadata.namespace, l.metadata.name!)),
  );
  return controller;
}
