// A cluster's cost per hour, from the plan of its current spec (the providers' catalogue prices), asked
// again only when its spec changes.
import { useEffect, useState } from "preact/hooks";
import type { ClusterObject } from "../../../api/kinds.ts";
import type { ApiClient } from "../api/client.ts";
import { planCluster } from "../api/plan.ts";
import { money } from "../format.ts";

const known = new Map<string, number>();

export function ClusterCost({ client, cluster }: { client: ApiClient; cluster: ClusterObject }) {
  const key = `${cluster.metadata.uid}/${cluster.metadata.generation}`;
  const [hourly, setHourly] = useState<number | undefined>(known.get(key));
  useEffect(() => {
    if (known.has(key) || cluster.metadata.deletionTimestamp) return;
    let live = true;
    const { apiVersion, kind, metadata, spec } = cluster;
    planCluster(client, { apiVersion, kind, metadata: { name: metadata.name, namespace: metadata.namespace }, spec } as ClusterObject)
      .then((plan) => {
        // The whole cluster as declared (a cluster still being built costs this once it runs).
        const value = plan.cost.hourly;
        known.set(key, value);
        if (live) setHourly(value);
      })
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [key]);
  return <span data-testid="cost-per-hour">{hourly === undefined ? "—" : money(hourly, 3)}</span>;
}
