// The describe view of a logical cloud: a tree — the logical cloud, each member cluster, and under each
// the objects made there with their state as the synchroniser reports them — and its users with the
// clusters their kubeconfig reaches. Data only; the CLI and the console draw it.
import type { LogicalCloudObject } from "../api/slipway/logicalcloud.ts";
import type { TreeNode } from "./describe.ts";
import { condition } from "./readiness.ts";

export interface LogicalCloudDescription {
  tree: TreeNode;
  users: { name: string; kubeconfigSecret: string; clusters: string[] }[];
}

const readyOf = (state: string) => (state === "Ready" || state === "Applied" ? "True" : state === "Drifted" ? "True" : state === "Pending" || state === "Removing" ? "" : "False");

export function describeLogicalCloud(cloud: LogicalCloudObject): LogicalCloudDescription {
  const status = cloud.status ?? {};
  const ready = condition(status.conditions, "Ready");
  const tree: TreeNode = {
    label: `LogicalCloud/${cloud.metadata.name} (namespace ${cloud.spec.namespace})`,
    ready: ready?.status ?? "",
    reason: status.phase ?? "Pending",
    since: ready?.lastTransitionTime ?? cloud.metadata.creationTimestamp,
    message: status.message ?? "",
    children: (status.clusters ?? []).map((member) => ({
      label: `Cluster/${member.name}`,
      ready: readyOf(member.state),
      reason: member.state,
      since: undefined,
      message: member.message ?? "",
      children: (member.resources ?? []).map((r) => ({
        label: `${r.kind}/${r.namespace ? `${r.namespace}/` : ""}${r.name}`,
        ready: readyOf(r.state),
        reason: r.state,
        since: undefined,
        message: r.message ?? "",
        children: [],
      })),
    })),
  };
  return { tree, users: (status.users ?? []).map((u) => ({ ...u, clusters: [...u.clusters] })) };
}
