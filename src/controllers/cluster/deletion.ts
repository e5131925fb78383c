// Deleting a cluster: its pools and control-plane machines first (each drains its node and terminates its
// instance), then, once every machine is gone, its infrastructures; its Secrets go with it (owner
// references).
import type { InfrastructureObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { deleteIfPresent } from "../../api/presence.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { machineKind } from "../../api/slipway/machine.ts";
import { machinePoolKind } from "../../api/slipway/machinepool.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { clusterStatus, type ClusterScope } from "./scope.ts";

/** Machines and pools first (they drain and terminate), then the infrastructure; secrets go with the cluster. */
export const deleteChildren: Phase<ClusterScope> = async (ctx, scope) => {
  const cluster = scope.object;
  clusterStatus(scope).phase = "Deleting";
  const pools = ctx.client.of<MachinePoolObject>(machinePoolKind);
  const machines = ctx.client.of<MachineObject>(machineKind);
  const infras = ctx.client.of<InfrastructureObject>(infrastructureKind);
  for (const p of scope.pools) if (!p.metadata.deletionTimestamp) await deleteIfPresent(() => pools.delete(p.metadata.namespace, p.metadata.name!));
  for (const m of scope.controlPlane) if (!m.metadata.deletionTimestamp) await deleteIfPresent(() => machines.delete(m.metadata.namespace, m.metadata.name!));
  // The children's deletion requeues the cluster (controller.ts): the poll while it waits for them is only
  // a safety net, slow and behind every other key. Polling each second, 10,000 clusters being deleted
  // (and their pools) left the machine controller, which does the work, a small share of the process.
  const waitForChildren = { halt: true, requeueAfterMs: scope.timing.recheckMs, idle: true };
  if (scope.pools.length > 0 || scope.machines.length > 0) {
    scope.waitingOn = `${scope.machines.length} machine(s) to be deleted`;
    return waitForChildren;
  }
  for (const i of scope.infrastructures) if (!i.metadata.deletionTimestamp) await deleteIfPresent(() => infras.delete(i.metadata.namespace, i.metadata.name!));
  if (scope.infrastructures.length > 0) {
    scope.waitingOn = `${scope.infrastructures.length} infrastructure(s) to be deleted`;
    return waitForChildren;
  }
  scope.deps.workloads.forget(cluster.metadata.namespace!, cluster.metadata.name!);
  await ctx.event(cluster, "Normal", "Deleted", "every machine and cloud resource of the cluster is gone");
};
