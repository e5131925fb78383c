// A machine's Node in its workload cluster, through that cluster's own API: reading it, cordoning and
// draining it before the machine goes (through the Eviction API, which honours PodDisruptionBudgets),
// and deleting it afterwards.
import { deleteIfPresent, ifPresent } from "../../api/presence.ts";
import { KubeApiError, KubeNotFoundError, KubeUnreachableError, type KubeClient, type KubeObject } from "../../kubeclient/index.ts";

export interface WorkloadNode extends KubeObject {
  spec?: { providerID?: string; unschedulable?: boolean };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[]; nodeInfo?: { kubeletVersion?: string } };
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

/** What one pass of a drain did: the pods evicted, and those a disruption budget keeps for now. */
export interface DrainPass {
  /** namespace/name of each pod evicted. */
  evicted: string[];
  /** Evictions refused with 429 TooManyRequests (a PodDisruptionBudget allows no disruption now), and why. */
  blocked: { pod: string; message: string }[];
}

/** Why an eviction was refused, as the budget says it ("The disruption budget web needs 2 healthy pods …"). */
function refusal(error: KubeApiError): string {
  const cause = error.status?.details?.causes?.find((c) => c.reason === "DisruptionBudget")?.message;
  return cause ? `${error.message} ${cause}` : error.message;
}

/**
 * Evicts the evictable pods bound to the node through the Eviction API (POST pods/<name>/eviction), as
 * `kubectl drain` does. A pod already gone needs no eviction; one a disruption budget protects is
 * reported as blocked, to be tried again.
 */
export async function drainNode(kube: KubeClient, name: string): Promise<DrainPass> {
  const pods = await kube.listAll<WorkloadPod>("/api/v1/pods", { fieldSelector: `spec.nodeName=${name}` });
  const pass: DrainPass = { evicted: [], blocked: [] };
  await Promise.all(
    pods.filter(evictable).map(async (pod) => {
      const namespace = pod.metadata.namespace ?? "default";
      const podName = pod.metadata.name ?? "";
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(podName)}/eviction`;
      try {
        await kube.create(path, { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: podName, namespace } });
        pass.evicted.push(`${namespace}/${podName}`);
      } catch (error) {
        if (error instanceof KubeNotFoundError) return;
        if (error instanceof KubeApiError && error.code === 429) {
          pass.blocked.push({ pod: `${namespace}/${podName}`, message: refusal(error) });
          return;
        }
        throw error;
      }
    }),
  );
  pass.evicted.sort();
  pass.blocked.sort((a, b) => a.pod.localeCompare(b.pod));
  return pass;
}

/** Deletes the Node object; a node already gone is fine. */
export async function deleteNode(kube: KubeClient, name: string): Promise<void> {
  await deleteIfPresent(() => kube.delete(nodePath(name)));
}
