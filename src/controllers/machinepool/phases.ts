// The MachinePool controller's phases: replace machines that failed for good, remove machines beyond
// the wanted number, create the missing ones — all at once, in parallel. Machines are named
// `<pool>-<index>` with the lowest free indexes, so a create repeated after a crash (or from a stale
// cache) finds the machine already there instead of making a second one. Delete: delete every machine
// and wait until they are gone (each drains its node and terminates its instance first).
import type { ClusterObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { apiVersionOf } from "../../api/registry.ts";
import { isMachineReady, machineKind, LABEL_ROLE, ROLE_WORKER } from "../../api/slipway/machine.ts";
import { DEFAULT_IMAGE } from "../../api/slipway/nodes.ts";
import { createIfAbsent, deleteIfPresent } from "../../api/presence.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Phase, Scope } from "../../runtime/reconciler.ts";
import { controllerOf, controllerRef } from "../contract.ts";
import { LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { LABEL_POOL } from "../../api/slipway/machinepool.ts";
import { names } from "../../api/slipway/names.ts";
import { isFailedForGood } from "../machine/status.ts";
import { desiredReplicas, isDeleting } from "./status.ts";

export interface MachinePoolTimings {
  /** Delay between checks while machines are being deleted. */
  pollMs: number;
}

export interface MachinePoolScope extends Scope<MachinePoolObject> {
  timings: MachinePoolTimings;
  /** From the informer cache (undefined: not there). */
  cluster?: ClusterObject;
  /** The pool's machines (those it is the controller of), as the cache or the API last showed them. */
  machines: MachineObject[];
  /** Reads the pool's machines from the API itself (not the cache). */
  listMachines: () => Promise<MachineObject[]>;
  /** Names of machines this reconcile deleted. */
  deleted: Set<string>;
}

/** The index in a pool machine's name, or undefined when the name is not `<pool>-<index>`. */
export function machineIndex(pool: string, machine: string): number | undefined {
  const prefix = `${pool}-`;
  if (!machine.startsWith(prefix)) return undefined;
  const rest = machine.slice(prefix.length);
  return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
}

/** The `count` lowest indexes not taken. */
export function lowestFreeIndexes(taken: ReadonlySet<number>, count: number): number[] {
  const free: number[] = [];
  for (let i = 0; free.length < count; i++) if (!taken.has(i)) free.push(i);
  return free;
}

/** Which machines go when there are `excess` too many: failed first, then those not Running, then the highest index. */
export function scaleDownVictims(pool: string, machines: readonly MachineObject[], excess: number): MachineObject[] {
  const rank = (m: MachineObject) => (m.status?.phase === "Failed" ? 0 : isMachineReady(m) ? 2 : 1);
  const index = (m: MachineObject) => machineIndex(pool, m.metadata.name ?? "") ?? Number.MAX_SAFE_INTEGER;
  return [...machines].sort((a, b) => rank(a) - rank(b) || index(b) - index(a)).slice(0, Math.max(0, excess));
}

/** The Machine a pool makes at an index. */
export function poolMachine(pool: MachinePoolObject, index: number): MachineObject {
  const name = pool.metadata.name!;
  return {
    apiVersion: apiVersionOf(machineKind),
    kind: machineKind.kind,
    metadata: {
      name: names.poolMachine(name, index),
      namespace: pool.metadata.namespace,
      labels: { [LABEL_CLUSTER]: pool.spec.clusterName, [LABEL_POOL]: name, [LABEL_ROLE]: ROLE_WORKER },
      ownerReferences: [controllerRef(pool)],
    },
    spec: {
      clusterName: pool.spec.clusterName,
      role: ROLE_WORKER,
      connection: pool.spec.connection,
      machineType: pool.spec.machineType,
      image: pool.spec.image ?? DEFAULT_IMAGE,
      pool: name,
    },
  };
}

/** Machines of the pool that are not being deleted. */
function active(scope: MachinePoolScope): MachineObject[] {
  return scope.machines.filter((m) => !isDeleting(m, scope.deleted));
}

/** True when the machines as cached call for an action: then they are read again from the API first. */
function needsAction(scope: MachinePoolScope): boolean {
  const current = active(scope);
  return current.length !== desiredReplicas(scope.object) || current.some(isFailedForGood);
}

/** Deletes machines (already gone is fine), in parallel; remembers them as deleted. */
async function deleteMachines(ctx: ReconcileContext, scope: MachinePoolScope, victims: readonly MachineObject[]): Promise<void> {
  const machines = ctx.client.of(machineKind);
  const results = await Promise.allSettled(
    victims.map(async (m) => {
      await deleteIfPresent(() => machines.delete(m.metadata.namespace, m.metadata.name!, { preconditions: { uid: m.metadata.uid! } }));
      scope.deleted.add(m.metadata.name!);
    }),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}

/** Reads the machines from the API before acting, so no decision rests on a cache that lags behind. */
export const refreshMachines: Phase<MachinePoolScope> = async (_ctx, scope) => {
  if (needsAction(scope)) scope.machines = await scope.listMachines();
};

/** Machines that failed for good are deleted; the scale-up below creates their replacements. */
export const replaceFailedMachines: Phase<MachinePoolScope> = async (ctx, scope) => {
  const failed = active(scope).filter(isFailedForGood);
  if (failed.length === 0) return;
  await deleteMachines(ctx, scope, failed);
  for (const m of failed) {
    await ctx.event(scope.object, "Warning", "ReplacingMachine", `replacing machine ${m.metadata.name}: ${m.status?.failureReason}: ${m.status?.failureMessage ?? ""}`.trimEnd());
  }
};

/** Deletes the machines beyond the wanted number; each drains its node before it goes. */
export const scaleDown: Phase<MachinePoolScope> = async (ctx, scope) => {
  const current = active(scope);
  const excess = current.length - desiredReplicas(scope.object);
  if (excess <= 0) return;
  const victims = scaleDownVictims(scope.object.metadata.name!, current, excess);
  await deleteMachines(ctx, scope, victims);
  await ctx.event(scope.object, "Normal", "ScalingDown", `scaling down to ${desiredReplicas(scope.object)}: deleting ${victims.map((m) => m.metadata.name).join(", ")}`);
};

/** Creates the missing machines, all in the same reconcile, at the lowest free indexes. */
export const scaleUp: Phase<MachinePoolScope> = async (ctx, scope) => {
  const missing = desiredReplicas(scope.object) - active(scope).length;
  if (missing <= 0) return;
  const cluster = scope.cluster;
  // No new machines for a cluster that does not exist (yet) or is going away.
  if (!cluster || cluster.metadata.deletionTimestamp) return;
  const poolName = scope.object.metadata.name!;
  // Names of machines still being deleted stay taken until they are gone.
  const taken = new Set(scope.machines.map((m) => machineIndex(poolName, m.metadata.name ?? "")).filter((i): i is number => i !== undefined));
  const wanted = lowestFreeIndexes(taken, missing).map((i) => poolMachine(scope.object, i));
  const machines = ctx.client.of(machineKind);
  const results = await Promise.allSettled(
    wanted.map((machine) => createIfAbsent(() => machines.create(machine))),
  );
  const created = results.flatMap((r) => (r.status === "fulfilled" && r.value ? [r.value] : []));
  scope.machines.push(...created);
  if (created.length > 0) {
    await ctx.event(scope.object, "Normal", "ScalingUp", `scaling up to ${desiredReplicas(scope.object)}: created ${created.map((m) => m.metadata.name).join(", ")}`);
  }
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
};

export const machinePoolPhases: readonly Phase<MachinePoolScope>[] = [refreshMachines, replaceFailedMachines, scaleDown, scaleUp];

/** Deletes every machine of the pool and waits until they are gone. */
export const deleteAllMachines: Phase<MachinePoolScope> = async (ctx, scope) => {
  scope.machines = await scope.listMachines();
  if (scope.machines.length === 0) return;
  const remaining = active(scope);
  if (remaining.length > 0) {
    await deleteMachines(ctx, scope, remaining);
    await ctx.event(scope.object, "Normal", "DeletingMachines", `deleting ${remaining.length} machine(s)`);
  }
  // Each machine's deletion requeues the pool (controller.ts): the poll is only a safety net, slow and
  // behind every other key of the pool controller (10,000 pools polled every 30 s were ~330 reconciles
  // a second, on the CPU the machines' deletion needed).
  return { halt: true, requeueAfterMs: 120 * scope.timings.pollMs, idle: true };
};

export const machinePoolDeletePhases: readonly Phase<MachinePoolScope>[] = [deleteAllMachines];

/** Keeps only the machines whose managing owner is the pool. */
export function ownedBy(pool: MachinePoolObject, machines: readonly MachineObject[]): MachineObject[] {
  return machines.filter((m) => controllerOf(m)?.uid === pool.metadata.uid);
}
