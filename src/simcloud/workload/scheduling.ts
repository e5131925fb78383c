// Where a pod may run, as the scheduler and the DaemonSet controller decide it: the node's labels must
// satisfy the pod's nodeSelector, and the pod must tolerate every NoSchedule and NoExecute taint of the
// node. DaemonSet pods carry the tolerations the DaemonSet controller adds (not-ready, unreachable,
// pressure, unschedulable), so node agents run on nodes not Ready yet; other pods get the default ones
// the API server adds (not-ready and unreachable, NoExecute only), so they wait for a Ready node.
import type { PodSpecView } from "./kinds-podspec.ts";
import type { NodeObject } from "./kinds.ts";

type Taint = NonNullable<NonNullable<NodeObject["spec"]>["taints"]>[number];
type Toleration = NonNullable<PodSpecView["tolerations"]>[number];

const exists = (key: string, effect: string): Toleration => ({ key, operator: "Exists", effect });

/** What the DaemonSet controller adds to its pods. */
export function daemonTolerations(hostNetwork: boolean): Toleration[] {
  return [
    exists("node.kubernetes.io/not-ready", "NoExecute"),
    exists("node.kubernetes.io/unreachable", "NoExecute"),
    exists("node.kubernetes.io/disk-pressure", "NoSchedule"),
    exists("node.kubernetes.io/memory-pressure", "NoSchedule"),
    exists("node.kubernetes.io/pid-pressure", "NoSchedule"),
    exists("node.kubernetes.io/unschedulable", "NoSchedule"),
    ...(hostNetwork ? [exists("node.kubernetes.io/network-unavailable", "NoSchedule")] : []),
  ];
}

/** What the API server's DefaultTolerationSeconds admission adds to every pod. */
const DEFAULT_TOLERATIONS: Toleration[] = [exists("node.kubernetes.io/not-ready", "NoExecute"), exists("node.kubernetes.io/unreachable", "NoExecute")];

export function tolerates(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (!toleration.key) return toleration.operator === "Exists";
  if (toleration.key !== taint.key) return false;
  return toleration.operator === "Exists" || (toleration.value ?? "") === (taint.value ?? "");
}

/** Whether a pod of this spec may be placed on the node (a DaemonSet's pod when `daemon`). */
export function fitsNode(spec: PodSpecView, node: NodeObject, daemon: boolean): boolean {
  return admits(spec, node, daemon, ["NoSchedule", "NoExecute"]);
}

/** Whether a pod already on the node may stay there: it tolerates the node's NoExecute taints. */
export function staysOnNode(spec: PodSpecView, node: NodeObject, daemon: boolean): boolean {
  return admits(spec, node, daemon, ["NoExecute"]);
}

function admits(spec: PodSpecView, node: NodeObject, daemon: boolean, effects: readonly string[]): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [key, value] of Object.entries(spec.nodeSelector ?? {})) if (labels[key] !== value) return false;
  if (node.spec?.unschedulable && !daemon && effects.includes("NoSchedule")) return false;
  const tolerations = [...(spec.tolerations ?? []), ...(daemon ? daemonTolerations(spec.hostNetwork === true) : DEFAULT_TOLERATIONS)];
  return (node.spec?.taints ?? []).filter((t) => effects.includes(t.effect)).every((taint) => tolerations.some((t) => tolerates(t, taint)));
}

/** The node's Ready condition: True, False, or Unknown (its kubelet is silent). */
export function nodeReadiness(node: NodeObject): "True" | "False" | "Unknown" {
  return node.status?.conditions?.find((c) => c.type === "Ready")?.status ?? "Unknown";
}
