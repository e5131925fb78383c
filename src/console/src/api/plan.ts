// Asking the API what applying a Cluster would do: POST to its `plan` subresource. Nothing is made.
import type { ClusterObject, ConnectionObject } from "../../../api/kinds.ts";
import type { ClusterPlanObject, ClusterPlanStatus } from "../../../api/slipway/clusterplan.ts";
import type { ApiClient } from "./client.ts";
import { slipwayPath } from "./paths.ts";

export async function planCluster(client: ApiClient, cluster: ClusterObject, connections: ConnectionObject[] = []): Promise<ClusterPlanStatus> {
  const namespace = cluster.metadata.namespace || "default";
  const body: ClusterPlanObject = {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "ClusterPlan",
    metadata: { name: cluster.metadata.name, namespace },
    spec: { cluster: { ...cluster, metadata: { ...cluster.metadata, namespace } }, ...(connections.length > 0 ? { connections } : {}) },
  };
  const answer = await client.request<ClusterPlanObject>("POST", slipwayPath("clusters", namespace, cluster.metadata.name || "-", "plan"), body);
  return answer.status!;
}
