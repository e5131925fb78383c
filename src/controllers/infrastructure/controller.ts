// The infrastructure controller: builds, in one connection, what one cluster needs there — network,
// subnet, security group, SSH key pair and, in the control plane's connection, the API load balancer —
// and deletes it all again (see phases.ts). It reconciles an Infrastructure when it changes and when
// its Connection does; an Infrastructure lives in the shard of its cluster. While its cluster is paused
// an Infrastructure is left as it is.
import type { ClusterObject, ConnectionObject, InfrastructureObject, MachineObject } from "../../api/kinds.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { infrastructureKind, FINALIZER_INFRASTRUCTURE } from "../../api/slipway/infrastructure.ts";
import { machineKind } from "../../api/slipway/machine.ts";
import type { Controller } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import type { BackoffOptions } from "../../runtime/queue.ts";
import { objectReconciler } from "../../runtime/reconciler.ts";
import { clusterKeyOf, olderClustersFirst, unlessPaused } from "../contract.ts";
import type { ProviderResolver } from "../providers.ts";
import { crossCloudView, machineAddressesChanged } from "./crosscloud.ts";
import { infrastructureDeletePhases, infrastructurePhases, type InfrastructureScope, type InfrastructureSettings } from "./phases.ts";
import { collapseRepeats, statusEvents, summarizeInfrastructure } from "./status.ts";

export const INFRASTRUCTURE_CONTROLLER = "infrastructure";
export const INFRASTRUCTURE_COMPONENT = "slipway.dev/infrastructure-controller";
/** Index of the infrastructures by the Connection they build in: "<namespace>/<connection>". */
export const CONNECTION_INDEX = "infrastructure-connection";
/** Index of the infrastructures by cluster: "<namespace>/<cluster>". */
export const INFRA_CLUSTER_INDEX = "infrastructure-controller.cluster";
/** Index of the machines by cluster, for the rules between clouds: "<namespace>/<cluster>". */
export const MACHINE_CLUSTER_INDEX = "infrastructure-controller.machine-cluster";

export interface InfrastructureControllerDeps {
  providers: ProviderResolver;
}

export interface InfrastructureControllerOptions extends Partial<InfrastructureSettings> {
  /** Infrastructures reconciled at once (default 4). */
  concurrency?: number;
  /** Backoff of a key whose reconcile failed (default: the work queue's). */
  backoff?: Partial<BackoffOptions>;
}

export const DEFAULT_INFRASTRUCTURE_SETTINGS: InfrastructureSettings = {
  deadlineMs: 10 * 60_000,
  loadBalancerDeadlineMs: 15 * 60_000,
  pollMs: 500,
  failureRetryMs: 30_000,
  dependencyRetryMs: 2_000,
};

export function registerInfrastructureController(
  manager: ControllerManager,
  deps: InfrastructureControllerDeps,
  options: InfrastructureControllerOptions = {},
): Controller<InfrastructureObject> {
  const infrastructures = manager.informer(infrastructureKind);
  const connections = manager.informer(connectionKind);
  const clusters = manager.informer(clusterKind);
  const machines = manager.informer(machineKind);
  const settings: InfrastructureSettings = {
    deadlineMs: options.deadlineMs ?? DEFAULT_INFRASTRUCTURE_SETTINGS.deadlineMs,
    loadBalancerDeadlineMs: options.loadBalancerDeadlineMs ?? DEFAULT_INFRASTRUCTURE_SETTINGS.loadBalancerDeadlineMs,
    pollMs: options.pollMs ?? DEFAULT_INFRASTRUCTURE_SETTINGS.pollMs,
    failureRetryMs: options.failureRetryMs ?? DEFAULT_INFRASTRUCTURE_SETTINGS.failureRetryMs,
    dependencyRetryMs: options.dependencyRetryMs ?? DEFAULT_INFRASTRUCTURE_SETTINGS.dependencyRetryMs,
  };
  infrastructures.cache.addIndex(CONNECTION_INDEX, (infra) => [keyFor(infra.metadata.namespace, infra.spec.connection)]);
  infrastructures.cache.addIndex(INFRA_CLUSTER_INDEX, (infra) => [keyFor(infra.metadata.namespace, infra.spec.clusterName)]);
  machines.cache.addIndex(MACHINE_CLUSTER_INDEX, (machine) => [keyFor(machine.metadata.namespace, machine.spec.clusterName)]);

  const reconcile = objectReconciler<InfrastructureObject, InfrastructureScope>({
    kind: infrastructureKind,
    cache: infrastructures.cache,
    finalizer: FINALIZER_INFRASTRUCTURE,
    observedGeneration: true,
    scope: (_ctx, base) => ({
      ...base,
      settings,
      providers: deps.providers,
      connection: connections.cache.get(keyFor(base.object.metadata.namespace, base.object.spec.connection)) as ConnectionObject | undefined,
      notices: [],
      crossCloud: () => {
        const clusterKey = keyFor(base.object.metadata.namespace, base.object.spec.clusterName);
        const connectionOf = (name: string) => connections.cache.get(keyFor(base.object.metadata.namespace, name)) as ConnectionObject | undefined;
        return crossCloudView(base.object, {
          connectionOf,
          infrastructures: infrastructures.cache.byIndex(INFRA_CLUSTER_INDEX, clusterKey),
          machines: machines.cache.byIndex(MACHINE_CLUSTER_INDEX, clusterKey),
          cluster: clusters.cache.get(clusterKey) as ClusterObject | undefined,
        });
      },
    }),
    phases: infrastructurePhases,
    deletePhases: infrastructureDeletePhases,
    summarize: summarizeInfrastructure,
    afterStatusWrite: async (ctx, scope, previous, written) => {
      const events = collapseRepeats([...scope.notices.splice(0), ...statusEvents(previous.status, written.status)]);
      for (const event of events) await ctx.event(written, event.type, event.reason, event.message);
    },
  });

  const clusterOfInfrastructure = clusterKeyOf(infrastructures.cache);
  const controller = manager.add<InfrastructureObject>({
    name: INFRASTRUCTURE_CONTROLLER,
    component: INFRASTRUCTURE_COMPONENT,
    informer: infrastructures,
    reconcile: unlessPaused(reconcile, infrastructures.cache, clusters.cache),
    concurrency: options.concurrency,
    ...(options.backoff ? { backoff: options.backoff } : {}),
    // An infrastructure lives in the shard of its cluster.
    rootKey: clusterOfInfrastructure,
    priority: olderClustersFirst(clusters.cache, clusterOfInfrastructure),
  });
  controller.watch(connections, (connection) =>
    infrastructures.cache.indexKeys(CONNECTION_INDEX, keyFor(connection.metadata.namespace, connection.metadata.name ?? "")),
  );
  // A machine's public address, coming or going, changes the rules of the other clouds' security groups.
  controller.watch<MachineObject>(
    machines,
    (machine) => infrastructures.cache.indexKeys(INFRA_CLUSTER_INDEX, keyFor(machine.metadata.namespace, machine.spec.clusterName)),
    machineAddressesChanged,
  );
  // Of its cluster, an infrastructure waits only for the end of a pause.
  controller.watch<ClusterObject>(
    clusters,
    (cluster) => infrastructures.cache.indexKeys(INFRA_CLUSTER_INDEX, keyFor(cluster.metadata.namespace, cluster.metadata.name!)),
    (previous, cluster) => (previous.spec.paused === true) !== (cluster.spec.paused === true),
  );
  return controller;
}
