// Whether the cluster's network plugin is installed, judged as Kubernetes reports it: its DaemonSet's
// status (observed at the current generation) has every desired pod scheduled, updated, ready and
// available. Applying the manifest is not enough — a plugin whose pods crash (a pod range that does not
// match the cluster's, say) leaves the nodes NotReady, and the condition says why.
import { CNI_DAEMONSETS, type CniName } from "../../bootstrap/cni.ts";
import { type KubeClient, type KubeObject } from "../../kubeclient/index.ts";
import type { ConditionInput } from "../../runtime/conditions.ts";
import { CONDITION_NETWORK_PLUGIN_INSTALLED } from "../../api/slipway/cluster.ts";
import { ifPresent } from "../../api/presence.ts";

export interface DaemonSetView extends KubeObject {
  spec?: { selector?: { matchLabels?: Record<string, string> } };
  status?: {
    desiredNumberScheduled?: number;
    currentNumberScheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
    updatedNumberScheduled?: number;
    observedGeneration?: number;
  };
}

interface PodView extends KubeObject {
  spec?: { nodeName?: string };
  status?: {
    containerStatuses?: { name: string; ready: boolean; state?: { waiting?: { reason?: string; message?: string } }; lastState?: { terminated?: { message?: string } } }[];
  };
}

function daemonSetPath(cni: CniName): string {
  const { namespace, name } = CNI_DAEMONSETS[cni];
  return `/apis/apps/v1/namespaces/${namespace}/daemonsets/${name}`;
}

/** The plugin's DaemonSet, or undefined when it does not exist (the manifest is to be applied). */
export async function readPluginDaemonSet(kube: KubeClient, cni: CniName): Promise<DaemonSetView | undefined> {
  return ifPresent(() => kube.get<DaemonSetView>(daemonSetPath(cni)));
}

/** All desired pods scheduled, on the current template, ready and available, as of the current generation. */
export function pluginPodsReady(ds: DaemonSetView): boolean {
  const s = ds.status;
  if (!s || (s.observedGeneration ?? 0) < (ds.metadata.generation ?? 1)) return false;
  const desired = s.desiredNumberScheduled ?? 0;
  return desired > 0 && [s.currentNumberScheduled, s.updatedNumberScheduled, s.numberReady, s.numberAvailable].every((n) => n === desired);
}

/** Why the plugin's pods are not ready: the first waiting container of its pods, with its last error. */
export async function pluginTrouble(kube: KubeClient, cni: CniName, ds: DaemonSetView): Promise<string | undefined> {
  const selector = Object.entries(ds.spec?.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(",");
  if (!selector) return undefined;
  const pods = await kube.listAll<PodView>(`/api/v1/namespaces/${CNI_DAEMONSETS[cni].namespace}/pods`, { labelSelector: selector });
  for (const pod of pods) {
    const container = pod.status?.containerStatuses?.find((c) => !c.ready && c.state?.waiting);
    if (!container) continue;
    const waiting = container.state!.waiting!;
    const last = container.lastState?.terminated?.message;
    return `pod ${pod.metadata.name} on node ${pod.spec?.nodeName ?? "?"}: ${container.name} ${waiting.reason ?? "waiting"}${last ? `: ${last}` : waiting.message ? `: ${waiting.message}` : ""}`;
  }
  return undefined;
}

/** The NetworkPluginInstalled condition the DaemonSet's status supports (with why not, when known). */
export function networkPluginCondition(cni: CniName, ds: DaemonSetView, trouble?: string): ConditionInput {
  const { namespace, name } = CNI_DAEMONSETS[cni];
  const s = ds.status ?? {};
  const counts = `${s.numberReady ?? 0}/${s.desiredNumberScheduled ?? 0} pods of DaemonSet ${namespace}/${name} ready`;
  if (pluginPodsReady(ds)) return { type: CONDITION_NETWORK_PLUGIN_INSTALLED, status: "True", reason: "PodsReady", message: `${cni}: ${counts}` };
  const observed = (s.observedGeneration ?? 0) >= (ds.metadata.generation ?? 1);
  return {
    type: CONDITION_NETWORK_PLUGIN_INSTALLED,
    status: "False",
    reason: observed ? "PodsNotReady" : "RollingOut",
    message: `${cni}: ${observed ? counts : "its DaemonSet has not reported on the current generation yet"}${trouble ? `; ${trouble}` : ""}`,
  };
}
