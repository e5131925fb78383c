// A machine's Node in its workload cluster, through that cluster's own API: reading it, cordoning and
// draining it before the machine goes, and deleting it afterwards.
import { deleteIfPresent, ifPresent } from "../../api/presence.ts";
import { KubeUnreachableError, type KubeClient, type KubeObject } from "../../kubeclient/index.ts";

export interface WorkloadNode extends KubeObject {
  spec?: { providerID?: string; unschedulable?: boolean };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

interface WorkloadPod extends KubeObject {
  spec?: { nodeName?: string };
}

/** Annotation of the mirror pods of static pods: they belong to the kubelet, not to the API. */
const MIRROR_ANNOTATION = "kubernetes.io/config.mirror";

/** The workload API did not answer (not up yet, or gone): nothing can be learnt from it now. */
export function isUnavailable(error: unknown): boolean {
  return error instanceof KubeUnreachableError;
}

function nodePath(name: string): string {
  return `/api/v1/nodes/${encodeURIComponent(name)}`;
}

/** The Node, or undefined when it does not exist. */
export function readNode(kube: KubeClient, name: string): Promise<WorkloadNode | undefined> {
  return ifPresent(() => kube.get<WorkloadNode>(nodePath(name)));
}

export function nodeIsReady(node: WorkloadNode): boolean {
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/** Why the node is not Ready, as its Ready condition says. */
export function nodeNotReadyMessage(node: WorkloadNode): string {
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  if (!ready) return `node ${node.metadata.name ?? ""} has not reported Ready yet`;
  return `node ${node.metadata.name ?? ""} is not Ready${ready.reason ? ` (${ready.reason})` : ""}${ready.message ? `: ${ready.message}` : ""}`;
}

/** Marks the node unschedulable; false when it does not exist. */
export async function cordonNode(kube: KubeClient, name: string): Promise<boolean> {
  return (await ifPresent(() => kube.patch(nodePath(name), { spec: { unschedulable: true } }, "merge").then(() => true))) ?? false;
}

/** Pods a drain evicts: all bound to the node except DaemonSet pods and mirror pods of static pods. */
export function evictable(pod: WorkloadPod): boolean {
  if (pod.metadata.annotations?.[MIRROR_ANNOTATION] !== undefined) return false;
  return !(pod.metadata.ownerReferences ?? []).some((ref) => ref.kind === "DaemonSet");
}

/** Deletes the evictable pods bound to the node; answers how many were deleted. */
export async function drainNode(kube: KubeClient, name: string): Promise<number> {
  const pods = await kube.listAll<WorkloadPod>("/api/v1/pods", { fieldSelector: `spec.nodeName=${name}` });
  const evicted = pods.filter(evictable);
  await Promise.all(
    evicted.map(async (pod) => {
      const path = `/api/v1/namespaces/${encodeURIComponent(pod.metadata.namespace ?? "default")}/pods/${encodeURIComponent(pod.metadata.name ?? "")}`;
      await deleteIfPresent(() => kube.delete(path));
    }),
  );
  return evicted.length;
}

/** Deletes the Node object; a node already gone is fine. */
export async function deleteNode(kube: KubeClient, name: string): Promise<void> {
  await deleteIfPresent(() => kube.delete(nodePath(name)));
}
