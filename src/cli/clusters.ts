// What the CLI reads about a cluster: the Cluster and the objects made for it (found through the
// `slipway.dev/cluster` label), for the views to show.
import type { ClusterObject, InfrastructureObject, MachineObject, MachinePoolObject } from "../api/kinds.ts";
import { LABEL_CLUSTER } from "../api/slipway/cluster.ts";
import type { KubeClient } from "../kubeclient/index.ts";
import type { ClusterFamily } from "../views/describe.ts";
import type { Session } from "./connect.ts";
import { orNotFound } from "./errors.ts";

import { SLIPWAY_API_VERSION } from "../api/slipway/group.ts";
const CLUSTER_RESOURCE = { singularName: "cluster", namespaced: true };

/** The path of a Slipway object (or collection) in a namespace. */
export function slipwayPath(client: KubeClient, kind: string, namespace: string, name?: string): Promise<string> {
  return client.resourcePath({ apiVersion: SLIPWAY_API_VERSION, kind, namespace, ...(name === undefined ? {} : { name }) });
}

export async function getCluster(session: Session, name: string): Promise<ClusterObject> {
  const path = await slipwayPath(session.client, "Cluster", session.namespace, name);
  return orNotFound(session.client.get<ClusterObject>(path), CLUSTER_RESOURCE, name, session.namespace);
}

/** The objects of one kind labelled as belonging to the cluster, by name. */
export async function listOfCluster<T extends { metadata: { name?: string } }>(client: KubeClient, kind: string, namespace: string, cluster: string): Promise<T[]> {
  const path = await slipwayPath(client, kind, namespace);
  const items = await client.listAll<T>(path, { labelSelector: `${LABEL_CLUSTER}=${cluster}` });
  return items.sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "", "en", { numeric: true }));
}

export async function getClusterFamily(session: Session, name: string): Promise<ClusterFamily> {
  const cluster = await getCluster(session, name);
  const { client, namespace } = session;
  const [infrastructures, pools, machines] = await Promise.all([
    listOfCluster<InfrastructureObject>(client, "Infrastructure", namespace, name),
    listOfCluster<MachinePoolObject>(client, "MachinePool", namespace, name),
    listOfCluster<MachineObject>(client, "Machine", namespace, name),
  ]);
  return { cluster, infrastructures, pools, machines };
}
