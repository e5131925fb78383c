// The Machine controller: one VM and the Kubernetes node it becomes (see phases.ts for the steps and
// status.ts for what the status says). It reads the Cluster, Connection, Infrastructure and MachinePool
// a machine depends on from the informer caches; a change of an Infrastructure, or of whether its cluster
// is initialised, requeues the machines of its cluster, which wait on it. A machine lives in the shard of
// its cluster. While its cluster is paused a machine is left as it is.
import type { ClusterObject, InfrastructureObject, MachineObject } from "../../api/kinds.ts";
import { leaseKind, leaseReservationOf } from "../../api/slipway/lease.ts";
import { clusterKind, CONDITION_CONTROL_PLANE_INITIALIZED, CONDITION_NETWORK_PLUGIN_INSTALLED } from "../../api/slipway/cluster.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { machineKind, FINALIZER_MACHINE } from "../../api/slipway/machine.ts";
import { machinePoolKind } from "../../api/slipway/machinepool.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { Controller } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler } from "../../runtime/reconciler.ts";
import { getCondition } from "../../runtime/conditions.ts";
import { clusterKeyOf, olderClustersFirst, unlessPaused } from "../contract.ts";
import { names } from "../../api/slipway/names.ts";
import { machineDeletePhases, machinePhases, nodeNameOf, type MachineDependencies, type MachineScope, type MachineTimings } from "./phases.ts";
import { summarizeMachine } from "./status.ts";
import { InstanceWatch } from "./instance-watch.ts";
import { NodeWatch } from "./node-watch.ts";
import { readyForMachines } from "../infrastructure/status.ts";

export const MACHINE_CONTROLLER = "machine";
export const MACHINE_COMPONENT = "slipway.dev/machine-controller";
// Indexes on the shared caches, named after this controller so that others' indexes cannot clash.
/** Machines by cluster ("<namespace>/<cluster>"). */
export const MACHINE_CLUSTER_INDEX = "machine-controller.cluster";
/** Infrastructures holding a control-plane load balancer, by cluster ("<namespace>/<cluster>"). */
export const CONTROL_PLANE_INFRA_INDEX = "machine-controller.controlPlane";
/** Machines by cluster and node name ("<namespace>/<cluster>\0<node>"). */
export const MACHINE_NODE_INDEX = "machine-controller.node";

export interface MachineControllerOptions extends Partial<MachineTimings> {
  concurrency?: number;
}

export const MACHINE_DEFAULTS: MachineTimings = {
  pollMs: 1000,
  healthCheckMs: 15_000,
  followedHealthCheckMs: 5 * 60_000,
  watchedHealthCheckMs: 30 * 60_000,
  bootDeadlineMs: 10 * 60_000,
  joinDeadlineMs: 15 * 60_000,
  drainTimeoutMs: 5 * 60_000,
  retryFailedAfterMs: 30_000,
};

export function registerMachineController(
  manager: ControllerManager,
  deps: MachineDependencies,
  options: MachineControllerOptions = {},
): Controller<MachineObject> {
  const timings: MachineTimings = {
    pollMs: options.pollMs ?? MACHINE_DEFAULTS.pollMs,
    healthCheckMs: options.healthCheckMs ?? MACHINE_DEFAULTS.healthCheckMs,
    followedHealthCheckMs: options.followedHealthCheckMs ?? MACHINE_DEFAULTS.followedHealthCheckMs,
    watchedHealthCheckMs: options.watchedHealthCheckMs ?? MACHINE_DEFAULTS.watchedHealthCheckMs,
    bootDeadlineMs: options.bootDeadlineMs ?? MACHINE_DEFAULTS.bootDeadlineMs,
    joinDeadlineMs: options.joinDeadlineMs ?? MACHINE_DEFAULTS.joinDeadlineMs,
    drainTimeoutMs: options.drainTimeoutMs ?? MACHINE_DEFAULTS.drainTimeoutMs,
    retryFailedAfterMs: options.retryFailedAfterMs ?? MACHINE_DEFAULTS.retryFailedAfterMs,
  };
  const machines = manager.informer(machineKind);
  const clusters = manager.informer(clusterKind);
  const connections = manager.informer(connectionKind);
  const infrastructures = manager.informer(infrastructureKind);
  const pools = manager.informer(machinePoolKind);
  const leases = manager.informer(leaseKind);
  machines.cache.addIndex(MACHINE_CLUSTER_INDEX, (m) => [keyFor(m.metadata.namespace, m.spec.clusterName)]);
  const instanceWatch = new InstanceWatch({
    connections: connections.cache,
    machines: machines.cache,
    providers: deps.providers,
    enqueue: (key) => controller.enqueue(key),
    intervalMs: timings.pollMs,
  });
  machines.cache.addIndex(MACHINE_NODE_INDEX, (m) => [`${keyFor(m.metadata.namespace, m.spec.clusterName)}\u0000${nodeNameOf(m)}`]);
  // One watch of each workload cluster's nodes, its client kept open while it runs.
  const nodeWatch = new NodeWatch({
    machinesOf: (clusterKey, node) => machines.cache.indexKeys(MACHINE_NODE_INDEX, `${clusterKey}\u0000${node}`),
    enqueue: (key) => controller.enqueue(key),
    onStart: (namespace, cluster) => deps.workloads.hold(namespace, cluster),
    onStop: (namespace, cluster) => deps.workloads.release(namespace, cluster),
  });
  infrastructures.cache.addIndex(CONTROL_PLANE_INFRA_INDEX, (i) => (i.spec.controlPlane ? [keyFor(i.metadata.namespace, i.spec.clusterName)] : []));

  const reconcile = objectReconciler<MachineObject, MachineScope>({
    kind: machineKind,
    cache: machines.cache,
    finalizer: FINALIZER_MACHINE,
    phases: machinePhases,
    deletePhases: machineDeletePhases,
    observedGeneration: true,
    scope: (_ctx, base) => {
      const { namespace } = base.object.metadata;
      const { clusterName, connection, pool } = base.object.spec;
      const cluster = clusters.cache.get(keyFor(namespace, clusterName));
      const lease = cluster?.spec.leaseName ? leases.cache.get(keyFor(namespace, cluster.spec.leaseName)) : undefined;
      const reservation = leaseReservationOf(lease, connection, base.object.spec.machineType);
      return {
        ...base,
        deps,
        timings,
        instancesFollowed: instanceWatch.follows(namespace, connection),
        nodes: nodeWatch,
        fleetMachines: machines.cache.size,
        cluster,
        ...(reservation ? { reservationId: reservation.reservationId, reservationZone: reservation.zone } : {}),
        connection: connections.cache.get(keyFor(namespace, connection)),
        infrastructure: infrastructures.cache.get(keyFor(namespace, names.infrastructure(clusterName, connection))),
        controlPlaneInfrastructure: infrastructures.cache.byIndex(CONTROL_PLANE_INFRA_INDEX, keyFor(namespace, clusterName))[0],
        pool: pool ? pools.cache.get(keyFor(namespace, pool)) : undefined,
        clusterMachines: machines.cache.byIndex(MACHINE_CLUSTER_INDEX, keyFor(namespace, clusterName)),
      };
    },
    summarize: (ctx, scope, error) => summarizeMachine(scope.object, nowTimestamp(new Date(ctx.clock.now())), error),
  });

  const clusterOfMachine = clusterKeyOf(machines.cache);
  const olderCluster = olderClustersFirst(clusters.cache, clusterOfMachine);
  const controller = manager.add<MachineObject>({
    name: MACHINE_CONTROLLER,
    component: MACHINE_COMPONENT,
    informer: machines,
    reconcile: unlessPaused(reconcile, machines.cache, clusters.cache),
    concurrency: options.concurrency ?? 8,
    rootKey: clusterOfMachine,
    // An older cluster's machines first; of one cluster, the control plane, which every worker waits on.
    priority: (key) => olderCluster(key) + (machines.cache.get(key)?.spec.role === "control-plane" ? 0 : 0.5),
  });
  controller.addSource(instanceWatch);
  controller.addSource(nodeWatch);
  machines.on({
    added: (m) => instanceWatch.seen(m),
    updated: (_previous, m) => instanceWatch.seen(m),
    // The nodes of a cluster with no machines left are not watched any more.
    deleted: (m) => {
      const cluster = keyFor(m.metadata.namespace, m.spec.clusterName);
      if (machines.cache.indexKeys(MACHINE_CLUSTER_INDEX, cluster).length === 0) nodeWatch.forget(m.metadata.namespace!, m.spec.clusterName);
    },
  });
  // Nor are those of a cluster being deleted: its machines ask its API nothing more (no drain, no etcd
  // member to remove, no node to delete), and a watch kept to its end would reconnect, one TLS handshake
  // after another, to an API whose control plane is gone.
  clusters.on({
    updated: (_previous, cluster) => {
      if (cluster.metadata.deletionTimestamp) nodeWatch.forget(cluster.metadata.namespace!, cluster.metadata.name!);
    },
    deleted: (cluster) => nodeWatch.forget(cluster.metadata.namespace!, cluster.metadata.name!),
  });
  // Machines wait on their cluster's infrastructure (their own connection's, and the load balancer's).
  // Only what they read of it matters: whether machines may be made in it, its load balancer, its deletion.
  const awaited = (infra: InfrastructureObject) => JSON.stringify([readyForMachines(infra), infra.status?.ready, infra.status?.loadBalancer, infra.metadata.deletionTimestamp]);
  controller.watch<InfrastructureObject>(
    infrastructures,
    (infra) => machines.cache.indexKeys(MACHINE_CLUSTER_INDEX, keyFor(infra.metadata.namespace, infra.spec.clusterName)),
    (previous, infra) => awaited(previous) !== awaited(infra),
  );
  // Joining machines wait for the control plane to be initialised, nodes for the network plugin, and
  // every machine for its cluster's pause to end; no other change of a cluster matters.
  const awaitedOfCluster = (cluster: ClusterObject) =>
    [CONDITION_CONTROL_PLANE_INITIALIZED, CONDITION_NETWORK_PLUGIN_INSTALLED].map((type) => getCondition(cluster.status?.conditions, type)?.status).join("/") +
    `/${cluster.spec.paused === true}`;
  controller.watch<ClusterObject>(
    clusters,
    (cluster) => machines.cache.indexKeys(MACHINE_CLUSTER_INDEX, keyFor(cluster.metadata.namespace, cluster.metadata.name!)),
    (previous, cluster) => awaitedOfCluster(previous) !== awaitedOfCluster(cluster),
  );
  return controller;
}
