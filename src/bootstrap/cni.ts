// Network plugin (CNI) manifests a cluster applies once its control plane is initialised: the upstream
// objects of Calico, Flannel and Cilium reduced to what installs the plugin — its account and
// permissions, its configuration carrying the cluster's pod range, and the DaemonSet that runs it on
// every node (named as upstream names it, which is how the sim cloud recognises a network plugin).
import { parseCidr } from "../api/cidr.ts";
import type { KubeObject } from "../api/meta.ts";

export type CniName = "calico" | "flannel" | "cilium";

export const CNI_NAMES: readonly CniName[] = ["calico", "flannel", "cilium"];

/** Where each plugin's DaemonSet lives, as its upstream manifest puts it. */
export const CNI_DAEMONSETS: Readonly<Record<CniName, { namespace: string; name: string }>> = {
  calico: { namespace: "kube-system", name: "calico-node" },
  flannel: { namespace: "kube-flannel", name: "kube-flannel-ds" },
  cilium: { namespace: "kube-system", name: "cilium" },
};

const VERSIONS: Record<CniName, string> = { calico: "v3.28.2", flannel: "v0.25.7", cilium: "v1.16.3" };

export class CniManifestError extends Error {
  override readonly name = "CniManifestError";
}

export interface CniOptions {
  /** The cluster's pod range, e.g. 10.244.0.0/16. */
  podCIDR: string;
}

function object(apiVersion: string, kind: string, name: string, namespace: string | undefined, body: Record<string, unknown>, labels?: Record<string, string>): KubeObject {
  return { apiVersion, kind, metadata: { name, ...(namespace ? { namespace } : {}), ...(labels ? { labels } : {}) }, ...body };
}

/** ServiceAccount, ClusterRole and ClusterRoleBinding of a plugin's agent. */
function agentIdentity(name: string, namespace: string, rules: Record<string, unknown>[]): KubeObject[] {
  return [
    object("v1", "ServiceAccount", name, namespace, {}),
    object("rbac.authorization.k8s.io/v1", "ClusterRole", name, undefined, { rules }),
    object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", name, undefined, {
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [{ kind: "ServiceAccount", name, namespace }],
    }),
  ];
}

const READ_NODES_AND_PODS = [
  { apiGroups: [""], resources: ["pods", "nodes", "namespaces", "services", "endpoints", "configmaps"], verbs: ["get", "list", "watch"] },
  { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch", "update"] },
];

/** Tolerates every taint, as node agents do, so the plugin runs on control-plane and unready nodes alike. */
const TOLERATE_ALL = [
  { operator: "Exists", effect: "NoSchedule" },
  { operator: "Exists", effect: "NoExecute" },
  { key: "CriticalAddonsOnly", operator: "Exists" },
];

function daemonSet(
  cni: CniName,
  appLabel: Record<string, string>,
  serviceAccountName: string,
  containers: Record<string, unknown>[],
  extra: { initContainers?: Record<string, unknown>[]; volumes?: Record<string, unknown>[] } = {},
): KubeObject {
  const { namespace, name } = CNI_DAEMONSETS[cni];
  return object(
    "apps/v1",
    "DaemonSet",
    name,
    namespace,
    {
      spec: {
        selector: { matchLabels: appLabel },
        updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
        template: {
          metadata: { labels: appLabel },
          spec: {
            hostNetwork: true,
            priorityClassName: "system-node-critical",
            serviceAccountName,
            nodeSelector: { "kubernetes.io/os": "linux" },
            tolerations: TOLERATE_ALL,
            ...(extra.initContainers ? { initContainers: extra.initContainers } : {}),
            containers,
            ...(extra.volumes ? { volumes: extra.volumes } : {}),
          },
        },
      },
    },
    appLabel,
  );
}

function hostPath(name: string, path: string): Record<string, unknown> {
  return { name, hostPath: { path } };
}

function calico(podCIDR: string): KubeObject[] {
  const image = (component: string) => `docker.io/calico/${component}:${VERSIONS.calico}`;
  const cniConfig = {
    name: "k8s-pod-network",
    cniVersion: "0.3.1",
    plugins: [
      { type: "calico", datastore_type: "kubernetes", nodename: "__KUBERNETES_NODE_NAME__", mtu: "__CNI_MTU__", ipam: { type: "calico-ipam" }, policy: { type: "k8s" }, kubernetes: { kubeconfig: "__KUBECONFIG_FILEPATH__" } },
      { type: "portmap", snat: true, capabilities: { portMappings: true } },
    ],
  };
  return [
    ...agentIdentity("calico-node", "kube-system", [...READ_NODES_AND_PODS, { apiGroups: ["crd.projectcalico.org"], resources: ["*"], verbs: ["*"] }]),
    object("v1", "ConfigMap", "calico-config", "kube-system", {
      data: { typha_service_name: "none", calico_backend: "bird", veth_mtu: "0", cni_network_config: JSON.stringify(cniConfig, null, 2), ipv4_pool_cidr: podCIDR },
    }),
    daemonSet(
      "calico",
      { "k8s-app": "calico-node" },
      "calico-node",
      [
        {
          name: "calico-node",
          image: image("node"),
          env: [
            { name: "DATASTORE_TYPE", value: "kubernetes" },
            { name: "CALICO_NETWORKING_BACKEND", valueFrom: { configMapKeyRef: { name: "calico-config", key: "calico_backend" } } },
            { name: "CALICO_IPV4POOL_CIDR", value: podCIDR },
            { name: "CALICO_IPV4POOL_IPIP", value: "Always" },
            { name: "IP", value: "autodetect" },
          ],
          securityContext: { privileged: true },
          volumeMounts: [{ name: "var-run-calico", mountPath: "/var/run/calico" }],
        },
      ],
      {
        initContainers: [
          { name: "install-cni", image: image("cni"), command: ["/opt/cni/bin/install"], env: [{ name: "CNI_NETWORK_CONFIG", valueFrom: { configMapKeyRef: { name: "calico-config", key: "cni_network_config" } } }], volumeMounts: [{ name: "cni-net-dir", mountPath: "/host/etc/cni/net.d" }, { name: "cni-bin-dir", mountPath: "/host/opt/cni/bin" }] },
        ],
        volumes: [hostPath("var-run-calico", "/var/run/calico"), hostPath("cni-bin-dir", "/opt/cni/bin"), hostPath("cni-net-dir", "/etc/cni/net.d")],
      },
    ),
  ];
}

function flannel(podCIDR: string): KubeObject[] {
  const namespace = "kube-flannel";
  const cniConf = { name: "cbr0", cniVersion: "0.3.1", plugins: [{ type: "flannel", delegate: { hairpinMode: true, isDefaultGateway: true } }, { type: "portmap", capabilities: { portMappings: true } }] };
  const netConf = { Network: podCIDR, EnableNFTables: false, Backend: { Type: "vxlan" } };
  const labels = { app: "flannel", "k8s-app": "flannel", tier: "node" };
  return [
    object("v1", "Namespace", namespace, undefined, {}, { "k8s-app": "flannel", "pod-security.kubernetes.io/enforce": "privileged" }),
    ...agentIdentity("flannel", namespace, [{ apiGroups: [""], resources: ["pods", "nodes"], verbs: ["get", "list", "watch"] }, { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"] }]),
    object("v1", "ConfigMap", "kube-flannel-cfg", namespace, { data: { "cni-conf.json": JSON.stringify(cniConf, null, 2), "net-conf.json": JSON.stringify(netConf, null, 2) } }, labels),
    daemonSet(
      "flannel",
      labels,
      "flannel",
      [
        {
          name: "kube-flannel",
          image: `docker.io/flannel/flannel:${VERSIONS.flannel}`,
          command: ["/opt/bin/flanneld"],
          args: ["--ip-masq", "--kube-subnet-mgr"],
          env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }, { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } }],
          securityContext: { privileged: false, capabilities: { add: ["NET_ADMIN", "NET_RAW"] } },
          volumeMounts: [{ name: "run", mountPath: "/run/flannel" }, { name: "flannel-cfg", mountPath: "/etc/kube-flannel/" }],
        },
      ],
      {
        initContainers: [
          { name: "install-cni-plugin", image: "docker.io/flannel/flannel-cni-plugin:v1.5.1-flannel2", command: ["cp"], args: ["-f", "/flannel", "/opt/cni/bin/flannel"], volumeMounts: [{ name: "cni-plugin", mountPath: "/opt/cni/bin" }] },
          { name: "install-cni", image: `docker.io/flannel/flannel:${VERSIONS.flannel}`, command: ["cp"], args: ["-f", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"], volumeMounts: [{ name: "cni", mountPath: "/etc/cni/net.d" }, { name: "flannel-cfg", mountPath: "/etc/kube-flannel/" }] },
        ],
        volumes: [hostPath("run", "/run/flannel"), hostPath("cni-plugin", "/opt/cni/bin"), hostPath("cni", "/etc/cni/net.d"), { name: "flannel-cfg", configMap: { name: "kube-flannel-cfg" } }],
      },
    ),
  ];
}

function cilium(podCIDR: string): KubeObject[] {
  const image = `quay.io/cilium/cilium:${VERSIONS.cilium}`;
  return [
    ...agentIdentity("cilium", "kube-system", [...READ_NODES_AND_PODS, { apiGroups: ["cilium.io"], resources: ["*"], verbs: ["*"] }]),
    object("v1", "ConfigMap", "cilium-config", "kube-system", {
      data: { ipam: "cluster-pool", "cluster-pool-ipv4-cidr": podCIDR, "cluster-pool-ipv4-mask-size": "24", "routing-mode": "tunnel", "tunnel-protocol": "vxlan", "enable-ipv4": "true", "enable-ipv6": "false" },
    }),
    daemonSet(
      "cilium",
      { "k8s-app": "cilium", "app.kubernetes.io/name": "cilium-agent", "app.kubernetes.io/part-of": "cilium" },
      "cilium",
      [
        {
          name: "cilium-agent",
          image,
          command: ["cilium-agent"],
          args: ["--config-dir=/tmp/cilium/config-map"],
          securityContext: { capabilities: { add: ["NET_ADMIN", "SYS_MODULE", "SYS_ADMIN", "SYS_RESOURCE"] } },
          volumeMounts: [{ name: "cilium-config-path", mountPath: "/tmp/cilium/config-map", readOnly: true }],
        },
      ],
      {
        initContainers: [{ name: "install-cni-binaries", image, command: ["/install-plugin.sh"], volumeMounts: [{ name: "cni-path", mountPath: "/host/opt/cni/bin" }] }],
        volumes: [hostPath("cni-path", "/opt/cni/bin"), { name: "cilium-config-path", configMap: { name: "cilium-config" } }],
      },
    ),
  ];
}

/** The objects that install `cni` for a cluster whose pods use `podCIDR`, in the order to apply them. */
export function renderCniManifest(cni: CniName, options: CniOptions): KubeObject[] {
  try {
    parseCidr(options.podCIDR);
  } catch (error) {
    throw new CniManifestError(`pod CIDR for ${cni}: ${(error as Error).message}`, { cause: error });
  }
  switch (cni) {
    case "calico":
      return calico(options.podCIDR);
    case "flannel":
      return flannel(options.podCIDR);
    case "cilium":
      return cilium(options.podCIDR);
    default:
      throw new CniManifestError(`unknown network plugin "${String(cni)}" (${CNI_NAMES.join(", ")})`);
  }
}
