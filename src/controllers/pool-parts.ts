// What the objects a MachinePool's template names (its bootstrap configuration and its pool
// infrastructure) share, as Cluster API's bootstrap and infrastructure providers do: each does nothing
// until a pool has adopted it (controlling owner reference), finds that pool and its cluster through the
// owner, lives in the shard of that cluster, and is requeued when a pool naming it changes. The pool
// infrastructure kinds also share how their controller is registered and reaches its connection's provider.
import type { ClusterObject, ConnectionObject, MachinePoolObject, SecretObject } from "../api/kinds.ts";
import { secretKind } from "../api/core.ts";
import { ANNOTATION_RENDERED_FOR } from "../api/slipway/bootstrapconfig.ts";
import type { Controller, ReconcileContext } from "../runtime/controller.ts";
import { setCondition } from "../runtime/conditions.ts";
import { nowTimestamp } from "../apiserver/objects.ts";
import type { Condition } from "../api/meta.ts";
import { createHash } from "node:crypto";
import type { Static } from "@sinclair/typebox";
import { launchTemplateKey } from "./machinepool/template.ts";
import { machinePoolKind } from "../api/slipway/machinepool.ts";
import type { KubeObject } from "../api/meta.ts";
import type { Informer } from "../runtime/informer.ts";
import { keyFor } from "../runtime/keys.ts";
import { objectReconciler, type Phase, type PhaseResult, type Scope } from "../runtime/reconciler.ts";
import { cloudTags, controllerOf, idempotencyToken } from "./contract.ts";
import { clusterKind } from "../api/slipway/cluster.ts";
import { connectionKind } from "../api/slipway/connection.ts";
import type { KindDefinition } from "../api/registry.ts";
import { ProviderError, type PoolInfrastructure } from "../providers/provider.ts";
import type { ControllerManager } from "../runtime/manager.ts";
import type { ProviderResolver } from "./providers.ts";

/** The scope of a pool's template object: the pool owning it, that pool's cluster, and why it waits. */
export interface PoolPartScope<T extends KubeObject> extends Scope<T> {
  pool?: MachinePoolObject;
  cluster?: ClusterObject;
  /** Why the object is not ready (reason, message), for the status. */
  waiting?: { reason: string; message: string };
}

/** Records why the object waits and halts its phases (looked at again after `requeueAfterMs`, if given). */
export function waitFor(scope: { waiting?: { reason: string; message: string } }, reason: string, message: string, requeueAfterMs?: number): PhaseResult {
  scope.waiting = { reason, message };
  return { halt: true, ...(requeueAfterMs ? { requeueAfterMs } : {}) };
}

/**
 * Nothing is done before a pool owns the object (the pool adopts it through the template field named)
 * and the pool's cluster exists. `what` names the object in the message, e.g. "this configuration".
 */
export function awaitPoolOwner<T extends KubeObject>(what: string, field: string): Phase<PoolPartScope<T>> {
  return (_ctx, scope) => {
    const owner = controllerOf(scope.object);
    if (owner?.kind !== machinePoolKind.kind) return waitFor(scope, "WaitingForOwner", `no MachinePool owns ${what} yet: a pool adopts it through ${field}`);
    const pool = scope.pool;
    if (!pool || pool.metadata.uid !== owner.uid) return waitFor(scope, "WaitingForOwner", `MachinePool ${owner.name} does not exist`);
    if (!scope.cluster) return waitFor(scope, "WaitingForCluster", `Cluster ${pool.spec.clusterName} of pool ${owner.name} does not exist`);
  };
}

/**
 * A pool being deleted launches and claims nothing more: its machines remove their instances one by one
 * (each lowering the desired capacity), and raising the capacity again to the pool's replicas would have
 * the cloud launch — or the hosts be claimed — again behind them. The set goes with this object.
 */
export const holdWhilePoolDeleting: Phase<PoolPartScope<KubeObject>> = (_ctx, scope) => {
  const pool = scope.pool;
  if (pool?.metadata.deletionTimestamp) return waitFor(scope, "PoolDeleting", `MachinePool ${pool.metadata.name} is being deleted: its machines remove their instances and nothing more is launched`);
};

/** The pool controlling an object, from the pools' cache. */
export function owningPool(pools: Informer<MachinePoolObject>, object: KubeObject): MachinePoolObject | undefined {
  const owner = controllerOf(object);
  return owner?.kind === machinePoolKind.kind ? pools.cache.get(keyFor(object.metadata.namespace, owner.name)) : undefined;
}

/** The shard key of an object a pool owns: its pool's cluster (the object's own key before it is adopted). */
export function poolPartRootKey<T extends KubeObject>(objects: Informer<T>, pools: Informer<MachinePoolObject>): (key: string) => string {
  return (key) => {
    const object = objects.cache.get(key);
    const pool = object && owningPool(pools, object);
    return pool ? keyFor(pool.metadata.namespace, pool.spec.clusterName) : key;
  };
}

/** Index of the pools' cache by cluster ("<namespace>/<clusterName>"), shared by every controller that looks pools up by cluster. */
export const POOL_CLUSTER_INDEX = "machinepool.cluster";
const poolCluster = (pool: MachinePoolObject) => [keyFor(pool.metadata.namespace, pool.spec.clusterName)];

/**
 * The pools of a cluster, through POOL_CLUSTER_INDEX (added on first use). Walking every pool for each
 * cluster or infrastructure event instead made a fleet quadratic: at 10,000 clusters, a resync of the
 * clusters walked 10,000 pools for each of them.
 */
export function poolsOfCluster(pools: Informer<MachinePoolObject>): (namespace: string | undefined, clusterName: string) => MachinePoolObject[] {
  pools.cache.addIndex(POOL_CLUSTER_INDEX, poolCluster);
  return (namespace, clusterName) => pools.cache.byIndex(POOL_CLUSTER_INDEX, keyFor(namespace, clusterName));
}

/** The keys of the objects of `kind` a pool's template names through `ref`, for a watch on pools. */
export function namedByPool(kind: string, ref: (template: NonNullable<MachinePoolObject["spec"]["template"]>) => { kind: string; name: string }): (pool: MachinePoolObject) => string[] {
  return (pool) => {
    const named = pool.spec.template && ref(pool.spec.template);
    return named?.kind === kind ? [keyFor(pool.metadata.namespace, named.name)] : [];
  };
}

/**
 * The Secret holding the bootstrap data the pool copied into spec.template.bootstrap.dataSecretName, once
 * it is rendered for the pool's current template (a Kubernetes version or label change reaches the
 * instances with the data rendered for it); else why not, recorded on the scope (the phases halt).
 */
export async function poolBootstrapData<T extends KubeObject>(ctx: ReconcileContext, scope: PoolPartScope<T> & { pollMs: number }): Promise<{ secret: SecretObject } | { wait: PhaseResult }> {
  const pool = scope.pool!;
  const secretName = pool.spec.template?.bootstrap.dataSecretName;
  if (!secretName) return { wait: waitFor(scope, "WaitingForBootstrapData", `MachinePool ${pool.metadata.name} has no bootstrap data yet (spec.template.bootstrap.dataSecretName)`) };
  const secret = await ctx.client.of<SecretObject>(secretKind).tryGet(scope.object.metadata.namespace, secretName);
  if (!secret?.data?.value) return { wait: waitFor(scope, "WaitingForBootstrapData", `Secret ${secretName} holds no bootstrap data`, scope.pollMs) };
  if (secret.metadata.annotations?.[ANNOTATION_RENDERED_FOR] !== launchTemplateKey(pool.spec)) {
    return { wait: waitFor(scope, "WaitingForBootstrapData", `Secret ${secretName} is not rendered for the current template of MachinePool ${pool.metadata.name} yet`, scope.pollMs) };
  }
  return { secret };
}

/** SHA-256 (hex) of a set's user data, as status.userDataHash records it (the data itself is secret). */
export function userDataHash(userData: string): string {
  return createHash("sha256").update(userData).digest("hex");
}

/**
 * How an object of a pool makes something in the provider: once (the idempotency token of the object
 * and `purpose`), tagged as a `role` of the pool's cluster owned by the object.
 */
export function poolCreateOptions(scope: PoolPartScope<KubeObject>, purpose: string, role: string): { token: string; tags: Record<string, string> } {
  const cluster = scope.cluster!;
  return { token: idempotencyToken(scope.object.metadata.uid!, purpose), tags: cloudTags({ namespace: cluster.metadata.namespace!, name: cluster.metadata.name!, uid: cluster.metadata.uid! }, scope.object, role) };
}

/** What a pool infrastructure object reports (SimMachinePool, HostMachinePool). */
interface PoolInfrastructureStatus {
  ready?: boolean;
  scaleSetId?: string;
  reason?: string;
  message?: string;
  conditions?: Static<typeof Condition>[];
}

/**
 * The Ready condition of a pool infrastructure object: False with why it waits (not ready until its
 * set exists), False with `failedReason` when making the set failed, else True with what `held` says.
 */
export function summarizePoolInfrastructure<T extends KubeObject & { status?: PoolInfrastructureStatus }>(
  ctx: ReconcileContext,
  scope: PoolPartScope<T>,
  error: unknown,
  failedReason: string,
  held: { reason: string; message: (status: NonNullable<T["status"]>) => string },
): void {
  const status = (scope.object.status ??= {} as NonNullable<T["status"]>) as NonNullable<T["status"]>;
  const now = nowTimestamp(new Date(ctx.clock.now()));
  delete status.reason;
  if (scope.waiting) {
    status.reason = scope.waiting.reason;
    status.message = scope.waiting.message;
    if (!status.scaleSetId) status.ready = false;
    setCondition(status, { type: "Ready", status: "False", reason: scope.waiting.reason, message: scope.waiting.message }, now);
  } else if (error && !status.scaleSetId) {
    setCondition(status, { type: "Ready", status: "False", reason: failedReason, message: (error as Error).message }, now);
  } else if (status.ready) {
    setCondition(status, { type: "Ready", status: "True", reason: held.reason, message: held.message(status) }, now);
  }
}

/** The scope of a pool infrastructure object: its part of a pool, and the connection whose provider holds its set. */
export interface PoolInfrastructureScope<T extends KubeObject> extends PoolPartScope<T> {
  providers: ProviderResolver;
  pollMs: number;
  connection?: ConnectionObject;
  /** The connection's poolInfrastructure, resolved once a reconcile. */
  capability?: PoolInfrastructure;
}

/** The pool infrastructure of the object's connection (an invalid error naming it where it does not exist). */
export async function connectionPools<T extends KubeObject & { status?: { connection?: string } }>(scope: PoolInfrastructureScope<T>): Promise<PoolInfrastructure> {
  if (!scope.connection) throw new ProviderError("invalid", `connection "${scope.pool?.spec.connection ?? scope.object.status?.connection}" does not exist`);
  return (scope.capability ??= await scope.providers.capability(scope.connection, "poolInfrastructure"));
}

/**
 * Registers the controller of a pool infrastructure kind (SimMachinePool, HostMachinePool): the object's
 * scope holds its pool, that pool's cluster and the connection (the pool's, or once the pool is gone,
 * the one recorded in status.connection), plus what `scope` adds; it lives in its cluster's shard and is
 * requeued when a pool naming it in spec.template.infrastructureRef changes. Returns the controller, for
 * further watches, and the keys of the objects a pool names.
 */
export function registerPoolInfrastructureController<T extends KubeObject & { status?: { connection?: string } }, S extends PoolInfrastructureScope<T>>(
  manager: ControllerManager,
  deps: { providers: ProviderResolver },
  options: { pollMs?: number; concurrency?: number },
  spec: {
    kind: KindDefinition<T>;
    name: string;
    component: string;
    finalizer: string;
    defaultConcurrency: number;
    phases: readonly Phase<S>[];
    deletePhases: readonly Phase<S>[];
    /** What the kind's phases read besides the common scope (`connectionName`: the connection's name, even where it does not exist). */
    scope: (base: PoolInfrastructureScope<T>, connectionName: string) => S;
    summarize: (ctx: ReconcileContext, scope: S, error: unknown) => void;
  },
): { controller: Controller<T>; objects: Informer<T>; pools: Informer<MachinePoolObject>; namedBy: (pool: MachinePoolObject) => string[] } {
  const objects = manager.informer(spec.kind);
  const pools = manager.informer(machinePoolKind);
  const clusters = manager.informer(clusterKind);
  const connections = manager.informer(connectionKind);
  const pollMs = options.pollMs ?? 1000;
  const reconcile = objectReconciler<T, S>({
    kind: spec.kind,
    cache: objects.cache,
    finalizer: spec.finalizer,
    observedGeneration: true,
    phases: spec.phases,
    deletePhases: spec.deletePhases,
    scope: (_ctx, base) => {
      const pool = owningPool(pools, base.object);
      const namespace = base.object.metadata.namespace;
      // Once the pool is gone (its objects are collected after it), the connection recorded with the set.
      const connectionName = pool?.spec.connection ?? base.object.status?.connection ?? "";
      return spec.scope(
        {
          ...base,
          providers: deps.providers,
          pollMs,
          pool,
          cluster: pool && clusters.cache.get(keyFor(namespace, pool.spec.clusterName)),
          connection: connections.cache.get(keyFor(namespace, connectionName)),
        },
        connectionName,
      );
    },
    summarize: spec.summarize,
  });
  const controller = manager.add<T>({
    name: spec.name,
    component: spec.component,
    informer: objects,
    reconcile,
    concurrency: options.concurrency ?? spec.defaultConcurrency,
    rootKey: poolPartRootKey(objects, pools),
  });
  const namedBy = namedByPool(spec.kind.kind, (template) => template.infrastructureRef);
  controller.watch<MachinePoolObject>(pools, namedBy);
  return { controller, objects, pools, namedBy };
}
