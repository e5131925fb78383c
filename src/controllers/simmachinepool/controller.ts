// The SimMachinePool controller (the sim provider's pool infrastructure, as Cluster API's AWSMachinePool
// controller is AWS's): does nothing until a MachinePool owns the object; then makes the pool's scale
// set through its connection's poolInfrastructure — launch template from the pool's machine type and
// image and the bootstrap data the pool copied into spec.template.bootstrap.dataSecretName, one subnet
// per zone of the cluster's infrastructure — found again by its owner tag or made with an idempotency
// token, so a retry never makes a second one. It keeps the launch template and the size limits, raises
// the desired capacity to the pool's replicas (the pool lowers it itself: it drains a chosen machine and
// removes exactly its instance), protects every instance from the cloud's own scale-in, and reports the
// scale set as the cloud sees it: replicas, instances, provider IDs, ready, and the cloud's message on
// quota or capacity. Deleting the object deletes the scale set and its instances.
import type { InfrastructureObject } from "../../api/kinds.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { names } from "../../api/slipway/names.ts";
import { DEFAULT_IMAGE } from "../../api/slipway/nodes.ts";
import { FINALIZER_SIM_MACHINE_POOL, simMachinePoolKind, type SimMachinePoolObject } from "../../api/slipway/simmachinepool.ts";
import { ProviderError, type PoolInfo } from "../../providers/provider.ts";
import type { Controller, ReconcileContext } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { TAG_OWNER_UID } from "../contract.ts";
import { awaitPoolOwner, connectionPools, holdWhilePoolDeleting, poolBootstrapData, poolCreateOptions, poolsOfCluster, registerPoolInfrastructureController, summarizePoolInfrastructure, userDataHash, waitFor, type PoolInfrastructureScope } from "../pool-parts.ts";
import { readyForMachines } from "../infrastructure/status.ts";
import { launchTemplateKey } from "../machinepool/template.ts";
import type { ProviderResolver } from "../providers.ts";
import { deleteBootstrapSecrets, launchUserData } from "./bootstrap-secret.ts";

export const SIM_MACHINE_POOL_COMPONENT = "slipway.dev/simmachinepool-controller";

export interface SimMachinePoolScope extends PoolInfrastructureScope<SimMachinePoolObject> {
  infrastructure?: InfrastructureObject;
}

/** The scale set's name in the cloud: the object's namespace and name. */
function scaleSetName(object: SimMachinePoolObject): string {
  return `${object.metadata.namespace}-${object.metadata.name}`;
}

/** The scale set: the one recorded, else one a create whose answer was lost made (by the owner tag). */
async function findScaleSet(scope: SimMachinePoolScope): Promise<PoolInfo | undefined> {
  const pools = await connectionPools(scope);
  const recorded = scope.object.status?.scaleSetId;
  if (recorded) return pools.get(recorded);
  return (await pools.findTagged({ [TAG_OWNER_UID]: scope.object.metadata.uid! }))[0];
}

/** Nothing is done before a pool owns the object (the pool adopts it). */
export const awaitOwner: Phase<SimMachinePoolScope> = awaitPoolOwner("this scale set", "spec.template.infrastructureRef");

/**
 * A pool being deleted: its machines each remove their instance, lowering the desired capacity to
 * nothing, which the scale set allows only once its minSize is 0 (as a cloud's does: "lower minSize first").
 * The desired capacity itself is left to them (holdWhilePoolDeleting, next).
 */
export const lowerFloorForDeletion: Phase<SimMachinePoolScope> = async (ctx, scope) => {
  if (!scope.pool?.metadata.deletionTimestamp || !scope.connection) return;
  const set = await findScaleSet(scope);
  if (!set || set.state === "deleting" || set.minSize === 0) return;
  await (await connectionPools(scope)).update(set.id, { minSize: 0 });
  ctx.log.info({ step: "lowerFloorForDeletion", scaleSet: set.id }, "scale set minSize lowered to 0 for its pool's deletion");
  await ctx.event(scope.object, "Normal", "ScaleSetResized", `minSize of scale set ${set.id} set to 0: pool ${scope.pool.metadata.name} is being deleted`);
};

/** The scale set is placed in the cluster's infrastructure of the pool's connection, within its size limits. */
export const awaitPlacement: Phase<SimMachinePoolScope> = (_ctx, scope) => {
  const pool = scope.pool!;
  if (!scope.connection) return waitFor(scope, "WaitingForConnection", `Connection ${pool.spec.connection} of pool ${pool.metadata.name} does not exist`);
  if (!readyForMachines(scope.infrastructure)) return waitFor(scope, "WaitingForInfrastructure", `infrastructure ${names.infrastructure(pool.spec.clusterName, pool.spec.connection)} is not ready yet`);
  const replicas = pool.spec.replicas ?? 1;
  const { minSize = 0, maxSize = 100 } = scope.object.spec ?? {};
  if (replicas > maxSize || replicas < minSize) {
    return waitFor(scope, "ReplicasOutOfRange", `spec.replicas of MachinePool ${pool.metadata.name} (${replicas}) is outside spec.minSize..spec.maxSize of SimMachinePool ${scope.object.metadata.name} (${minSize}..${maxSize}); the scale set is not resized`);
  }
};

/** Makes the scale set, or brings its launch template, limits and desired capacity to what is wanted. */
export const ensureScaleSet: Phase<SimMachinePoolScope> = async (ctx, scope) => {
  const pool = scope.pool!;
  const object = scope.object;
  const data = await poolBootstrapData(ctx, scope);
  if ("wait" in data) return data.wait;
  const { secret } = data;
  const infra = scope.infrastructure!.status!;
  const image = pool.spec.image ?? DEFAULT_IMAGE;
  const imageId = infra.images?.[image];
  if (!imageId) return waitFor(scope, "ImageNotResolved", `image ${image} (spec.image of MachinePool ${pool.metadata.name}) is not resolved in infrastructure ${scope.infrastructure!.metadata.name}`, scope.pollMs);
  const zones = infra.zones ?? [];
  const subnetIds = zones.map((z) => infra.subnets?.[z] ?? (z === zones[0] ? infra.subnetId : undefined)).filter((id): id is string => id !== undefined);
  if (subnetIds.length === 0 || !infra.securityGroupId) return waitFor(scope, "WaitingForInfrastructure", `infrastructure ${scope.infrastructure!.metadata.name} reports no subnet or security group`, scope.pollMs);
  // Where the cloud keeps secrets, the join goes there and the user data only names it.
  const userData = await launchUserData(ctx, scope, secret);
  const template = { machineType: pool.spec.machineType, imageId, userData };
  const { minSize = 0, maxSize = 100 } = object.spec ?? {};
  const replicas = pool.spec.replicas ?? 1;
  const pools = await connectionPools(scope);
  let set = await findScaleSet(scope);
  const status = (object.status ??= {});
  try {
    if (!set) {
      set = await pools.create(
        {
          name: scaleSetName(object),
          ...template,
          placement: { subnetIds, securityGroupIds: [infra.securityGroupId], ...(infra.keyPairId ? { keyPairId: infra.keyPairId } : {}), ...(infra.publicAddresses ? { publicIp: true } : {}) },
          minSize,
          maxSize,
          desired: replicas,
        },
        poolCreateOptions(scope, "scale-set", "worker"),
      );
      ctx.log.info({ step: "createScaleSet", scaleSet: set.id, desired: replicas }, "scale set created");
      await ctx.event(object, "Normal", "ScaleSetCreated", `created scale set ${set.id} with ${replicas} instance(s) over zones ${set.zones.join(", ")}`);
    } else {
      // The desired capacity only goes up here: the pool scales in by removing drained instances.
      const desired = Math.max(set.desired, replicas) > maxSize ? maxSize : Math.max(set.desired, replicas);
      const templateChanged = status.userDataHash !== userDataHash(userData) || status.machineType !== template.machineType || status.imageId !== imageId;
      const change = {
        ...(set.minSize !== minSize ? { minSize } : {}),
        ...(set.maxSize !== maxSize ? { maxSize } : {}),
        ...(set.desired !== desired ? { desired } : {}),
        ...(templateChanged ? { template } : {}),
      };
      if (Object.keys(change).length > 0) {
        set = await pools.update(set.id, change);
        if (change.desired !== undefined) await ctx.event(object, "Normal", "ScaleSetResized", `desired capacity of scale set ${set.id} set to ${desired}`);
        if (templateChanged && status.userDataHash) await ctx.event(object, "Normal", "LaunchTemplateUpdated", `new launch template for scale set ${set.id}: machine type ${template.machineType}, image ${image}`);
      }
    }
  } catch (error) {
    if (error instanceof ProviderError && !error.retryable) return waitFor(scope, error.kind === "quota" ? "QuotaExceeded" : "ScaleSetRefused", error.message, 10 * scope.pollMs);
    throw error;
  }
  status.scaleSetId = set.id;
  status.connection = pool.spec.connection;
  status.userDataHash = userDataHash(userData);
  status.machineType = template.machineType;
  status.imageId = imageId;
  status.poolTemplate = launchTemplateKey(pool.spec);
  // Every instance is the pool's to remove: the cloud's own scale-in takes none of them.
  const unprotected = set.instances.filter((i) => !i.protected && i.state !== "leaving").map((i) => i.instanceId);
  if (unprotected.length > 0) await pools.protect(set.id, unprotected, true);
  const previousMessage = status.message;
  report(scope, set);
  if (set.message && set.message !== previousMessage) await ctx.event(object, "Warning", "ScaleSetNotAtSize", `scale set ${set.id}: ${set.message}`);
  const settled = set.replicas === set.desired && set.readyReplicas === set.desired && set.instances.every((i) => i.state !== "pending");
  // A settled scale set is looked at now and then for instances the cloud lost and replaced.
  return settled ? { requeueAfterMs: 5 * scope.pollMs } : { requeueAfterMs: scope.pollMs };
};

function report(scope: SimMachinePoolScope, set: PoolInfo): void {
  const status = (scope.object.status ??= {});
  status.ready = true;
  status.replicas = set.replicas;
  status.desiredCapacity = set.desired;
  status.instances = set.instances.map((i) => ({ instanceId: i.instanceId, providerID: i.providerId, zone: i.zone, state: i.state, healthy: i.healthy, protected: i.protected, upToDate: i.upToDate }));
  status.providerIDList = set.instances.filter((i) => i.state !== "leaving").map((i) => i.providerId).sort();
  if (set.message) status.message = set.message;
  else delete status.message;
}

/** Deletes the scale set (its instances go with it), waits until it is gone, then deletes its bootstrap secrets. */
export const deleteScaleSet: Phase<SimMachinePoolScope> = async (ctx, scope) => {
  if (!scope.connection) return;
  const set = await findScaleSet(scope);
  if (!set) return deleteBootstrapSecrets(ctx, scope);
  if (set.state !== "deleting") {
    await (await connectionPools(scope)).delete(set.id);
    await ctx.event(scope.object, "Normal", "DeletingScaleSet", `deleting scale set ${set.id} and its ${set.instances.length} instance(s)`);
  }
  return { halt: true, requeueAfterMs: scope.pollMs };
};

function summarize(ctx: ReconcileContext, scope: SimMachinePoolScope, error: unknown): void {
  summarizePoolInfrastructure(ctx, scope, error, "ScaleSetFailed", {
    reason: "ScaleSetReady",
    message: (status) => `scale set ${status.scaleSetId}: ${status.replicas ?? 0} of ${status.desiredCapacity ?? 0} instance(s)${status.message ? `; ${status.message}` : ""}`,
  });
}

export function registerSimMachinePoolController(manager: ControllerManager, deps: { providers: ProviderResolver }, options: { pollMs?: number; concurrency?: number } = {}): Controller<SimMachinePoolObject> {
  const infrastructures = manager.informer(infrastructureKind);
  const { controller, pools, namedBy: infraOf } = registerPoolInfrastructureController<SimMachinePoolObject, SimMachinePoolScope>(manager, deps, options, {
    kind: simMachinePoolKind,
    name: "simmachinepool",
    component: SIM_MACHINE_POOL_COMPONENT,
    finalizer: FINALIZER_SIM_MACHINE_POOL,
    defaultConcurrency: 8,
    phases: [awaitOwner, lowerFloorForDeletion, holdWhilePoolDeleting, awaitPlacement, ensureScaleSet],
    deletePhases: [deleteScaleSet],
    scope: (base) => ({
      ...base,
      infrastructure: base.pool && infrastructures.cache.get(keyFor(base.object.metadata.namespace, names.infrastructure(base.pool.spec.clusterName, base.pool.spec.connection))),
    }),
    summarize,
  });
  const poolsOf = poolsOfCluster(pools);
  controller.watch<InfrastructureObject>(
    infrastructures,
    (infra) =>
      poolsOf(infra.metadata.namespace, infra.spec.clusterName)
        .filter((p) => p.spec.connection === infra.spec.connection)
        .flatMap(infraOf),
    (previous, infra) => readyForMachines(previous) !== readyForMachines(infra),
  );
  return controller;
}
