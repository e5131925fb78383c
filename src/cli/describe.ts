// `slipway describe cluster NAME`: the cluster's objects as a tree (as `clusterctl describe cluster` draws
// it) with READY, REASON, SINCE and MESSAGE, then the cluster's conditions: why it is or is not Ready.
import type { Command } from "commander";
import type { ClusterObject, InfrastructureObject, MachineObject, MachinePoolObject } from "../api/kinds.ts";
import type { ConditionT } from "../api/meta.ts";
import { LABEL_POOL } from "../api/slipway/machinepool.ts";
import { condition, getClusterFamily, type ClusterFamily } from "./clusters.ts";
import { findResource, withSession } from "./connect.ts";
import { formatAge, renderTable } from "./output.ts";
import { UsageError } from "./usage.ts";

export interface TreeNode {
  label: string;
  ready: string;
  reason: string;
  /** RFC 3339 time the SINCE column counts from. */
  since: string | undefined;
  message: string;
  children: TreeNode[];
}

export function registerDescribeCommand(program: Command): void {
  program
    .command("describe")
    .description("show a cluster's objects as a tree with their readiness, and its conditions")
    .argument("<kind>", "cluster (the only kind described)")
    .argument("<name>", "name of the cluster")
    .action(async (kind: string, name: string, _flags: unknown, command: Command) => {
      await withSession(command, async (session) => {
        const resource = await findResource(session, kind);
        if (resource.kind !== "Cluster") {
          throw new UsageError(`describe shows clusters only; for a ${resource.singularName}, try: slipway get ${resource.name} ${name} -o yaml`);
        }
        const family = await getClusterFamily(session, name);
        session.out.write(describeCluster(family, Date.now()));
      });
    });
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
    ready: st?.nodeReady ? "True" : "False",
    reason,
    since: ready?.lastTransitionTime ?? machine.metadata.creationTimestamp,
    message,
    children: [],
  };
}

function poolNode(pool: MachinePoolObject, machines: MachineObject[]): TreeNode {
  const st = pool.status;
  const desired = pool.spec.replicas ?? 1;
  const readyCount = st?.readyReplicas ?? machines.filter((m) => m.status?.nodeReady).length;
  return {
    label: `MachinePool/${pool.metadata.name}`,
    ...fromReady(st?.conditions, {
      ready: readyCount >= desired,
      ...(st?.phase ? { phase: st.phase } : {}),
      ...(st?.phase === "Failed" ? { reason: st.reason ?? "Failed" } : deleting(pool)),
      message: st?.message ?? `${readyCount}/${desired} machines ready`,
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

/** Which pool a machine belongs to: its spec, its controller, or the pool label. */
function belongsTo(machine: MachineObject, pool: MachinePoolObject): boolean {
  const poolName = pool.metadata.name;
  const declared = pool.metadata.labels?.[LABEL_POOL];
  const owner = machine.metadata.ownerReferences?.find((ref) => ref.controller);
  return (
    (owner?.kind === "MachinePool" && owner.name === poolName) ||
    machine.spec.pool === poolName ||
    (declared !== undefined && (machine.spec.pool === declared || machine.metadata.labels?.[LABEL_POOL] === declared))
  );
}

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

/** Tree rows: NAME drawn with ├─ └─ │ as clusterctl draws it. */
function flatten(node: TreeNode, prefix: string, branch: string, rows: { name: string; node: TreeNode }[]): void {
  rows.push({ name: `${prefix}${branch}${node.label}`, node });
  const childPrefix = prefix + (branch === "" ? "" : branch === "└─" ? "  " : "│ ");
  node.children.forEach((child, i) => flatten(child, childPrefix, i === node.children.length - 1 ? "└─" : "├─", rows));
}

export function describeCluster(family: ClusterFamily, now: number): string {
  const rows: { name: string; node: TreeNode }[] = [];
  flatten(clusterTree(family), "", "", rows);
  const tree = renderTable(
    ["NAME", "READY", "REASON", "SINCE", "MESSAGE"],
    rows.map(({ name, node }) => [name, node.ready, node.reason, node.since ? formatAge(node.since, now) : "", node.message]),
  );
  const { cluster } = family;
  const st = cluster.status;
  const lines = [tree];
  const summary = [`Phase:      ${st?.phase ?? "Pending"}${st?.reason ? ` (${st.reason}${st.message ? `: ${st.message}` : ""})` : ""}`];
  summary.push(`Version:    ${st?.version ?? cluster.spec.kubernetesVersion ?? ""}`);
  if (st?.controlPlaneEndpoint) summary.push(`Endpoint:   ${st.controlPlaneEndpoint.host}:${st.controlPlaneEndpoint.port}`);
  if (st?.kubeconfigSecretName) summary.push(`Kubeconfig: slipway kubeconfig ${cluster.metadata.name} (Secret ${st.kubeconfigSecretName})`);
  if (st?.operation) summary.push(`Operation:  ${st.operation}`);
  lines.push(`\n${summary.join("\n")}\n`);
  const conditions = st?.conditions ?? [];
  if (conditions.length > 0) {
    const table = renderTable(
      ["TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"],
      conditions.map((c) => [c.type, c.status, c.reason ?? "", c.lastTransitionTime ? formatAge(c.lastTransitionTime, now) : "", c.message ?? ""]),
    );
    lines.push(`\nConditions:\n${table.replace(/^/gm, "  ")}`);
  } else {
    lines.push("\nConditions: none reported yet (is the cluster controller running?)\n");
  }
  return lines.join("");
}
