// The Host controller: checks that Slipway can log in to a Host (pinning its host key at first contact,
// refusing a changed one), records its facts, says which cluster uses it, and keeps a host that a
// cluster uses until that cluster lets it go. Claims themselves are the ssh provider's (directory.ts).
import type { HostObject } from "../../api/kinds.ts";
import { FINALIZER_HOST, hostKind } from "../../api/slipway/host.ts";
import type { Controller } from "../../runtime/controller.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler } from "../../runtime/reconciler.ts";
import { contactHost, probeHost, summarizeHostClaim, waitForRelease, type HostProbe, type HostTiming } from "./phases.ts";
import { conditionOf } from "./status.ts";

export const HOST_COMPONENT = "slipway.dev/host-controller";

export interface HostControllerOptions extends Partial<HostTiming> {
  /** How a host is logged in to (default: over SSH). */
  probe?: HostProbe;
}

export function registerHostController(manager: ControllerManager, options: HostControllerOptions = {}): Controller<HostObject> {
  const informer = manager.informer(hostKind);
  const timing: HostTiming = { recheckMs: options.recheckMs ?? 300_000, retryMs: options.retryMs ?? 15_000 };
  const reconcile = objectReconciler<HostObject>({
    kind: hostKind,
    cache: informer.cache,
    finalizer: FINALIZER_HOST,
    observedGeneration: true,
    phases: [contactHost(manager.client, options.probe ?? probeHost, timing), summarizeHostClaim],
    deletePhases: [waitForRelease],
    afterStatusWrite: async (ctx, _scope, previous, written) => {
      const before = conditionOf(previous, "Reachable");
      const after = conditionOf(written, "Reachable");
      if (!after || (before?.status === after.status && before.reason === after.reason)) return;
      if (after.status === "True") await ctx.event(written, "Normal", "HostReachable", after.message ?? "");
      else await ctx.event(written, "Warning", after.reason ?? "HostUnreachable", after.message ?? "");
    },
  });
  return manager.add<HostObject>({ name: "host", component: HOST_COMPONENT, informer, reconcile, concurrency: 4 });
}
