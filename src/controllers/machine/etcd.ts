// A control-plane machine's etcd member, removed before the machine goes — after its node is drained,
// before it leaves the load balancer and its instance is terminated — as Cluster API's control-plane
// controller does: through another member's etcd pod (`etcdctl member remove`, sent through the
// workload API's pods/exec), so that etcd never counts a member that is gone. A member left behind
// counts towards the quorum without voting: two of them in a three-member etcd and the control plane
// stops. Only the machine's own member is removed, and only once, whatever the retries.
import { KubeApiError, KubeNotFoundError, type KubeClient } from "../../kubeclient/index.ts";

export const ETCD_MEMBER_REMOVED = "EtcdMemberRemoved";

interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** etcdctl failed in a member's pod (no quorum, no such member): worth retrying, not a broken machine. */
export class EtcdctlError extends Error {
  override readonly name = "EtcdctlError";
}

function etcdctl(kube: KubeClient, pod: string, args: string[]): Promise<ExecResult> {
  return kube.create<ExecResult>(`/api/v1/namespaces/kube-system/pods/${encodeURIComponent(pod)}/exec`, { command: ["etcdctl", ...args] });
}

/** The etcd pods of the other control-plane nodes, through which the member can be removed. */
async function peerPods(kube: KubeClient, nodeName: string): Promise<string[]> {
  const pods = await kube.list<{ metadata: { name?: string }; spec?: { nodeName?: string } }>("/api/v1/namespaces/kube-system/pods", { labelSelector: "component=etcd" });
  return pods.items.filter((p) => p.spec?.nodeName !== nodeName).map((p) => p.metadata.name!).sort();
}

/**
 * Removes the node's etcd member through the first other member's pod that answers: "removed" with the
 * member's ID and how many members are left, or "absent" when the node is no member (removed before).
 */
export async function removeMember(kube: KubeClient, nodeName: string): Promise<{ outcome: "removed"; id: string; left: number } | { outcome: "absent" }> {
  const errors: string[] = [];
  for (const pod of await peerPods(kube, nodeName)) {
    let list: ExecResult;
    try {
      list = await etcdctl(kube, pod, ["member", "list", "-w", "json"]);
    } catch (error) {
      // A peer whose pod is not running (its machine down) cannot help: the next may.
      if (error instanceof KubeNotFoundError) {
        errors.push(`${pod}: not running`);
        continue;
      }
      throw error;
    }
    if (list.exitCode !== 0) throw new EtcdctlError(`etcdctl member list in ${pod}: ${list.stderr.trim()}`);
    const members = (JSON.parse(list.stdout) as { members?: { ID: string; name: string }[] }).members ?? [];
    const member = members.find((m) => m.name === nodeName);
    if (!member) return { outcome: "absent" };
    const removed = await etcdctl(kube, pod, ["member", "remove", member.ID]);
    if (removed.exitCode !== 0) throw new EtcdctlError(`etcdctl member remove ${member.ID} in ${pod}: ${removed.stderr.trim()}`);
    return { outcome: "removed", id: member.ID, left: members.length - 1 };
  }
  if (errors.length > 0) throw new EtcdctlError(`no other member's etcd pod answers (${errors.join("; ")})`);
  // No other control-plane node: the last member goes with the cluster.
  return { outcome: "absent" };
}

export function isEtcdRetryable(error: unknown): boolean {
  return error instanceof EtcdctlError || error instanceof KubeApiError;
}
