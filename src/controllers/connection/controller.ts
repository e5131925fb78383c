// The connection controller: checks that a Connection can be used — its provider is installed and has a
// catalogue to ask, its credentials are accepted and its region exists — and says so in its status. It checks again now and
// then, so a fixed credential or a cloud that came back shows up without anyone touching the object.
import type { ConnectionObject } from "../../api/kinds.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { isProviderError } from "../../providers/provider.ts";
import { SshProvider } from "../../providers/ssh/index.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { Controller } from "../../runtime/controller.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler, type Phase, type Scope } from "../../runtime/reconciler.ts";
import { ConnectionUnusableError, type ProviderResolver } from "../providers.ts";

export const CONNECTION_COMPONENT = "slipway.dev/connection-controller";

export interface ConnectionControllerOptions {
  /** How often a connection is checked again (default 5 minutes; a Failed one every 30 s). */
  recheckMs?: number;
}

function checkConnection(providers: ProviderResolver, recheckMs: number): Phase<Scope<ConnectionObject>> {
  return async (ctx, scope) => {
    const connection = scope.object;
    const now = nowTimestamp(new Date(ctx.clock.now()));
    const status = { ...connection.status };
    connection.status = status;
    try {
      const opened = await providers.open(connection);
      if (opened instanceof SshProvider) {
        // A Connection of hosts has no region to check: it is ready, and says how many of its hosts are.
        const hosts = await opened.hostRecords();
        status.phase = "Ready";
        delete status.message;
        const reachable = hosts.filter((h) => h.reachable).length;
        setCondition(status as { conditions?: [] }, { type: "Ready", status: "True", reason: "Checked", message: `${hosts.length} hosts labelled with the connection, ${reachable} reachable` }, now);
        return { requeueAfterMs: Math.min(recheckMs, 30_000) };
      }
      const catalogue = await providers.capability(connection, "catalogue");
      status.regionZones = await catalogue.zones();
      status.phase = "Ready";
      delete status.message;
      setCondition(status as { conditions?: [] }, { type: "Ready", status: "True", reason: "Checked", message: `region ${connection.spec.region} has zones ${status.regionZones.join(", ")}` }, now);
      return { requeueAfterMs: recheckMs };
    } catch (e) {
      const permanent = e instanceof ConnectionUnusableError || (isProviderError(e) && !e.retryable);
      if (!permanent) throw e;
      const reason = e instanceof ConnectionUnusableError ? e.reason : isProviderError(e, "permission") ? "CredentialsRefused" : "RegionUnavailable";
      status.phase = "Failed";
      status.message = (e as Error).message;
      setCondition(status as { conditions?: [] }, { type: "Ready", status: "False", reason, message: status.message }, now);
      return { requeueAfterMs: Math.min(recheckMs, 30_000) };
    }
  };
}

export function registerConnectionController(manager: ControllerManager, deps: { providers: ProviderResolver }, options: ConnectionControllerOptions = {}): Controller<ConnectionObject> {
  const informer = manager.informer(connectionKind);
  const reconcile = objectReconciler<ConnectionObject>({
    kind: connectionKind,
    cache: informer.cache,
    observedGeneration: true,
    phases: [checkConnection(deps.providers, options.recheckMs ?? 300_000)],
    afterStatusWrite: async (ctx, _scope, previous, written) => {
      if (previous.status?.phase === written.status?.phase) return;
      if (written.status?.phase === "Ready") await ctx.event(written, "Normal", "ConnectionReady", `provider ${written.spec.provider} answers for region ${written.spec.region}`);
      if (written.status?.phase === "Failed") await ctx.event(written, "Warning", "ConnectionFailed", written.status.message ?? "");
    },
  });
  return manager.add<ConnectionObject>({ name: "connection", component: CONNECTION_COMPONENT, informer, reconcile, concurrency: 2 });
}
