// Addons: per Addon and per cluster it targets, its manifests rendered for that cluster (render.ts) go
// into a ResourceSync `addon.<addon>.<cluster>` owned by the Addon — the synchroniser applies them,
// corrects drift and prunes — once every addon it depends on is Ready in that cluster. The addon is then
// Installing until its workloads report ready in the cluster (health.ts), and Ready. A manifest that does
// not render fails that addon alone (its status says why, naming the field); an object the cluster refuses
// (an unknown kind, an invalid field) fails it the same way through the synchroniser's report. Drift the
// synchroniser repaired becomes a Warning Event on the Addon. A cluster that leaves the targets loses its
// ResourceSync (pruning the objects there); deleting the Addon deletes them all and waits for the pruning.
import type { ClusterObject } from "../../api/kinds.ts";
import type { KubeObject } from "../../api/meta.ts";
import { createIfAbsent, deleteIfPresent } from "../../api/presence.ts";
import { FINALIZER_ADDON, LABEL_ADDON, LABEL_ADDON_CLUSTER, addonKind, type AddonClusterStatus, type AddonObject, type AddonPhase, type AddonStatus } from "../../api/slipway/addon.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { SLIPWAY_API_VERSION } from "../../api/slipway/group.ts";
import { resourceSyncKind, type ResourceSyncObject } from "../../api/slipway/resourcesync.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { ObjectCache } from "../../runtime/cache.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { Controller, ReconcileContext } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler, type Phase, type Scope } from "../../runtime/reconciler.ts";
import { controllerRef } from "../contract.ts";
import { clusterTargets } from "../targets.ts";
import { workloadProblem, type WorkloadClients } from "../workload.ts";
import { Bundles } from "./bundles.ts";
import { unreadyWorkloads } from "./health.ts";
import { AddonError, renderAddon, type Rendered } from "./render.ts";

export const ADDON_COMPONENT = "slipway.dev/addon-controller";

export interface AddonDeps {
  workloads: WorkloadClients;
  bundles?: Bundles;
}

export interface AddonTiming {
  /** How often an addon not yet Ready is looked at again (default 1 s). */
  pollMs: number;
  /** How often a Ready addon's health is checked again (default 30 s). */
  resyncMs: number;
}

interface AddonScope extends Scope<AddonObject> {
  clusters: ObjectCache<ClusterObject>;
  addons: ObjectCache<AddonObject>;
  syncs: ObjectCache<ResourceSyncObject>;
}

/** An addon's phase is the worst of its clusters'. */
const WORST_FIRST: readonly AddonPhase[] = ["Failed", "Waiting", "Installing"];

const syncsOf = (ctx: ReconcileContext) => ctx.client.of<ResourceSyncObject>(resourceSyncKind);

/** The ResourceSync delivering an addon to one cluster (both are DNS labels, so the dots keep it unambiguous). */
export function addonSyncName(addon: string, cluster: string): string {
  return `addon.${addon}.${cluster}`;
}

function ownedSyncs(scope: AddonScope): ResourceSyncObject[] {
  const addon = scope.object;
  return scope.syncs.list().filter((s) => s.metadata.namespace === addon.metadata.namespace && s.metadata.labels?.[LABEL_ADDON] === addon.metadata.name);
}

/** Why the addon waits in this cluster for one it depends on, or undefined when they are all Ready there. */
function waitingFor(addon: AddonObject, cluster: string, addons: ObjectCache<AddonObject>): string | undefined {
  for (const dep of addon.spec.dependsOn ?? []) {
    const other = addons.get(keyFor(addon.metadata.namespace, dep));
    if (!other || other.metadata.deletionTimestamp) return `waiting for addon ${dep}, which does not exist`;
    const there = other.status?.clusters?.find((c) => c.name === cluster);
    if (!there) return `waiting for addon ${dep}, which does not target cluster ${cluster}`;
    if (there.phase !== "Ready") return `waiting for addon ${dep} (${there.phase} in cluster ${cluster})`;
  }
  return undefined;
}

class Addons {
  private readonly bundles: Bundles;

  constructor(
    private readonly deps: AddonDeps,
    private readonly timing: AddonTiming,
  ) {
    this.bundles = deps.bundles ?? new Bundles();
  }

  /** Creates or updates the addon's ResourceSync for one cluster. */
  private async putSync(ctx: ReconcileContext, addon: AddonObject, cluster: string, manifests: KubeObject[], existing: ResourceSyncObject | undefined): Promise<void> {
    const spec: ResourceSyncObject["spec"] = { clusters: [{ name: cluster }], resources: manifests as unknown as NonNullable<ResourceSyncObject["spec"]["resources"]> };
    if (!existing) {
      const namespace = addon.metadata.namespace!;
      const labels = { [LABEL_ADDON]: addon.metadata.name!, [LABEL_ADDON_CLUSTER]: cluster };
      const sync = { apiVersion: SLIPWAY_API_VERSION, kind: "ResourceSync", metadata: { name: addonSyncName(addon.metadata.name!, cluster), namespace, labels, ownerReferences: [controllerRef(addon)] }, spec } as ResourceSyncObject;
      await createIfAbsent(() => syncsOf(ctx).create(sync));
    } else if (JSON.stringify(existing.spec) !== JSON.stringify({ ...existing.spec, ...spec })) {
      await syncsOf(ctx).update({ ...existing, spec: { ...existing.spec, ...spec } } as ResourceSyncObject);
    }
  }

  /** The addon in one cluster whose ResourceSync exists: what the synchroniser says, then what the cluster says. */
  private async observe(ctx: ReconcileContext, addon: AddonObject, cluster: ClusterObject, sync: ResourceSyncObject | undefined, rendered: Rendered | undefined, previous: AddonClusterStatus | undefined): Promise<AddonClusterStatus> {
    const name = cluster.metadata.name!;
    const base = { name, ...(previous?.drifts ? { drifts: previous.drifts } : {}) };
    const entry = sync?.status?.clusters?.find((c) => c.name === name);
    const objects = sync?.spec.resources?.length ?? 0;
    if (!sync || !entry || sync.status?.observedGeneration !== sync.metadata.generation) return { ...base, phase: "Installing", message: "waiting for the synchroniser", objects };
    const drifted = entry.drifts ?? 0;
    if (drifted > (previous?.drifts ?? 0)) {
      const what = (entry.resources ?? []).filter((r) => r.state === "Drifted").map((r) => `${r.kind} ${r.namespace ? `${r.namespace}/` : ""}${r.name} ${r.message ?? "drifted"}`);
      await ctx.event(addon, "Warning", "Drifted", `addon ${addon.metadata.name} drifted in cluster ${name} and was repaired${what.length > 0 ? `: ${what.join("; ")}` : ""}`);
    }
    const counted = { ...base, ...(drifted > 0 ? { drifts: drifted } : {}), objects };
    if (entry.state === "Failed") return { ...counted, phase: "Failed", message: entry.message ?? "the synchroniser failed" };
    if (entry.appliedGeneration !== sync.metadata.generation || entry.state === "Pending") return { ...counted, phase: "Installing", message: entry.message ?? `delivering ${objects} object(s)` };
    const client = await this.deps.workloads.forClusterObject(cluster);
    if (!client) return { ...counted, phase: "Installing", message: "waiting for the cluster's API" };
    try {
      const problems = await unreadyWorkloads(client, (rendered?.manifests ?? (sync.spec.resources as unknown as KubeObject[])) ?? []);
      if (problems.length > 0) return { ...counted, phase: "Installing", ready: objects - problems.length, message: problems.join("; ") };
      return { ...counted, phase: "Ready", ready: objects };
    } catch (error) {
      const problem = workloadProblem(error);
      if (!problem) throw error;
      return { ...counted, phase: "Installing", message: `checking its objects: ${problem}` };
    }
  }

  readonly install: Phase<AddonScope> = async (ctx, scope) => {
    const addon = scope.object;
    const namespace = addon.metadata.namespace!;
    const status: AddonStatus = (addon.status ??= {});
    const at = nowTimestamp(new Date(ctx.clock.now()));
    const named = addon.spec.clusterName ? [{ name: addon.spec.clusterName }] : [];
    const targets = clusterTargets(namespace, { clusters: named, clusterSelector: addon.spec.clusterSelector }, scope.clusters.list()).map((t) => ({ ...t, field: t.field?.replace("spec.clusters[0].name", "spec.clusterName") }));
    const owned = ownedSyncs(scope);
    const previous = new Map((status.clusters ?? []).map((c) => [c.name, c]));
    const entries: AddonClusterStatus[] = [];
    const problems: string[] = [];
    for (const target of targets) {
      if (!target.cluster) {
        entries.push({ name: target.name, phase: "Failed", message: `${target.field}: cluster ${target.name} does not exist in namespace ${namespace}` });
        continue;
      }
      const sync = owned.find((s) => s.metadata.name === addonSyncName(addon.metadata.name!, target.name));
      const waiting = waitingFor(addon, target.name, scope.addons);
      if (waiting && !sync) {
        entries.push({ name: target.name, phase: "Waiting", message: waiting });
        continue;
      }
      let rendered: Rendered | undefined;
      try {
        rendered = await renderAddon(ctx.client, this.bundles, addon, { name: target.name, namespace });
      } catch (error) {
        if (!(error instanceof AddonError)) throw error;
        problems.push(error.message);
        entries.push({ name: target.name, phase: "Failed", message: error.message });
        continue;
      }
      status.version = rendered.version || undefined;
      status.services = rendered.services;
      await this.putSync(ctx, addon, target.name, rendered.manifests, sync);
      entries.push(await this.observe(ctx, addon, target.cluster, sync, rendered, previous.get(target.name)));
    }
    if (status.version === undefined) delete status.version;
    // Clusters no longer targeted: their ResourceSync goes, and prunes what it applied there.
    const targeted = new Set(targets.map((t) => t.name));
    for (const sync of owned) {
      const cluster = sync.metadata.labels?.[LABEL_ADDON_CLUSTER] ?? "";
      if (!targeted.has(cluster) && !sync.metadata.deletionTimestamp) await deleteIfPresent(() => syncsOf(ctx).delete(namespace, sync.metadata.name!));
    }
    status.clusters = entries;
    const phases = new Set(entries.map((e) => e.phase));
    const phase: AddonPhase = entries.length === 0 ? "Pending" : (WORST_FIRST.find((p) => phases.has(p)) ?? "Ready");
    status.phase = phase;
    const notReady = entries.filter((e) => e.phase !== "Ready");
    if (entries.length === 0) status.message = "no cluster is targeted";
    else if (notReady.length > 0) status.message = problems[0] ?? notReady.map((e) => `${e.name}: ${e.message ?? e.phase}`).join("; ");
    else delete status.message;
    setCondition(status, { type: "Ready", status: phase === "Ready" ? "True" : "False", reason: phase, message: status.message ?? `ready in ${entries.length} cluster(s)` }, at);
    // Ready: health looked at again each resync; Failed: rarely changes by itself (a spec or cluster change requeues it at once).
    const again = phase === "Ready" ? this.timing.resyncMs : phase === "Failed" ? Math.min(this.timing.resyncMs, 5 * this.timing.pollMs) : this.timing.pollMs;
    return { requeueAfterMs: again };
  };

  readonly remove: Phase<AddonScope> = async (ctx, scope) => {
    const addon = scope.object;
    const status: AddonStatus = (addon.status ??= {});
    status.phase = "Deleting";
    const owned = ownedSyncs(scope);
    for (const sync of owned) if (!sync.metadata.deletionTimestamp) await deleteIfPresent(() => syncsOf(ctx).delete(addon.metadata.namespace, sync.metadata.name!));
    if (owned.length === 0) return;
    status.message = `removing its objects from ${owned.length} cluster(s)`;
    return { halt: true, requeueAfterMs: this.timing.pollMs };
  };
}

export function registerAddonController(manager: ControllerManager, deps: AddonDeps, options: Partial<AddonTiming> = {}): Controller<AddonObject> {
  const timing: AddonTiming = { pollMs: options.pollMs ?? 1_000, resyncMs: options.resyncMs ?? 30_000 };
  const addons = manager.informer(addonKind);
  const clusters = manager.informer(clusterKind);
  const syncs = manager.informer(resourceSyncKind);
  const logic = new Addons(deps, timing);
  const reconcile = objectReconciler<AddonObject, AddonScope>({
    kind: addonKind,
    cache: addons.cache,
    finalizer: FINALIZER_ADDON,
    observedGeneration: true,
    scope: (_ctx, base) => ({ ...base, clusters: clusters.cache, addons: addons.cache, syncs: syncs.cache }),
    phases: [logic.install],
    deletePhases: [logic.remove],
    afterStatusWrite: async (ctx, _scope, previous, written) => {
      const phase = written.status?.phase;
      if (phase === previous.status?.phase) return;
      if (phase === "Ready") await ctx.event(written, "Normal", "Ready", `ready in ${written.status?.clusters?.length ?? 0} cluster(s)`);
      if (phase === "Failed") await ctx.event(written, "Warning", "Failed", written.status?.message ?? "");
    },
  });
  const controller = manager.add<AddonObject>({ name: "addon", component: ADDON_COMPONENT, informer: addons, reconcile, concurrency: 4 });
  controller.watch(syncs, (s) => {
    const addon = s.metadata.labels?.[LABEL_ADDON];
    return addon ? [keyFor(s.metadata.namespace, addon)] : [];
  });
  // An addon that changes phase somewhere: those depending on it look again.
  controller.watch(addons, (a) =>
    addons.cache
      .list()
      .filter((o) => o.metadata.namespace === a.metadata.namespace && (o.spec.dependsOn ?? []).includes(a.metadata.name!))
      .map((o) => keyFor(o.metadata.namespace, o.metadata.name!)),
  );
  const clusterView = (c: ClusterObject) => JSON.stringify([c.metadata.labels, c.metadata.deletionTimestamp, c.status?.phase, c.status?.kubeconfigSecretName]);
  controller.watch(
    clusters,
    (cluster) => addons.cache.list().filter((a) => a.metadata.namespace === cluster.metadata.namespace).map((a) => keyFor(a.metadata.namespace, a.metadata.name!)),
    (previous, cluster) => clusterView(previous) !== clusterView(cluster),
  );
  return controller;
}
