// A pool on a scale set (spec.template names its infrastructure and bootstrap objects), as Cluster API's
// MachinePool: the pool adopts both objects (owner reference, so they do nothing before and go with it),
// copies the bootstrap data's Secret into its template, and takes readiness from the infrastructure; the
// scale set is the source of truth for instances. The pool makes one Machine per instance (owned by the
// pool, as Cluster API's MachinePool Machines) for draining, remediation and describe. It scales in by
// choosing machines, draining their nodes and removing exactly their instances with the desired
// capacity lowered (the Machine's deletion does it, marked with ANNOTATION_SCALE_IN); a failed machine
// is deleted without the mark and the cloud replaces its instance.
import type { BootstrapConfigObject, HostMachinePoolObject, MachineObject, MachinePoolObject, SimMachinePoolObject } from "../../api/kinds.ts";
import { createIfAbsent } from "../../api/presence.ts";
import { ANNOTATION_SCALE_IN, machineKind } from "../../api/slipway/machine.ts";
import { LABEL_POOL, machinePoolKind } from "../../api/slipway/machinepool.ts";
import { bootstrapConfigKind } from "../../api/slipway/bootstrapconfig.ts";
import { simMachinePoolKind } from "../../api/slipway/simmachinepool.ts";
import { hostMachinePoolKind } from "../../api/slipway/hostmachinepool.ts";
import type { KindDefinition } from "../../api/registry.ts";
import type { KubeObject } from "../../api/meta.ts";
import type { PoolInfo } from "../../providers/provider.ts";
import type { Phase, PhaseResult } from "../../runtime/reconciler.ts";
import { getCondition } from "../../runtime/conditions.ts";
import { controllerOf, controllerRef } from "../contract.ts";
import { isFailedForGood } from "../machine/status.ts";
import { recordReplacement } from "../rollout/remediation.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import { planRollout, rolloutStrategy } from "../rollout/plan.ts";
import { names } from "../../api/slipway/names.ts";
import { deleteMachines, poolWorkerMachine, remediate, scaleDownVictims, type MachinePoolScope } from "./phases.ts";
import { desiredReplicas, INFRASTRUCTURE_READY, isAvailable, isDeleting, MACHINES_UP_TO_DATE } from "./status.ts";
import { isCurrent, launchTemplateKey, machineTemplateHash, poolTemplate } from "./template.ts";

/** What a pool on a scale set reads of its template's objects (from the informer caches). */
export interface ScaleSetSurroundings {
  bootstrapConfig?: BootstrapConfigObject;
  /** The provider's pool infrastructure: a scale set (SimMachinePool) or a set of hosts (HostMachinePool). */
  infrastructure?: SimMachinePoolObject | HostMachinePoolObject;
  /** The scale set as the cloud answers now (undefined: not made yet, or not asked). */
  readScaleSet: (id: string) => Promise<PoolInfo | undefined>;
  /** Sets the scale set's desired capacity (a rolling surge; the cloud launches from the current template). */
  resizeScaleSet: (id: string, desired: number) => Promise<void>;
  bootstrapReady?: boolean;
  infrastructureProblem?: { reason: string; message: string };
  /** A roll that cannot go on as the pool's strategy and the scale set's limits stand (for MachinesUpToDate). */
  rollBlocked?: { reason: string; message: string };
}

/**
 * The Machine a pool makes for an instance of its scale set, labelled with the pool's current template
 * when the instance was launched from it (`current`), else with none, so a roll replaces it.
 */
export function instanceMachine(pool: MachinePoolObject, scaleSetId: string, instance: { instanceId: string; providerId: string; nodeName?: string }, current = true): MachineObject {
  return poolWorkerMachine(pool, `${pool.metadata.name!}-${instance.instanceId}`, current ? poolTemplate(pool.spec).hash : "", {
    machineType: pool.spec.machineType,
    image: pool.spec.image,
    ...(pool.spec.version && current ? { version: pool.spec.version } : {}),
    providerID: instance.providerId,
    scaleSetInstance: { scaleSetId, instanceId: instance.instanceId, ...(instance.nodeName ? { nodeName: instance.nodeName } : {}) },
  });
}

/**
 * Adopts the template's bootstrap and infrastructure objects (each gets the pool as its controlling
 * owner; until then they do nothing), copies the bootstrap data's Secret name into the template, and
 * says on the pool what holds it back: a missing or foreign object (naming the field), or what the
 * infrastructure and its cloud report.
 */
export const adoptTemplateObjects: Phase<MachinePoolScope> = async (ctx, scope) => {
  const pool = scope.object;
  const template = pool.spec.template;
  const around = scope.scaleSet;
  if (!template || !around) return;
  const refs: [string, { kind: string; name: string }, KindDefinition<KubeObject>, KubeObject | undefined][] = [
    ["spec.template.bootstrap.configRef", template.bootstrap.configRef, bootstrapConfigKind as unknown as KindDefinition<KubeObject>, around.bootstrapConfig],
    ["spec.template.infrastructureRef", template.infrastructureRef, (template.infrastructureRef.kind === hostMachinePoolKind.kind ? hostMachinePoolKind : simMachinePoolKind) as unknown as KindDefinition<KubeObject>, around.infrastructure],
  ];
  for (const [field, ref, kind, cached] of refs) {
    const object = cached ?? (await ctx.client.of(kind).tryGet(pool.metadata.namespace, ref.name));
    if (!object) {
      around.infrastructureProblem = { reason: "TemplateObjectMissing", message: `${field}: ${ref.kind} "${ref.name}" does not exist in namespace "${pool.metadata.namespace}"; the pool makes nothing until it does` };
      return { halt: true };
    }
    const owner = controllerOf(object);
    if (owner && owner.uid !== pool.metadata.uid) {
      around.infrastructureProblem = { reason: "TemplateObjectOwnedElsewhere", message: `${field}: ${ref.kind} "${ref.name}" is controlled by ${owner.kind} ${owner.name}, not by this pool` };
      return { halt: true };
    }
    if (!owner) {
      await ctx.client.of(kind).patch(pool.metadata.namespace, ref.name, "merge", {
        metadata: { resourceVersion: object.metadata.resourceVersion, ownerReferences: [...(object.metadata.ownerReferences ?? []), controllerRef(pool)] },
      });
      await ctx.event(pool, "Normal", `Adopted${ref.kind}`, `adopted ${ref.kind} ${ref.name} (${field}): it is now owned by the pool and deleted with it`);
    }
  }
  const config = around.bootstrapConfig;
  around.bootstrapReady = config?.status?.ready === true;
  const secretName = config?.status?.dataSecretName;
  if (around.bootstrapReady && secretName && secretName !== template.bootstrap.dataSecretName) {
    const written = await ctx.client.of<MachinePoolObject>(machinePoolKind).patch(pool.metadata.namespace, pool.metadata.name!, "merge", { spec: { template: { bootstrap: { dataSecretName: secretName } } } });
    pool.metadata = written.metadata;
    pool.spec = written.spec;
  }
  if (!around.bootstrapReady) {
    around.infrastructureProblem = { reason: "WaitingForBootstrapData", message: `BootstrapConfig ${template.bootstrap.configRef.name}: ${config?.status?.message ?? "its data is not ready yet"}` };
    return;
  }
  const infra = around.infrastructure?.status;
  if (infra?.reason || infra?.message) {
    const reason = infra.reason ?? "ScaleSetNotAtSize";
    const message = `${template.infrastructureRef.kind} ${template.infrastructureRef.name}: ${infra.message ?? reason}`;
    around.infrastructureProblem = { reason, message };
    // The cloud's word on quota or capacity reaches the pool's events once, not at every look.
    const before = getCondition(pool.status?.conditions, INFRASTRUCTURE_READY);
    if (before?.message !== message) await ctx.event(pool, "Warning", reason, message);
  } else if (!infra?.ready) {
    around.infrastructureProblem = { reason: "WaitingForScaleSet", message: `${template.infrastructureRef.kind} ${template.infrastructureRef.name} has no ${template.infrastructureRef.kind === hostMachinePoolKind.kind ? "hosts" : "scale set"} yet` };
  }
};

/**
 * Follows the scale set: a Machine for every instance, failed machines deleted (the cloud replaces
 * their instances), and a scale-in done by draining chosen machines and removing their instances.
 */
export const followScaleSet: Phase<MachinePoolScope> = async (ctx, scope) => {
  const pool = scope.object;
  const around = scope.scaleSet;
  const scaleSetId = around?.infrastructure?.status?.scaleSetId;
  if (!pool.spec.template || !around) return;
  if (!scaleSetId) return { halt: true };
  const set = await around.readScaleSet(scaleSetId);
  if (!set) return { halt: true, requeueAfterMs: scope.timings.pollMs };
  const poolName = pool.metadata.name!;
  const byInstance = new Map(scope.machines.map((m) => [m.spec.scaleSetInstance?.instanceId, m]));
  const cluster = scope.cluster;
  // A Machine for each instance that counts (a leaving one has no future).
  if (cluster && !cluster.metadata.deletionTimestamp) {
    const missing = set.instances.filter((i) => i.state !== "leaving" && !byInstance.has(i.instanceId));
    const machines = ctx.client.of(machineKind);
    const launchTemplateCurrent = around.infrastructure?.status?.poolTemplate === launchTemplateKey(pool.spec);
    const created = (await Promise.all(missing.map((i) => createIfAbsent(() => machines.create(instanceMachine(pool, set.id, i, launchTemplateCurrent && i.upToDate)))))).filter((m): m is MachineObject => m !== undefined && m !== null);
    scope.machines.push(...created);
    if (created.length > 0) await ctx.event(pool, "Normal", "InstancesFound", `scale set ${set.id} launched ${created.map((m) => m.spec.scaleSetInstance!.instanceId).join(", ")}: machines ${created.map((m) => m.metadata.name).join(", ")}`);
  }
  // A machine whose instance left the scale set (it died, or was terminated): the cloud launches another;
  // the machine goes (drained if its node is still there) rather than waiting for its next health check.
  // A machine that already failed because its instance died (the cloud's feed can say so first) is lost
  // the same way: the cloud replaces the instance, so there is nothing to remediate.
  const live = new Set(set.instances.filter((i) => i.state !== "leaving").map((i) => i.instanceId));
  const orphaned = scope.machines.filter((m) => !isDeleting(m, scope.deleted) && m.spec.scaleSetInstance && !live.has(m.spec.scaleSetInstance.instanceId));
  if (orphaned.length > 0) {
    await deleteMachines(ctx, scope, orphaned);
    const which = orphaned.map((m) => `${m.spec.scaleSetInstance!.instanceId} (machine ${m.metadata.name})`).join(", ");
    await ctx.event(pool, "Warning", "InstanceLost", `instance(s) ${which} left scale set ${set.id}; the cloud replaces them`);
  }
  // Remediation: a failed machine goes (drained) and its instance is replaced by the cloud.
  const remediation = await remediate(ctx, scope);
  const failed = scope.machines.filter((m) => isFailedForGood(m) && !isDeleting(m, scope.deleted));
  if (remediation.action === "replace" && failed.length > 0) {
    await deleteMachines(ctx, scope, failed);
    (pool.status ??= {}).remediation = recordReplacement(pool.status?.remediation, nowTimestamp(new Date(ctx.clock.now())));
    for (const m of failed) await ctx.event(pool, "Warning", "ReplacingMachine", `replacing machine ${m.metadata.name}: ${m.status?.failureReason}: ${m.status?.failureMessage ?? ""}`.trimEnd());
  }
  const template = poolTemplate(pool.spec);
  if (scope.machines.some((m) => !isDeleting(m, scope.deleted) && live.has(m.spec.scaleSetInstance?.instanceId ?? "") && !isCurrent(m, template))) {
    return rollScaleSet(ctx, scope, set, live);
  }
  // Scale-in: the desired capacity above the replicas wanted, less instances already on their way out.
  const counted = live;
  const leavingByScaleIn = scope.machines.filter((m) => isDeleting(m, scope.deleted) && m.metadata.annotations?.[ANNOTATION_SCALE_IN] === "true" && counted.has(m.spec.scaleSetInstance?.instanceId ?? ""));
  const excess = set.desired - desiredReplicas(pool) - leavingByScaleIn.length;
  if (excess > 0) {
    const candidates = scope.machines.filter((m) => !isDeleting(m, scope.deleted) && counted.has(m.spec.scaleSetInstance?.instanceId ?? ""));
    const victims = scaleDownVictims(poolName, candidates, excess);
    const machines = ctx.client.of(machineKind);
    for (const m of victims) {
      await machines.patch(m.metadata.namespace, m.metadata.name!, "merge", { metadata: { annotations: { [ANNOTATION_SCALE_IN]: "true" } } });
    }
    await deleteMachines(ctx, scope, victims);
    if (victims.length > 0) {
      const which = victims.map((m) => `${m.metadata.name} (node ${m.status?.nodeName ?? m.spec.scaleSetInstance?.instanceId})`).join(", ");
      await ctx.event(pool, "Normal", "ScalingDown", `scaling down to ${desiredReplicas(pool)}: draining ${which}; their instances leave scale set ${set.id}`);
    }
  }
  const settled = set.instances.every((i) => i.state === "ready") && set.replicas === set.desired && excess <= 0;
  return settled ? undefined : { requeueAfterMs: scope.timings.pollMs };
};

/** Names standing for instances the cloud still owes the scale set, in the rollout's plan (no machine can be named so). */
const OWED = "(owed) ";

/**
 * Rolls a pool's instances to its current template, as the rollout (rollout/plan.ts) plans it within
 * spec.strategy: the desired capacity is raised to surge instances from the updated launch template
 * (instances the cloud still owes count as new, not yet available), and outdated machines are drained
 * and their instances removed with the desired capacity lowered. Nothing is surged before the
 * SimMachinePool has brought the launch template to the pool's template.
 */
async function rollScaleSet(ctx: ReconcileContext, scope: MachinePoolScope, set: PoolInfo, live: ReadonlySet<string>): Promise<PhaseResult> {
  const pool = scope.object;
  const around = scope.scaleSet!;
  const template = poolTemplate(pool.spec);
  const again = { requeueAfterMs: scope.timings.pollMs };
  if (around.infrastructure?.status?.poolTemplate !== launchTemplateKey(pool.spec)) return again;
  const holding = scope.machines.filter((m) => live.has(m.spec.scaleSetInstance?.instanceId ?? "") || isDeleting(m, scope.deleted));
  const owed = Math.max(0, set.desired - live.size);
  const nowMs = ctx.clock.now();
  const plan = planRollout({
    desired: desiredReplicas(pool),
    templateHash: template.hash,
    machines: [
      ...holding.map((m) => ({
        name: m.metadata.name!,
        templateHash: machineTemplateHash(m, template),
        available: isAvailable(m, pool.spec.minReadySeconds ?? 0, nowMs),
        deleting: isDeleting(m, scope.deleted),
        // Failed machines are remediation's (followScaleSet), within its own limits.
        failed: false,
      })),
      ...Array.from({ length: owed }, (_, i) => ({ name: `${OWED}${i}`, templateHash: template.hash, available: false, deleting: false, failed: false })),
    ],
    strategy: pool.spec.strategy,
  });
  const described = `rolling to template ${template.hash} (machine type ${template.machineType}, image ${template.image}${template.version ? `, Kubernetes ${template.version}` : ""})`;
  const victims = holding.filter((m) => plan.delete.includes(m.metadata.name!) && !isDeleting(m, scope.deleted));
  if (victims.length > 0) {
    const machines = ctx.client.of(machineKind);
    for (const m of victims) await machines.patch(m.metadata.namespace, m.metadata.name!, "merge", { metadata: { annotations: { [ANNOTATION_SCALE_IN]: "true" } } });
    await deleteMachines(ctx, scope, victims);
    await ctx.event(pool, "Normal", "RollingMachines", `${described}: ${plan.updatedAvailable} of ${desiredReplicas(pool)} instances updated; draining ${victims.map((m) => m.metadata.name).join(", ")}, their instances leave scale set ${set.id}`);
  }
  const wanted = Math.min(set.maxSize, set.desired + plan.create);
  if (wanted > set.desired) {
    await around.resizeScaleSet(set.id, wanted);
    await ctx.event(pool, "Normal", "RollingMachines", `${described}: desired capacity of scale set ${set.id} raised to ${wanted} for ${wanted - set.desired} new instance(s)`);
  }
  // Nothing surged, nothing drained, nothing on its way: the roll is stuck at the scale set's maximum
  // size. It waits (as Cluster API's rollout never goes beyond maxUnavailable, and a cloud replacing
  // instances stays within the group's limits), saying what to change.
  const inFlight = owed > 0 || holding.some((m) => isDeleting(m, scope.deleted));
  if (plan.create > 0 && wanted <= set.desired && victims.length === 0 && !inFlight && rolloutStrategy(pool.spec.strategy).maxUnavailable === 0) {
    const blocked = { reason: "CannotSurge", message: cannotSurgeMessage(scope, set, plan.outdated) };
    around.rollBlocked = blocked;
    if (getCondition(pool.status?.conditions, MACHINES_UP_TO_DATE)?.message !== blocked.message) await ctx.event(pool, "Warning", blocked.reason, blocked.message);
  }
  return again;
}

/** Why a roll cannot surge, naming the fields that would let it (those of the Cluster for a pool it declares). */
function cannotSurgeMessage(scope: MachinePoolScope, set: PoolInfo, outdated: number): string {
  const pool = scope.object;
  const infrastructure = `spec.maxSize of SimMachinePool ${pool.spec.template!.infrastructureRef.name}`;
  const cluster = scope.cluster;
  const worker = pool.metadata.labels?.[LABEL_POOL];
  const declaredAt = cluster && worker !== undefined && names.machinePool(cluster.metadata.name!, worker) === pool.metadata.name ? (cluster.spec?.workers ?? []).findIndex((w) => w.name === worker) : -1;
  const unavailable = declaredAt >= 0 ? `spec.workers[${declaredAt}].strategy.maxUnavailable of Cluster ${cluster!.metadata.name}` : `spec.strategy.maxUnavailable of MachinePool ${pool.metadata.name}`;
  return (
    `cannot surge: scale set ${set.id} is at its maxSize ${set.maxSize} (${infrastructure}) and maxUnavailable is 0 (${unavailable}), so no instance may go before a new one is Ready; ` +
    `${outdated} outdated instance(s) wait until the maxSize is raised or maxUnavailable is at least 1`
  );
}
