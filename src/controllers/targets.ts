// The clusters an object is for, named and selected by label (ResourceSync's targets, a LogicalCloud's
// members): those named first — a name with no live cluster is kept, so that status can say so — then
// those the selector picks, each once, sorted by name. Clusters being deleted are no one's target.
import type { ClusterObject } from "../api/kinds.ts";
import { selectorMatches, type LabelSelector } from "../api/selector.ts";

export interface ClusterTarget {
  name: string;
  /** The spec field that names it, when named (e.g. spec.clusters[1].name). */
  field?: string;
  /** The live cluster; absent when none has the name. */
  cluster?: ClusterObject;
}

export function clusterTargets(
  namespace: string | undefined,
  spec: { clusters?: { name: string }[]; clusterSelector?: LabelSelector },
  clusters: readonly ClusterObject[],
): ClusterTarget[] {
  const live = clusters.filter((c) => c.metadata.namespace === namespace && !c.metadata.deletionTimestamp);
  const byName = new Map(live.map((c) => [c.metadata.name!, c]));
  const targets = new Map<string, ClusterTarget>();
  (spec.clusters ?? []).forEach((t, i) => {
    const cluster = byName.get(t.name);
    targets.set(t.name, { name: t.name, field: `spec.clusters[${i}].name`, ...(cluster ? { cluster } : {}) });
  });
  const selector = spec.clusterSelector;
  if (selector) {
    for (const cluster of live) if (!targets.has(cluster.metadata.name!) && selectorMatches(selector, cluster.metadata.labels)) targets.set(cluster.metadata.name!, { name: cluster.metadata.name!, cluster });
  }
  return [...targets.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
