// The describe view of a cluster: its objects as a tree (as `clusterctl describe cluster` shows it) —
// the cluster, its infrastructure per connection, the control plane's machines, and the worker pools
// with their machines — each with READY, REASON, SINCE and MESSAGE; a summary; and its conditions.
import type { ClusterObject, InfrastructureObject, MachineObject, MachinePoolObject } from "../api/kinds.ts";
import type { ConditionT } from "../api/meta.ts";
import { LABEL_POOL } from "../api/slipway/machinepool.ts";
import { condition, isNodeReady } from "./readiness.ts";

/** A cluster and the objects made for it, as read from the API. */
export interface ClusterFamily {
  cluster: ClusterObject;
  infrastructures: InfrastructureObject[];
  pools: MachinePoolObject[];
  machines: MachineObject[];
}

export interface TreeNode {
  /** `Kind/name`, or a group (`ControlPlane`, `Workers`). */
  label: string;
  /** "True", "False", or "" when unknown. */
  ready: string;
  reason: string;
  /** RFC 3339 time the readiness (or the object) dates from. */
  since: string | undefined;
  message: string;
  children: TreeNode[];
}

export interface ClusterSummary {
  phase: string;
  reason?: string;
  message?: string;
  version: string;
  endpoint?: string;
  kubeconfigSecretName?: string;
  operation?: string;
}

export interface ClusterDescription {
  tree: TreeNode;
  summary: ClusterSummary;
  conditions: ConditionT[];
}

/** READY, REASON, SINCE and MESSAGE from an object's Ready condition (or what stands in for it). */
function fromReady(
  conditions: ConditionT[] | undefined,
  fallback: { ready?: boolean; reason?: string; phase?: string; message?: string; since?: string },
): Omit<TreeNode, "label" | "children"> {
  const ready = condition(conditions, "Ready");
  return {
    ready: ready?.status ?? (fallback.ready === undefined ? "" : fallback.ready ? "True" : "False"),
    // A failure or a deletion says more than the Ready condition; the phase stands in for a missing one.
    reason: fallback.reason ?? ready?.reason ?? fallback.phase ?? "",
    since: ready?.lastTransitionTime ?? fallback.since,
    message: fallback.message ?? ready?.message ?? "",
  };
}

function deleting(object: { metadata: { deletionTimestamp?: string } }): { reason?: string } {
  return object.metadata.deletionTimestamp ? { reason: "Deleting" } : {};
}

function infrastructureNode(infra: InfrastructureObject): TreeNode {
  const st = infra.status;
  return {
    label: `Infrastructure/${infra.metadata.name}`,
    ...fromReady(st?.conditions, {
      ...(st?.ready === undefined ? {} : { ready: st.ready }),
      ...(st?.phase ? { phase: st.phase } : {}),
      ...(st?.phase === "Failed" ? { reason: st.reason ?? "Failed" } : deleting(infra)),
      ...(st?.message ? { message: st.message } : {}),
      since: infra.metadata.creationTimestamp,
    }),
    children: [],
  };
}

function machineNode(machine: MachineObject): TreeNode {
  const st = machine.status;
  const ready = condition(st?.conditions, "Ready");
  const reason = st?.failureReason ?? deleting(machine).reason ?? ready?.reason ?? st?.phase ?? "Pending";
  const message = st?.failureMessage ?? ready?.message ?? (st?.nodeName ? `node ${st.nodeName}` : "");
  return {
    label: `Machine/${machine.metadata.name}`,
    ready: isNodeReady(machine) ? "True" : "False",
    reason,
    since: ready?.lastTransitionTime ?? machine.metadata.creationTimestamp,
    message,
    children: [],
  };
}

/** "2/3 machines ready", and of those how many are available and up to date when that is fewer. */
function poolCounts(ready: number, desired: number, st: MachinePoolObject["status"]): string {
  const parts = [`${ready}/${desired} machines ready`];
  if (st?.availableReplicas !== undefined && st.availableReplicas < ready) parts.push(`${st.availableReplicas} available`);
  if (st?.updatedReplicas !== undefined && st.replicas !== undefined && st.updatedReplicas < st.replicas) parts.push(`${st.updatedReplicas} up to date`);
  return parts.join(", ");
}

function poolNode(pool: MachinePoolObject, machines: MachineObject[]): TreeNode {
  const st = pool.status;
  const desired = pool.spec.replicas ?? 1;
  const readyCount = st?.readyReplicas ?? machines.filter(isNodeReady).length;
  return {
    label: `MachinePool/${pool.metadata.name}`,
    ...fromReady(st?.conditions, {
      ready: readyCount >= desired,
      ...(st?.phase ? { phase: st.phase } : {}),
      ...(st?.phase === "Failed" ? { reason: st.reason ?? "Failed" } : deleting(pool)),
      message: st?.message ?? poolCounts(readyCount, desired, st),
      since: pool.metadata.creationTimestamp,
    }),
    children: machines.map(machineNode),
  };
}

/** A group row (ControlPlane, Workers) read from one of the cluster's conditions. */
function groupNode(label: string, cluster: ClusterObject, conditionType: string, children: TreeNode[]): TreeNode {
  const c = condition(cluster.status?.conditions, conditionType);
  return { label, ready: c?.status ?? "", reason: c?.reason ?? "", since: c?.lastTransitionTime, message: c?.message ?? "", children };
}

/** Whether a machine belongs to a pool: by its controller, its spec, or the pool label. */
export function belongsTo(machine: MachineObject, pool: MachinePoolObject): boolean {
  const poolName = pool.metadata.name;
  const declared = pool.metadata.labels?.[LABEL_POOL];
  const owner = machine.metadata.ownerReferences?.find((ref) => ref.controller);
  return (
    (owner?.kind === "MachinePool" && owner.name === poolName) ||
    machine.spec.pool === poolName ||
    (declared !== undefined && (machine.spec.pool === declared || machine.metadata.labels?.[LABEL_POOL] === declared))
  );
}

/** The tree: the cluster; its infrastructure per connection; the control plane's machines; the worker pools and their machines. */
export function clusterTree(family: ClusterFamily): TreeNode {
  const { cluster, infrastructures, pools, machines } = family;
  const controlPlane = machines.filter((m) => m.spec.role === "control-plane");
  const workers = machines.filter((m) => m.spec.role !== "control-plane");
  const poolNodes = pools.map((pool) => poolNode(pool, workers.filter((m) => belongsTo(m, pool))));
  const orphans = workers.filter((m) => !pools.some((pool) => belongsTo(m, pool))).map(machineNode);
  const st = cluster.status;
  const root: TreeNode = {
    label: `Cluster/${cluster.metadata.name}`,
    ...fromReady(st?.conditions, {
      ...(st?.reason ? { reason: st.reason } : deleting(cluster)),
      ...(st?.message ? { message: st.message } : {}),
      since: cluster.metadata.creationTimestamp,
    }),
    children: [
      ...infrastructures.map(infrastructureNode),
      groupNode("ControlPlane", cluster, "ControlPlaneReady", controlPlane.map(machineNode)),
    ],
  };
  if ((cluster.spec.workers ?? []).length > 0 || pools.length > 0 || orphans.length > 0) {
    root.children.push(groupNode("Workers", cluster, "WorkersReady", [...poolNodes, ...orphans]));
  }
  return root;
}

export function clusterSummary(cluster: ClusterObject): ClusterSummary {
  const st = cluster.status;
  return {
    phase: st?.phase ?? "Pending",
    ...(st?.reason ? { reason: st.reason } : {}),
    ...(st?.message ? { message: st.message } : {}),
    version: st?.version ?? cluster.spec.kubernetesVersion ?? "",
    ...(st?.controlPlaneEndpoint ? { endpoint: `${st.controlPlaneEndpoint.host}:${st.controlPlaneEndpoint.port}` } : {}),
    ...(st?.kubeconfigSecretName ? { kubeconfigSecretName: st.kubeconfigSecretName } : {}),
    ...(st?.operation ? { operation: st.operation } : {}),
  };
}

export function describeCluster(family: ClusterFamily): ClusterDescription {
  return { tree: clusterTree(family), summary: clusterSummary(family.cluster), conditions: family.cluster.status?.conditions ?? [] };
}
