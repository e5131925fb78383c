// The resource synchroniser: delivers each ResourceSync's manifests to the clusters it targets (by name
// and by label, built or registered) and keeps them there. Each cluster is handled on its own: applied
// when the set changes, looked at again every resync interval to correct drift, and — after a failure,
// or while unreachable — retried on a backoff of its own, so one cluster that does not answer never holds
// the others back. A cluster that leaves the targets has what was applied there pruned; deleting the
// ResourceSync prunes every cluster before it goes (its finalizer). A cluster that is itself gone
// (deleted) is dropped without pruning: there is nothing left to prune.
import { createHash } from "node:crypto";
import type { ClusterObject } from "../../api/kinds.ts";
import type { KubeObject } from "../../api/meta.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import {
  FINALIZER_RESOURCESYNC,
  LABEL_RESOURCESYNC,
  LABEL_RESOURCESYNC_NAMESPACE,
  resourceSyncKind,
  type ClusterSyncStatus,
  type ResourceSyncObject,
  type ResourceSyncStatus,
} from "../../api/slipway/resourcesync.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { ObjectCache } from "../../runtime/cache.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { Controller, ReconcileContext } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler, type Phase, type PhaseResult, type Scope } from "../../runtime/reconciler.ts";
import { clusterTargets, type ClusterTarget } from "../targets.ts";
import { workloadProblem, type WorkloadClients } from "../workload.ts";
import { SourceError, resolveManifests } from "./sources.ts";
import { pruneCluster, syncCluster } from "./sync.ts";

export const RESOURCESYNC_COMPONENT = "slipway.dev/resourcesync-controller";

export interface ResourceSyncTiming {
  /** How often an applied cluster is looked at again for drift (default 30 s). */
  resyncMs: number;
  /** The first retry of a failed cluster (default 2 s); it doubles per failure in a row… */
  backoffMs: number;
  /** … up to this (default 5 minutes). */
  maxBackoffMs: number;
}

export interface ResourceSyncDeps {
  workloads: WorkloadClients;
}

interface SyncScope extends Scope<ResourceSyncObject> {
  clusters: ObjectCache<ClusterObject>;
}

/** A label value for a name: itself when it fits in 63 characters, else its start and a digest of the whole. */
function labelValue(name: string): string {
  return name.length <= 63 ? name : `${name.slice(0, 50)}-${createHash("sha256").update(name).digest("hex").slice(0, 12)}`;
}

function labelsOf(sync: ResourceSyncObject): Record<string, string> {
  return { [LABEL_RESOURCESYNC]: labelValue(sync.metadata.name!), [LABEL_RESOURCESYNC_NAMESPACE]: sync.metadata.namespace! };
}

function backoff(timing: ResourceSyncTiming, failures: number): number {
  return Math.min(timing.maxBackoffMs, timing.backoffMs * 2 ** Math.max(0, failures - 1));
}

/** When a cluster is next due, in ms from now (0: now). */
function dueIn(entry: ClusterSyncStatus | undefined, generation: number, now: number, timing: ResourceSyncTiming): number {
  if (!entry || entry.state === "Pending") return 0;
  if (entry.state === "Failed") return entry.nextAttemptTime ? Math.max(0, Date.parse(entry.nextAttemptTime) - now) : 0;
  if (entry.appliedGeneration !== generation) return 0;
  return entry.lastAttemptTime ? Math.max(0, Date.parse(entry.lastAttemptTime) + timing.resyncMs - now) : 0;
}

class Synchroniser {
  constructor(
    private readonly deps: ResourceSyncDeps,
    private readonly timing: ResourceSyncTiming,
  ) {}

  /** One cluster, due now: apply the set, and say what happened. */
  private async syncOne(ctx: ReconcileContext, sync: ResourceSyncObject, target: ClusterTarget, manifests: KubeObject[], previous: ClusterSyncStatus | undefined): Promise<ClusterSyncStatus> {
    const now = ctx.clock.now();
    const at = nowTimestamp(new Date(now));
    const generation = sync.metadata.generation ?? 0;
    const entry: ClusterSyncStatus = { ...previous, name: target.name, state: previous?.state ?? "Pending", lastAttemptTime: at };
    const failed = (message: string): ClusterSyncStatus => {
      const failures = (previous?.failures ?? 0) + 1;
      return { ...entry, state: "Failed", message, failures, nextAttemptTime: nowTimestamp(new Date(now + backoff(this.timing, failures))) };
    };
    if (!target.cluster) return failed(`${target.field ?? "spec.clusters"}: cluster ${target.name} does not exist in namespace ${sync.metadata.namespace}`);
    let client;
    try {
      client = await this.deps.workloads.forClusterObject(target.cluster);
    } catch (error) {
      return failed(`the cluster's kubeconfig cannot be used: ${(error as Error).message}`);
    }
    if (!client) {
      const { state: _s, message: _m, ...rest } = entry;
      return { ...rest, state: "Pending", message: "waiting for the cluster's API (no kubeconfig yet)" };
    }
    try {
      const result = await syncCluster({ client, manifests, labels: labelsOf(sync), previous, generation });
      for (const object of result.drifted) {
        const where = object.namespace ? `${object.namespace}/${object.name}` : object.name;
        await ctx.event(sync, "Warning", "DriftCorrected", `cluster ${target.name}: ${object.kind} ${where} ${object.message}`);
      }
      if (result.failed.length > 0) {
        const first = result.failed[0]!;
        const bad = failed(`${result.failed.length} of ${result.resources.length} object(s) failed; first: ${first.kind} ${first.name}: ${first.message}`);
        return { ...bad, resources: result.resources };
      }
      const drifts = (previous?.drifts ?? 0) + result.drifted.length;
      const { message: _m, nextAttemptTime: _n, failures: _f, ...rest } = entry;
      if (previous?.appliedGeneration !== generation || previous.state !== "Applied") {
        await ctx.event(sync, "Normal", "Applied", `cluster ${target.name}: ${result.resources.length} object(s) applied`);
      }
      return {
        ...rest,
        state: result.drifted.length > 0 ? "Drifted" : "Applied",
        appliedGeneration: generation,
        lastAppliedTime: at,
        resources: result.resources,
        ...(drifts > 0 ? { drifts } : {}),
      };
    } catch (error) {
      const problem = workloadProblem(error);
      if (!problem) throw error;
      if (previous?.state !== "Failed") await ctx.event(sync, "Warning", "SyncFailed", `cluster ${target.name}: ${problem}; retrying`);
      return failed(problem);
    }
  }

  /** Prunes one cluster that left the targets; undefined once done (or the cluster is gone), else its entry with the problem. */
  private async pruneOne(ctx: ReconcileContext, sync: ResourceSyncObject, entry: ClusterSyncStatus, clusters: ObjectCache<ClusterObject>): Promise<ClusterSyncStatus | undefined> {
    const cluster = clusters.get(keyFor(sync.metadata.namespace, entry.name));
    if (!cluster || cluster.metadata.deletionTimestamp) return undefined;
    const now = ctx.clock.now();
    if (entry.state === "Failed" && entry.nextAttemptTime && Date.parse(entry.nextAttemptTime) > now) return entry;
    const failed = (message: string): ClusterSyncStatus => {
      const failures = (entry.failures ?? 0) + 1;
      return { ...entry, state: "Failed", message, failures, lastAttemptTime: nowTimestamp(new Date(now)), nextAttemptTime: nowTimestamp(new Date(now + backoff(this.timing, failures))) };
    };
    try {
      const client = await this.deps.workloads.forClusterObject(cluster);
      if (!client) return undefined;
      const leftovers = await pruneCluster(client, labelsOf(sync), entry);
      if (leftovers.length > 0) return { ...failed(`pruning: ${leftovers[0]!.kind} ${leftovers[0]!.name} ${leftovers[0]!.message}`), resources: leftovers };
      await ctx.event(sync, "Normal", "Pruned", `cluster ${entry.name}: every object applied there was deleted`);
      return undefined;
    } catch (error) {
      const problem = workloadProblem(error);
      if (!problem) throw error;
      return failed(`pruning: ${problem}`);
    }
  }

  readonly apply: Phase<SyncScope> = async (ctx, scope) => {
    const sync = scope.object;
    const status: ResourceSyncStatus = (sync.status ??= {});
    const now = ctx.clock.now();
    const at = nowTimestamp(new Date(now));
    const generation = sync.metadata.generation ?? 0;
    const targets = clusterTargets(sync.metadata.namespace, sync.spec, scope.clusters.list());
    status.targets = targets.length;
    if (sync.spec.suspend) {
      status.phase = "Suspended";
      status.message = "spec.suspend is true: nothing is applied, corrected or pruned";
      setCondition(status, { type: "Ready", status: "False", reason: "Suspended", message: status.message }, at);
      return {};
    }
    let manifests: KubeObject[];
    try {
      manifests = await resolveManifests(ctx.client, sync);
    } catch (error) {
      if (!(error instanceof SourceError)) throw error;
      status.phase = "Degraded";
      status.message = error.message;
      setCondition(status, { type: "Ready", status: "False", reason: "InvalidManifests", message: error.message }, at);
      return { requeueAfterMs: this.timing.resyncMs };
    }
    delete status.message;
    const previous = new Map((status.clusters ?? []).map((c) => [c.name, c]));
    const targeted = new Set(targets.map((t) => t.name));
    const entries = await Promise.all(
      targets.map((target) => {
        const entry = previous.get(target.name);
        return dueIn(entry, generation, now, this.timing) === 0 ? this.syncOne(ctx, sync, target, manifests, entry) : entry!;
      }),
    );
    const leaving = await Promise.all([...previous.values()].filter((e) => !targeted.has(e.name)).map((e) => this.pruneOne(ctx, sync, e, scope.clusters)));
    status.clusters = [...entries, ...leaving.filter((e): e is ClusterSyncStatus => e !== undefined)];
    const synced = entries.filter((e) => (e.state === "Applied" || e.state === "Drifted") && e.appliedGeneration === generation).length;
    status.synced = synced;
    const failing = status.clusters.filter((e) => e.state === "Failed");
    if (targets.length === 0) {
      status.phase = "Pending";
      setCondition(status, { type: "Ready", status: "False", reason: "NoClusters", message: "no cluster is targeted" }, at);
    } else if (synced === targets.length && failing.length === 0) {
      status.phase = "Synced";
      setCondition(status, { type: "Ready", status: "True", reason: "Synced", message: `${manifests.length} object(s) applied to ${synced} cluster(s)` }, at);
    } else {
      status.phase = failing.length > 0 ? "Degraded" : "Pending";
      const message = failing.length > 0 ? `${failing.map((e) => `${e.name}: ${e.message}`).join("; ")}` : `${synced} of ${targets.length} cluster(s) synced`;
      setCondition(status, { type: "Ready", status: "False", reason: failing.length > 0 ? "SyncFailed" : "Syncing", message }, at);
    }
    // The next cluster due (one due now was just tried: it waits for a watch event or the first backoff).
    const next = Math.min(...status.clusters.map((e) => dueIn(e, generation, ctx.clock.now(), this.timing) || this.timing.backoffMs), this.timing.resyncMs);
    return { requeueAfterMs: Math.max(100, next) } satisfies PhaseResult;
  };

  readonly prune: Phase<SyncScope> = async (ctx, scope) => {
    const sync = scope.object;
    const status: ResourceSyncStatus = (sync.status ??= {});
    status.phase = "Deleting";
    const left = await Promise.all((status.clusters ?? []).map((e) => this.pruneOne(ctx, sync, e, scope.clusters)));
    status.clusters = left.filter((e): e is ClusterSyncStatus => e !== undefined);
    if (status.clusters.length === 0) return;
    const next = Math.min(...status.clusters.map((e) => (e.nextAttemptTime ? Math.max(0, Date.parse(e.nextAttemptTime) - ctx.clock.now()) : this.timing.backoffMs)));
    return { halt: true, requeueAfterMs: Math.max(100, next) };
  };
}

export function registerResourceSyncController(manager: ControllerManager, deps: ResourceSyncDeps, options: Partial<ResourceSyncTiming> = {}): Controller<ResourceSyncObject> {
  const timing: ResourceSyncTiming = { resyncMs: options.resyncMs ?? 30_000, backoffMs: options.backoffMs ?? 2_000, maxBackoffMs: options.maxBackoffMs ?? 300_000 };
  const syncs = manager.informer(resourceSyncKind);
  const clusters = manager.informer(clusterKind);
  const synchroniser = new Synchroniser(deps, timing);
  const reconcile = objectReconciler<ResourceSyncObject, SyncScope>({
    kind: resourceSyncKind,
    cache: syncs.cache,
    finalizer: FINALIZER_RESOURCESYNC,
    observedGeneration: true,
    scope: (_ctx, base) => ({ ...base, clusters: clusters.cache }),
    phases: [synchroniser.apply],
    deletePhases: [synchroniser.prune],
    afterStatusWrite: async (ctx, _scope, previous, written) => {
      if (previous.status?.phase === written.status?.phase) return;
      if (written.status?.phase === "Synced") await ctx.event(written, "Normal", "Synced", `every targeted cluster holds the set (${written.status.targets} cluster(s))`);
    },
  });
  const controller = manager.add<ResourceSyncObject>({ name: "resourcesync", component: RESOURCESYNC_COMPONENT, informer: syncs, reconcile, concurrency: 4 });
  // A cluster that appears, becomes reachable, changes its labels or goes: the ResourceSyncs of its namespace look again.
  const clusterView = (c: ClusterObject) => JSON.stringify([c.metadata.labels, c.metadata.deletionTimestamp, c.status?.phase, c.status?.kubeconfigSecretName]);
  controller.watch(
    clusters,
    (cluster) =>
      syncs.cache
        .list()
        .filter((s) => s.metadata.namespace === cluster.metadata.namespace)
        .map((s) => keyFor(s.metadata.namespace, s.metadata.name!)),
    (previous, cluster) => clusterView(previous) !== clusterView(cluster),
  );
  return controller;
}
