// What the objects a MachinePool's template names (its bootstrap configuration and its pool
// infrastructure) share, as Cluster API's bootstrap and infrastructure providers do: each does nothing
// until a pool has adopted it (controlling owner reference), finds that pool and its cluster through the
// owner, lives in the shard of that cluster, and is requeued when a pool naming it changes.
import type { ClusterObject, MachinePoolObject, SecretObject } from "../api/kinds.ts";
import { secretKind } from "../api/core.ts";
import { ANNOTATION_RENDERED_FOR } from "../api/slipway/bootstrapconfig.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { setCondition } from "../runtime/conditions.ts";
import { nowTimestamp } from "../apiserver/objects.ts";
import type { Condition } from "../api/meta.ts";
import type { Static } from "@sinclair/typebox";
import { launchTemplateKey } from "./machinepool/template.ts";
import { machinePoolKind } from "../api/slipway/machinepool.ts";
import type { KubeObject } from "../api/meta.ts";
import type { Informer } from "../runtime/informer.ts";
import { keyFor } from "../runtime/keys.ts";
import type { Phase, PhaseResult, Scope } from "../runtime/reconciler.ts";
import { controllerOf } from "./contract.ts";

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
