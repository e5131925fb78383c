// What the CLI reads about a cluster: the Cluster and the objects made for it (found through the
// `slipway.dev/cluster` label), its conditions, and its machines counted by how far they got.
import type { ClusterObject, InfrastructureObject, MachineObject, MachinePoolObject } from "../api/kinds.ts";
import type { ConditionT } from "../api/meta.ts";
import { LABEL_CLUSTER } from "../api/slipway/cluster.ts";
import type { KubeClient } from "../kubeclient/index.ts";
import type { Session } from "./connect.ts";
import { orNotFound } from "./errors.ts";

import { SLIPWAY_API_VERSION } from "../api/slipway/group.ts";
const CLUSTER_RESOURCE = { singularName: "cluster", namespaced: true };

export interface ClusterFamily {
  cluster: ClusterObject;
  infrastructures: InfrastructureObject[];
  pools: MachinePoolObject[];
  machines: MachineObject[];
}

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

export function condition(conditions: ConditionT[] | undefined, type: string): ConditionT | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Machines of a cluster counted by how far they got. */
export interface MachineCounts {
  desired: number;
  /** Machine objects that exist. */
  created: number;
  /** Instances that run (instance ID known, past provisioning). */
  booted: number;
  /** Machines whose kubeadm init or join completed. */
  joined: number;
  /** Machines whose node is Ready. */
  ready: number;
}

export function desiredMachines(cluster: ClusterObject): number {
  const controlPlane = cluster.status?.controlPlane?.desired ?? cluster.spec.controlPlane.replicas ?? 1;
  const workers = cluster.status?.workers?.desired ?? (cluster.spec.workers ?? []).reduce((sum, pool) => sum + (pool.replicas ?? 1), 0);
  return controlPlane + workers;
}

export function countMachines(cluster: ClusterObject, machines: readonly MachineObject[]): MachineCounts {
  const booted = (m: MachineObject) => m.status?.instanceId !== undefined && (m.status.phase === "Provisioned" || m.status.phase === "Running");
  return {
    desired: desiredMachines(cluster),
    created: machines.length,
    booted: machines.filter(booted).length,
    joined: machines.filter((m) => m.status?.bootstrapped === true).length,
    ready: machines.filter((m) => m.status?.nodeReady === true).length,
  };
}

/** Whether the controllers have looked at the cluster's latest spec (when they say which one they saw). */
export function observedLatest(cluster: ClusterObject): boolean {
  const observed = cluster.status?.observedGeneration;
  const generation = cluster.metadata.generation;
  return observed === undefined || generation === undefined || observed >= generation;
}

export function isClusterReady(cluster: ClusterObject): boolean {
  return cluster.status?.phase === "Running" && condition(cluster.status.conditions, "Ready")?.status === "True" && observedLatest(cluster);
}

export function isClusterFailed(cluster: ClusterObject): boolean {
  return cluster.status?.phase === "Failed" && observedLatest(cluster);
}
