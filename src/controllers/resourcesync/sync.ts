// One cluster's part of a ResourceSync: apply the set through the apply engine (dependency order,
// objects labelled with the ResourceSync so pruning finds them), prune what the set no longer declares,
// and say per object what happened. An object found changed or deleted in the cluster — the set was
// already applied at this generation, yet applying it again had to create or change it — drifted and is
// now put back. A server that cannot be reached (or refuses the credentials) throws: the caller backs
// off for that cluster alone.
import type { KubeObject } from "../../api/meta.ts";
import type { ClusterSyncStatus, ResourceSyncState } from "../../api/slipway/resourcesync.ts";
import { Applier, type ApplyOutcome, type KubeClient } from "../../kubeclient/index.ts";

export const FIELD_MANAGER = "resourcesync-controller";

export interface SyncInput {
  client: KubeClient;
  manifests: readonly KubeObject[];
  /** The labels that mark the set's objects. */
  labels: Record<string, string>;
  /** What the last attempt in this cluster found. */
  previous: ClusterSyncStatus | undefined;
  generation: number;
}

export interface SyncResult {
  resources: ResourceSyncState[];
  /** Objects that were found changed or deleted and were put back. */
  drifted: ResourceSyncState[];
  failed: ResourceSyncState[];
}

/** The kinds a previous attempt applied: pruning looks there too, since the set may no longer name them. */
function previousKinds(previous: ClusterSyncStatus | undefined): { apiVersion: string; kind: string }[] {
  const seen = new Map<string, { apiVersion: string; kind: string }>();
  for (const r of previous?.resources ?? []) seen.set(`${r.apiVersion}/${r.kind}`, { apiVersion: r.apiVersion, kind: r.kind });
  return [...seen.values()];
}

function refKey(r: { apiVersion: string; kind: string; namespace?: string; name: string }): string {
  return `${r.apiVersion}/${r.kind}/${r.namespace ?? ""}/${r.name}`;
}

function stateOf(outcome: ApplyOutcome, previous: Map<string, ResourceSyncState>, settled: boolean): ResourceSyncState {
  const ref = outcome.ref;
  const base = { apiVersion: ref.apiVersion, kind: ref.kind, ...(ref.namespace ? { namespace: ref.namespace } : {}), name: ref.name };
  if (outcome.error) return { ...base, state: "Failed", message: outcome.error.message };
  const before = previous.get(refKey(base));
  const changed = outcome.action === "created" || outcome.action === "configured";
  if (settled && changed && before && before.state !== "Failed" && before.state !== "Pending") {
    return { ...base, state: "Drifted", message: outcome.action === "created" ? "was deleted in the cluster; created again" : "was changed in the cluster; put back" };
  }
  return { ...base, state: "Applied" };
}

/** Applies the set in one cluster and prunes what it no longer declares. */
export async function syncCluster(input: SyncInput): Promise<SyncResult> {
  const applier = new Applier(input.client, { fieldManager: FIELD_MANAGER, namespace: "default" });
  const report = await applier.applyAll(input.manifests, { prune: { labels: input.labels, kinds: previousKinds(input.previous) } });
  const previous = new Map((input.previous?.resources ?? []).map((r) => [refKey(r), r]));
  // Drift is a difference found when nothing was asked to change: the set was applied in full at this generation before.
  const settled = input.previous?.appliedGeneration === input.generation;
  const resources = report.outcomes.filter((o) => o.action !== "pruned").map((o) => stateOf(o, previous, settled));
  return { resources, drifted: resources.filter((r) => r.state === "Drifted"), failed: resources.filter((r) => r.state === "Failed") };
}

/** Deletes every object the set applied in the cluster (the cluster left the targets, or the ResourceSync is deleted). */
export async function pruneCluster(client: KubeClient, labels: Record<string, string>, previous: ClusterSyncStatus | undefined): Promise<ResourceSyncState[]> {
  const applier = new Applier(client, { fieldManager: FIELD_MANAGER, namespace: "default" });
  const report = await applier.applyAll([], { prune: { labels, kinds: previousKinds(previous) } });
  return report.failed.map((o) => ({
    apiVersion: o.ref.apiVersion,
    kind: o.ref.kind,
    ...(o.ref.namespace ? { namespace: o.ref.namespace } : {}),
    name: o.ref.name,
    state: "Failed" as const,
    message: `could not be pruned: ${o.error.message}`,
  }));
}
