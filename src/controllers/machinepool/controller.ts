// The MachinePool controller: keeps a set of identical worker machines at the wanted number, made from
// the pool's current template, replacing those that fail for good and rolling them when the template
// changes (see phases.ts, through rollout/), and reports counts and phase as Cluster API's MachinePool
// does (status.ts). A pool is reconciled when it changes, when one of its machines does, and when its
// Cluster does; it lives in the shard of its cluster. While its cluster is paused a pool is left as it is.
import type { BootstrapConfigObject, ClusterObject, HostMachinePoolObject, InfrastructureObject, MachineObject, MachinePoolObject, SimMachinePoolObject } from "../../api/kinds.ts";
import { bootstrapConfigKind } from "../../api/slipway/bootstrapconfig.ts";
import { simMachinePoolKind } from "../../api/slipway/simmachinepool.ts";
import { hostMachinePoolKind } from "../../api/slipway/hostmachinepool.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { clusterKind, LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { names } from "../../api/slipway/names.ts";
import { getCondition, isTrue } from "../../runtime/conditions.ts";
import { machineKind } from "../../api/slipway/machine.ts";
import { machinePoolKind, FINALIZER_MACHINE_POOL } from "../../api/slipway/machinepool.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { Controller } from "../../runtime/controller.ts";
import { keyFor, objectKey } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler } from "../../runtime/reconciler.ts";
import { clusterKeyOf, controllerOf, leavingWithParent, olderClustersFirst, unlessPaused } from "../contract.ts";
import { poolsOfCluster } from "../pool-parts.ts";
import type { ProviderResolver } from "../providers.ts";
import type { WorkloadClients } from "../workload.ts";
import { adoptByCluster, awaitAvailability, controlPlaneInitializedAt, machinePoolDeletePhases, ownedBy, recordProviderIDs, refreshMachines, rollOut, type MachinePoolScope, type MachinePoolTimings } from "./phases.ts";
import { adoptTemplateObjects, followScaleSet } from "./scaleset.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { summarizePool } from "./status.ts";
import { REASON_TOO_MANY_UNHEALTHY, REMEDIATION_ALLOWED } from "../rollout/remediation.ts";

export const MACHINE_POOL_CONTROLLER = "machinepool";
export const MACHINE_POOL_COMPONENT = "slipway.dev/machinepool-controller";
/** Pools by cluster ("<namespace>/<cluster>"), named after this controller so others' indexes cannot clash. */

/**
 * The pool controller itself talks to neither clouds nor workload clusters (its machines do); it takes
 * the same dependencies as the other controllers so they are all registered alike.
 */
export interface MachinePoolDependencies {
  providers: ProviderResolver;
  workloads: WorkloadClients;
}

export interface MachinePoolControllerOptions extends Partial<MachinePoolTimings> {
  concurrency?: number;
}

/** A pool on a scale set follows it (scaleset.ts); any other makes its machines one by one (rollOut). */
export const machinePoolPhases: readonly Phase<MachinePoolScope>[] = [adoptByCluster, adoptTemplateObjects, refreshMachines, recordProviderIDs, awaitAvailability, followScaleSet, rollOut];

export const MACHINE_POOL_DEFAULTS: MachinePoolTimings = { pollMs: 1000 };

export function registerMachinePoolController(
  manager: ControllerManager,
  deps: MachinePoolDependencies,
  options: MachinePoolControllerOptions = {},
): Controller<MachinePoolObject> {
  const timings: MachinePoolTimings = { pollMs: options.pollMs ?? MACHINE_POOL_DEFAULTS.pollMs };
  const pools = manager.informer(machinePoolKind);
  const machines = manager.informer(machineKind);
  const clusters = manager.informer(clusterKind);
  const infrastructures = manager.informer(infrastructureKind);
  const bootstrapConfigs = manager.informer(bootstrapConfigKind);
  const simPools = manager.informer(simMachinePoolKind);
  const hostPools = manager.informer(hostMachinePoolKind);
  // The pool infrastructure a template names, by its kind (each provider's).
  const poolInfrastructures = { [simMachinePoolKind.kind]: simPools, [hostMachinePoolKind.kind]: hostPools };
  const connections = manager.informer(connectionKind);
  const poolsOf = poolsOfCluster(pools);

  const reconcile = objectReconciler<MachinePoolObject, MachinePoolScope>({
    kind: machinePoolKind,
    cache: pools.cache,
    finalizer: FINALIZER_MACHINE_POOL,
    phases: machinePoolPhases,
    deletePhases: machinePoolDeletePhases,
    observedGeneration: true,
    scope: (ctx, base) => {
      const pool = base.object;
      const { namespace } = pool.metadata;
      const scaleSets = async () => {
        const connection = connections.cache.get(keyFor(namespace, pool.spec.connection));
        return connection ? deps.providers.capability(connection, "poolInfrastructure") : undefined;
      };
      return {
        ...base,
        timings,
        cluster: clusters.cache.get(keyFor(namespace, pool.spec.clusterName)),
        machines: ownedBy(pool, machines.cache.ownedBy(pool.metadata.uid!)),
        listMachines: async () => {
          // A pool names its machines `<pool>-<index>`: reading that key range costs the pool's own
          // machines, not every machine of the namespace.
          const list = await ctx.client.of(machineKind).list(namespace, { namePrefix: `${pool.metadata.name}-`, labelSelector: `${LABEL_CLUSTER}=${pool.spec.clusterName}` });
          return ownedBy(pool, list.items);
        },
        deleted: new Set<string>(),
        infrastructureReady: isTrue(infrastructures.cache.get(keyFor(namespace, names.infrastructure(pool.spec.clusterName, pool.spec.connection)))?.status?.conditions, "Ready"),
        ...(pool.spec.template
          ? {
              scaleSet: {
                bootstrapConfig: bootstrapConfigs.cache.get(keyFor(namespace, pool.spec.template.bootstrap.configRef.name)),
                infrastructure: poolInfrastructures[pool.spec.template.infrastructureRef.kind]?.cache.get(keyFor(namespace, pool.spec.template.infrastructureRef.name)),
                readScaleSet: async (id: string) => (await scaleSets())?.get(id),
                resizeScaleSet: async (id: string, desired: number) => {
                  const capability = await scaleSets();
                  if (!capability) throw new Error(`connection "${pool.spec.connection}" (spec.connection) does not exist`);
                  await capability.update(id, { desired });
                },
              },
            }
          : {}),
      };
    },
    summarize: (ctx, scope, error) => {
      const onScaleSet = scope.scaleSet;
      summarizePool(scope.object, { machines: scope.machines, deleted: scope.deleted }, nowTimestamp(new Date(ctx.clock.now())), error, {
        ...(scope.waitingForCluster ? { waitingForCluster: scope.waitingForCluster } : {}),
        infrastructureReady: onScaleSet ? onScaleSet.infrastructure?.status?.ready === true : scope.infrastructureReady,
        ...(onScaleSet ? { bootstrapReady: onScaleSet.bootstrapReady === true } : {}),
        ...(onScaleSet?.infrastructureProblem ? { infrastructureProblem: onScaleSet.infrastructureProblem } : {}),
        ...(onScaleSet?.rollBlocked ? { rollBlocked: onScaleSet.rollBlocked } : {}),
      });
      // As Cluster API's: the replicas are the infrastructure's (the scale set's instances that count).
      const replicas = onScaleSet?.infrastructure?.status?.replicas;
      if (replicas !== undefined && scope.object.status) scope.object.status.replicas = replicas;
    },
  });

  const clusterOfPool = clusterKeyOf(pools.cache);
  const controller = manager.add<MachinePoolObject>({
    name: MACHINE_POOL_CONTROLLER,
    component: MACHINE_POOL_COMPONENT,
    informer: pools,
    reconcile: unlessPaused(reconcile, pools.cache, clusters.cache),
    concurrency: options.concurrency,
    // A pool of Slipway's machines reads only watched objects (its machines, cluster, infrastructure); one on
    // a scale set also reads the scale set from the cloud, which the safety net looks at again.
    resyncs: (pool) => pool.spec.template !== undefined,
    rootKey: clusterOfPool,
    priority: olderClustersFirst(clusters.cache, clusterOfPool),
  });
  const ownerOf = (machine: MachineObject) => {
    const owner = controllerOf(machine);
    return owner?.kind === machinePoolKind.kind ? [keyFor(machine.metadata.namespace, owner.name)] : [];
  };
  // A pool being deleted waits for its machines to go (deleteAllMachines).
  controller.watch<MachineObject>(machines, ownerOf, (previous) => !leavingWithParent(previous, pools.cache.get(ownerOf(previous)[0] ?? "")));
  // A pool needs of its cluster only that it exists, is not being deleted (no new machines then) and is
  // not paused; the cluster's many status writes are not the pool's business. A pool whose remediation is
  // paused also needs the control plane's initialisation: machines that failed before it are then replaced.
  const awaitedOfCluster = (cluster: ClusterObject) => `${cluster.metadata.deletionTimestamp === undefined}/${cluster.spec.paused === true}`;
  controller.watch<ClusterObject>(
    clusters,
    (cluster) => poolsOf(cluster.metadata.namespace, cluster.metadata.name!).map(objectKey),
    (previous, cluster) => awaitedOfCluster(previous) !== awaitedOfCluster(cluster),
  );
  const remediationPaused = (pool: MachinePoolObject) => getCondition(pool.status?.conditions, REMEDIATION_ALLOWED)?.reason === REASON_TOO_MANY_UNHEALTHY;
  controller.watch<ClusterObject>(
    clusters,
    (cluster) => poolsOf(cluster.metadata.namespace, cluster.metadata.name!).filter(remediationPaused).map(objectKey),
    (previous, cluster) => controlPlaneInitializedAt(previous) !== controlPlaneInitializedAt(cluster),
  );
  // Of the cluster's infrastructure in a pool's connection, only whether it is Ready (status.infrastructureReady).
  const readyOf = (infra: InfrastructureObject) => isTrue(infra.status?.conditions, "Ready");
  controller.watch<InfrastructureObject>(
    infrastructures,
    (infra) =>
      poolsOf(infra.metadata.namespace, infra.spec.clusterName)
        .filter((p) => p.spec.connection === infra.spec.connection)
        .map(objectKey),
    (previous, infra) => readyOf(previous) !== readyOf(infra),
  );
  // A pool on a scale set follows its template's objects (Cluster API adds these watches on first sight).
  const ownerPool = (object: { metadata: { namespace?: string } } & Parameters<typeof controllerOf>[0]) => {
    const owner = controllerOf(object);
    return owner?.kind === machinePoolKind.kind ? [keyFor(object.metadata.namespace, owner.name)] : [];
  };
  const referencing = (kind: string) => (object: BootstrapConfigObject | SimMachinePoolObject | HostMachinePoolObject) => {
    const owned = ownerPool(object);
    if (owned.length > 0) return owned;
    // Not adopted yet: the pools naming it.
    return pools.cache
      .list()
      .filter((p) => p.metadata.namespace === object.metadata.namespace && [p.spec.template?.bootstrap.configRef, p.spec.template?.infrastructureRef].some((r) => r?.kind === kind && r.name === object.metadata.name))
      .map((p) => keyFor(p.metadata.namespace, p.metadata.name!));
  };
  controller.watch<BootstrapConfigObject>(bootstrapConfigs, referencing(bootstrapConfigKind.kind));
  controller.watch<SimMachinePoolObject>(simPools, referencing(simMachinePoolKind.kind));
  controller.watch<HostMachinePoolObject>(hostPools, referencing(hostMachinePoolKind.kind));
  return controller;
}
