// The network plugins the emulated kubelets know: each is recognised by its DaemonSet (named as the
// upstream manifests name it) and reads its pod range where the real plugin reads it — Calico from its
// node container's CALICO_IPV4POOL_CIDR, Flannel from net-conf.json in kube-flannel-cfg, Cilium from
// cluster-pool-ipv4-cidr in cilium-config. A plugin whose range does not hold a node's pod range fails on
// that node the way the plugin fails, and the node stays NotReady.
import { cidrContains, parseCidr } from "../../api/cidr.ts";
import type { KubeObject } from "../../api/meta.ts";

export type NetworkPluginName = "calico" | "flannel" | "cilium";

interface PluginDefinition {
  name: NetworkPluginName;
  namespace: string;
  daemonSet: string;
  /** The container that fails when the configuration is wrong. */
  container: string;
  /** Where the pod range lives, for messages. */
  source: string;
}

export const NETWORK_PLUGINS: readonly PluginDefinition[] = [
  { name: "calico", namespace: "kube-system", daemonSet: "calico-node", container: "calico-node", source: "CALICO_IPV4POOL_CIDR" },
  { name: "flannel", namespace: "kube-flannel", daemonSet: "kube-flannel-ds", container: "kube-flannel", source: "net-conf.json Network" },
  { name: "cilium", namespace: "kube-system", daemonSet: "cilium", container: "cilium-agent", source: "cluster-pool-ipv4-cidr" },
];

export function networkPluginOf(namespace: string | undefined, name: string | undefined): PluginDefinition | undefined {
  return NETWORK_PLUGINS.find((p) => p.namespace === namespace && p.daemonSet === name);
}

/** Reads a ConfigMap's data by namespace and name. */
export type ConfigMapReader = (namespace: string, name: string) => Promise<Record<string, string> | undefined>;

interface EnvView {
  name: string;
  value?: string;
  valueFrom?: { configMapKeyRef?: { name?: string; key: string } };
}

interface DaemonSetView {
  spec?: { template?: { spec?: { containers?: { name: string; env?: EnvView[] }[] } } };
}

/** The plugin's pod range, or why it has none (a message as the plugin logs it). */
export async function pluginPodRange(plugin: PluginDefinition, ds: KubeObject, readConfigMap: ConfigMapReader): Promise<{ cidr: string } | { error: string }> {
  switch (plugin.name) {
    case "calico": {
      const container = (ds as DaemonSetView).spec?.template?.spec?.containers?.find((c) => c.name === plugin.container);
      const env = container?.env?.find((e) => e.name === "CALICO_IPV4POOL_CIDR");
      let value = env?.value;
      const ref = env?.valueFrom?.configMapKeyRef;
      if (ref?.name) value = (await readConfigMap(plugin.namespace, ref.name))?.[ref.key];
      return value ? { cidr: value } : { error: "CALICO_IPV4POOL_CIDR is not set and no IP pool exists: calico-node cannot assign pod addresses" };
    }
    case "flannel": {
      const data = await readConfigMap(plugin.namespace, "kube-flannel-cfg");
      const text = data?.["net-conf.json"];
      if (text === undefined) return { error: "failed to read net conf: open /etc/kube-flannel/net-conf.json: no such file or directory" };
      try {
        const network = (JSON.parse(text) as { Network?: unknown }).Network;
        return typeof network === "string" ? { cidr: network } : { error: "failed to parse net conf: missing Network" };
      } catch (error) {
        return { error: `failed to parse net conf: ${(error as Error).message}` };
      }
    }
    case "cilium": {
      const value = (await readConfigMap(plugin.namespace, "cilium-config"))?.["cluster-pool-ipv4-cidr"];
      return value ? { cidr: value } : { error: "unable to initialize IPAM: cluster-pool-ipv4-cidr is not set" };
    }
  }
}

/** Why the plugin cannot serve a node whose pod range is `nodeCidr` (undefined: it can). */
export function pluginFailureOnNode(plugin: PluginDefinition, range: { cidr: string } | { error: string }, nodeName: string, nodeCidr: string): string | undefined {
  if ("error" in range) return range.error;
  try {
    parseCidr(range.cidr);
  } catch {
    return `invalid pod range ${JSON.stringify(range.cidr)} in ${plugin.source}`;
  }
  if (cidrContains(range.cidr, nodeCidr)) return undefined;
  switch (plugin.name) {
    case "flannel":
      return `Error registering network: failed to acquire lease: subnet "${range.cidr}" specified in the flannel net config doesn't contain "${nodeCidr}" PodCIDR of the "${nodeName}" node`;
    case "calico":
      return `the IP pool ${range.cidr} (CALICO_IPV4POOL_CIDR) does not contain ${nodeCidr}, the pod CIDR of node "${nodeName}": pods would get addresses outside the cluster's pod range`;
    case "cilium":
      return `cluster-pool-ipv4-cidr ${range.cidr} does not contain ${nodeCidr}, the pod CIDR of node "${nodeName}"`;
  }
}
