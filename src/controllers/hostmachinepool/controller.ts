// The HostMachinePool controller (the ssh provider's pool infrastructure, as SimMachinePool is the sim
// provider's): does nothing until a MachinePool owns the object; then holds one host per replica of the
// pool through its connection's poolInfrastructure — Hosts it selects (spec.hostSelector, spec.hosts),
// free and reachable, claimed all or nothing and bootstrapped with the bootstrap data the pool copied
// into spec.template.bootstrap.dataSecretName. More replicas than free selected hosts claims none and
// says so (InsufficientHosts, naming spec.replicas and the hosts available). The count only goes up
// here: the pool scales in by draining a chosen machine and removing exactly its host. Deleting the
// object cleans and releases every host it holds.
import type { HostObject } from "../../api/kinds.ts";
import { LABEL_CONNECTION } from "../../api/slipway/connection.ts";
import { hostKind } from "../../api/slipway/host.ts";
import { FINALIZER_HOST_MACHINE_POOL, hostMachinePoolKind, type HostMachinePoolObject } from "../../api/slipway/hostmachinepool.ts";
import { ProviderError, type PoolInfo } from "../../providers/provider.ts";
import { selects, TAG_HOST_POOL } from "../../providers/ssh/pools.ts";
import { HOST_MACHINE_TYPE } from "../../providers/ssh/provider.ts";
import { isTrue } from "../../runtime/conditions.ts";
import type { Controller, ReconcileContext } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { launchTemplateKey } from "../machinepool/template.ts";
import { awaitPoolOwner, connectionPools, holdWhilePoolDeleting, poolBootstrapData, poolCreateOptions, registerPoolInfrastructureController, summarizePoolInfrastructure, userDataHash, waitFor, type PoolInfrastructureScope } from "../pool-parts.ts";
import type { ProviderResolver } from "../providers.ts";

export const HOST_MACHINE_POOL_COMPONENT = "slipway.dev/hostmachinepool-controller";

export interface HostMachinePoolScope extends PoolInfrastructureScope<HostMachinePoolObject> {
  /** The Hosts of the connection, from the informer's cache. */
  hosts: HostObject[];
}

/** The set's id in the provider: the object's namespace and name. */
function hostSetName(object: HostMachinePoolObject): string {
  return `${object.metadata.namespace}-${object.metadata.name}`;
}

function selectionOf(object: HostMachinePoolObject) {
  const { hostSelector, hosts } = object.spec ?? {};
  return { ...(hostSelector?.matchLabels ? { labels: hostSelector.matchLabels } : {}), ...(hosts ? { names: hosts } : {}) };
}

/** Free, reachable Hosts the object selects (those another pool or cluster holds are not). */
export function freeHosts(scope: HostMachinePoolScope): string[] {
  const selection = selectionOf(scope.object);
  return scope.hosts
    .filter((h) => !h.status?.claim && isTrue(h.status?.conditions, "Reachable") && selects(selection, { name: h.metadata.name!, labels: h.metadata.labels ?? {} }))
    .map((h) => h.metadata.name!)
    .sort();
}

/** Nothing is done before a pool owns the object (the pool adopts it). */
export const awaitOwner: Phase<HostMachinePoolScope> = awaitPoolOwner("this set of hosts", "spec.template.infrastructureRef");

export const awaitConnection: Phase<HostMachinePoolScope> = (_ctx, scope) => {
  const pool = scope.pool!;
  if (!scope.connection) return waitFor(scope, "WaitingForConnection", `Connection ${pool.spec.connection} of pool ${pool.metadata.name} does not exist`);
};

/** Claims hosts up to the pool's replicas (all or nothing), and keeps them bootstrapped with the pool's data. */
export const ensureHostSet: Phase<HostMachinePoolScope> = async (ctx, scope) => {
  const pool = scope.pool!;
  const object = scope.object;
  const data = await poolBootstrapData(ctx, scope);
  if ("wait" in data) return data.wait;
  const userData = Buffer.from(data.secret.data!.value!, "base64").toString("utf8");
  const replicas = pool.spec.replicas ?? 1;
  const pools = await connectionPools(scope);
  const status = (object.status ??= {});
  let set = status.scaleSetId ? await pools.get(status.scaleSetId) : undefined;
  const free = freeHosts(scope);
  status.available = free.length;
  // After a restart the provider knows the set again only once it is made again: the hosts tagged with it count as held.
  const held = set?.replicas ?? scope.hosts.filter((h) => h.status?.claim?.tags[TAG_HOST_POOL] === hostSetName(object) && !h.status.claim.releasing).length;
  const short = () =>
    waitFor(
      scope,
      "InsufficientHosts",
      `spec.replicas of MachinePool ${pool.metadata.name} (${replicas}) exceeds the hosts available to HostMachinePool ${object.metadata.name}: ${held + free.length} (${held} held, ${free.length} free and selected in Connection ${pool.spec.connection}); no host is claimed until there are enough`,
      10 * scope.pollMs,
    );
  if (replicas > held + free.length) {
    if (set) report(scope, set);
    return short();
  }
  try {
    if (!set) {
      set = await pools.create(
        {
          name: hostSetName(object),
          machineType: HOST_MACHINE_TYPE,
          imageId: "host",
          userData,
          placement: { subnetIds: [], securityGroupIds: [] },
          hosts: selectionOf(object),
          minSize: 0,
          maxSize: replicas,
          desired: replicas,
        },
        poolCreateOptions(scope, "host-set", "worker"),
      );
      ctx.log.info({ step: "claimHosts", hostSet: set.id, desired: replicas }, "hosts claimed");
      await ctx.event(object, "Normal", "HostsClaimed", `claimed ${set.instances.map((i) => i.instanceId).join(", ")} for pool ${pool.metadata.name}`);
    } else {
      const templateChanged = status.userDataHash !== userDataHash(userData);
      const desired = Math.max(set.desired, replicas);
      if (desired !== set.desired || templateChanged) {
        set = await pools.update(set.id, { ...(desired !== set.desired ? { desired } : {}), ...(templateChanged ? { template: { machineType: HOST_MACHINE_TYPE, imageId: "host", userData } } : {}) });
        if (desired !== held) await ctx.event(object, "Normal", "HostsClaimed", `holds ${set.instances.filter((i) => i.state !== "leaving").map((i) => i.instanceId).join(", ")} for ${desired} replica(s)`);
      }
    }
  } catch (error) {
    // Another claim took a host meanwhile: nothing was claimed, the next look counts again.
    if (error instanceof ProviderError && error.kind === "capacity") return short();
    if (error instanceof ProviderError && !error.retryable) return waitFor(scope, "HostSetRefused", error.message, 10 * scope.pollMs);
    throw error;
  }
  status.scaleSetId = set.id;
  status.connection = pool.spec.connection;
  status.userDataHash = userDataHash(userData);
  status.poolTemplate = launchTemplateKey(pool.spec);
  report(scope, set);
  const settled = set.replicas === set.desired && set.readyReplicas === set.desired;
  return settled ? { requeueAfterMs: 5 * scope.pollMs } : { requeueAfterMs: scope.pollMs };
};

function report(scope: HostMachinePoolScope, set: PoolInfo): void {
  const status = (scope.object.status ??= {});
  const counted = set.instances.filter((i) => i.state !== "leaving");
  status.ready = true;
  status.replicas = set.replicas;
  status.desiredCapacity = set.desired;
  status.hostNames = counted.map((i) => i.instanceId).sort();
  status.providerIDList = counted.map((i) => i.providerId).sort();
  if (set.message) status.message = set.message;
  else delete status.message;
}

/** Releases every host the set holds (each cleaned first), and waits until none is held. */
export const releaseHosts: Phase<HostMachinePoolScope> = async (ctx, scope) => {
  const id = scope.object.status?.scaleSetId;
  if (!id || !scope.connection) return;
  const pools = await connectionPools(scope);
  const held = await pools.instances(id);
  if (held.length === 0) return;
  await pools.delete(id);
  if (held.some((i) => i.state !== "leaving")) await ctx.event(scope.object, "Normal", "ReleasingHosts", `cleaning and releasing ${held.map((i) => i.instanceId).join(", ")}`);
  return { halt: true, requeueAfterMs: scope.pollMs };
};

function summarize(ctx: ReconcileContext, scope: HostMachinePoolScope, error: unknown): void {
  summarizePoolInfrastructure(ctx, scope, error, "HostSetFailed", {
    reason: "HostsHeld",
    message: (status) => `${status.replicas ?? 0} of ${status.desiredCapacity ?? 0} host(s): ${(status.hostNames ?? []).join(", ") || "none"}`,
  });
}

export function registerHostMachinePoolController(manager: ControllerManager, deps: { providers: ProviderResolver }, options: { pollMs?: number; concurrency?: number } = {}): Controller<HostMachinePoolObject> {
  const hosts = manager.informer(hostKind);
  const { controller, objects } = registerPoolInfrastructureController<HostMachinePoolObject, HostMachinePoolScope>(manager, deps, options, {
    kind: hostMachinePoolKind,
    name: "hostmachinepool",
    component: HOST_MACHINE_POOL_COMPONENT,
    finalizer: FINALIZER_HOST_MACHINE_POOL,
    defaultConcurrency: 4,
    phases: [awaitOwner, holdWhilePoolDeleting, awaitConnection, ensureHostSet],
    deletePhases: [releaseHosts],
    scope: (base, connectionName) => ({
      ...base,
      hosts: hosts.cache.list().filter((h) => h.metadata.namespace === base.object.metadata.namespace && h.metadata.labels?.[LABEL_CONNECTION] === connectionName),
    }),
    summarize,
  });
  // A host freed or taken elsewhere changes what a set waiting for hosts can claim.
  const claimOf = (host: HostObject) => `${host.status?.claim?.token ?? ""}/${isTrue(host.status?.conditions, "Reachable")}`;
  controller.watch<HostObject>(
    hosts,
    (host) =>
      objects.cache
        .list()
        .filter((o) => o.metadata.namespace === host.metadata.namespace && o.status?.reason === "InsufficientHosts")
        .map((o) => keyFor(o.metadata.namespace, o.metadata.name!)),
    (previous, host) => claimOf(previous) !== claimOf(host),
  );
  return controller;
}
