// The objects kubeadm, the kubelet and the controller manager would create in a workload cluster: the
// Node of a machine, the control plane's static pods, kube-proxy, CoreDNS, the bootstrap token and the
// cluster-info ConfigMap. Pure builders; cluster.ts writes them.
import { createHash } from "node:crypto";
import { stringify } from "yaml";
import { formatIPv4, parseCidr } from "../../api/cidr.ts";
import type { KubeObject } from "../../api/meta.ts";
import type { PodSpecView } from "./kinds-podspec.ts";
import type { NodeObject, PodObject } from "./kinds.ts";
import { daemonTolerations } from "./scheduling.ts";

export const CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane";
export const EXCLUDE_FROM_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers";
export const NOT_READY_TAINT = "node.kubernetes.io/not-ready";
export const UNREACHABLE_TAINT = "node.kubernetes.io/unreachable";
/** Put on the node of a machine that is shut down (stopped, not gone) by the cloud node-lifecycle controller. */
export const SHUTDOWN_TAINT = "node.cloudprovider.kubernetes.io/shutdown";
const NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** What a node is made of: the machine under it and what kubeadm registers. */
export interface NodeFacts {
  name: string;
  controlPlane: boolean;
  providerID: string;
  internalIp: string;
  externalIp?: string;
  podCidr: string;
  kubeletVersion: string;
  containerRuntime: string;
  vcpus: number;
  memoryMiB: number;
  machineType: string;
  region: string;
  zone: string;
  /** Labels the kubelet registers with (its --node-labels). */
  labels: Record<string, string>;
  /** Taints the node registers with (nodeRegistration.taints); control-plane default when absent. */
  taints?: { key: string; value?: string; effect: string }[];
}

export type NodeStatus = NonNullable<NodeObject["status"]>;
export type PodStatus = NonNullable<PodObject["status"]>;
type NodeCondition = NonNullable<NodeStatus["conditions"]>[number];
type Taint = NonNullable<NonNullable<NodeObject["spec"]>["taints"]>[number];

/** A short, stable name suffix (as generated names look) derived from `seed`. */
export function nameSuffix(seed: string, length = 5): string {
  const digest = createHash("sha256").update(seed).digest();
  let out = "";
  for (let i = 0; i < length; i++) out += NAME_ALPHABET[digest[i]! % NAME_ALPHABET.length];
  return out;
}

/** The n-th /24 of the pod range (the node IPAM of the controller manager). */
export function nodePodCidr(podSubnet: string, index: number): string {
  const range = parseCidr(podSubnet);
  return `${formatIPv4(range.base + index * 256)}/24`;
}

/** An address inside a node's pod range (.0 is the network, .1 the bridge). */
export function podAddress(podCidr: string, offset: number): string {
  return formatIPv4(parseCidr(podCidr).base + 2 + offset);
}

export function nodeObject(facts: NodeFacts): KubeObject {
  const labels: Record<string, string> = {
    "beta.kubernetes.io/arch": "amd64",
    "beta.kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/hostname": facts.name,
    "kubernetes.io/os": "linux",
    "node.kubernetes.io/instance-type": facts.machineType,
    "topology.kubernetes.io/region": facts.region,
    "topology.kubernetes.io/zone": facts.zone,
    ...(facts.controlPlane ? { [CONTROL_PLANE_LABEL]: "", [EXCLUDE_FROM_LB_LABEL]: "" } : {}),
    ...facts.labels,
  };
  const registered = facts.taints as Taint[] | undefined;
  const taints: Taint[] = registered ?? (facts.controlPlane ? [{ key: CONTROL_PLANE_LABEL, effect: "NoSchedule" }] : []);
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: facts.name,
      labels,
      annotations: {
        "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///var/run/containerd/containerd.sock",
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
      },
    },
    spec: { podCIDR: facts.podCidr, podCIDRs: [facts.podCidr], providerID: facts.providerID, taints: [...taints, { key: NOT_READY_TAINT, effect: "NoSchedule" }] },
  };
}

function condition(type: string, status: NodeCondition["status"], reason: string, message: string, at: string): NodeCondition {
  return { type, status, reason, message, lastHeartbeatTime: at, lastTransitionTime: at };
}

/** Node conditions as a kubelet reports them: ready, waiting for the network plugin, or silent. */
export function nodeConditions(state: "ready" | "network-not-ready" | "unknown", at: string): NodeCondition[] {
  if (state === "unknown") {
    const silent = "Kubelet stopped posting node status.";
    return ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"].map((type) => condition(type, "Unknown", "NodeStatusUnknown", silent, at));
  }
  return [
    condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available", at),
    condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", at),
    condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available", at),
    state === "ready"
      ? condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", at)
      : condition(
          "Ready",
          "False",
          "KubeletNotReady",
          "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
          at,
        ),
  ];
}

export function nodeStatus(facts: NodeFacts, at: string): NodeStatus {
  const memoryKi = facts.memoryMiB * 1024;
  return {
    conditions: nodeConditions("network-not-ready", at),
    addresses: [{ type: "InternalIP", address: facts.internalIp }, ...(facts.externalIp ? [{ type: "ExternalIP" as const, address: facts.externalIp }] : []), { type: "Hostname", address: facts.name }],
    nodeInfo: {
      machineID: createHash("md5").update(facts.providerID).digest("hex"),
      systemUUID: createHash("md5").update(`uuid/${facts.providerID}`).digest("hex"),
      kernelVersion: "5.15.0-119-generic",
      osImage: "Ubuntu 22.04.4 LTS",
      containerRuntimeVersion: facts.containerRuntime,
      kubeletVersion: facts.kubeletVersion,
      kubeProxyVersion: facts.kubeletVersion,
      operatingSystem: "linux",
      architecture: "amd64",
    },
    capacity: { cpu: String(facts.vcpus), memory: `${memoryKi}Ki`, pods: "110", "ephemeral-storage": "30428648Ki" },
    allocatable: { cpu: String(facts.vcpus), memory: `${Math.max(0, memoryKi - 102400)}Ki`, pods: "110", "ephemeral-storage": "28043041951" },
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
  };
}

/**
 * Taints as the node-lifecycle controller keeps them: none of its own on a Ready node, not-ready on a
 * node whose network is not ready, unreachable (NoSchedule and NoExecute) on a silent node, and the
 * cloud's shutdown taint besides on a machine that is shut down.
 */
export function taintsFor(current: Taint[], state: "ready" | "network-not-ready" | "unknown" | "shutdown", at: string): Taint[] {
  const kept = current.filter((t) => t.key !== NOT_READY_TAINT && t.key !== UNREACHABLE_TAINT && t.key !== SHUTDOWN_TAINT);
  switch (state) {
    case "ready":
      return kept;
    case "network-not-ready":
      return [...kept, { key: NOT_READY_TAINT, effect: "NoSchedule" }];
    case "unknown":
      return [...kept, { key: UNREACHABLE_TAINT, effect: "NoSchedule" }, { key: UNREACHABLE_TAINT, effect: "NoExecute", timeAdded: at }];
    case "shutdown":
      return [...kept, { key: UNREACHABLE_TAINT, effect: "NoSchedule" }, { key: UNREACHABLE_TAINT, effect: "NoExecute", timeAdded: at }, { key: SHUTDOWN_TAINT, effect: "NoSchedule" }];
  }
}

// ---- pods ----

export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

function pod(name: string, namespace: string, labels: Record<string, string>, spec: Record<string, unknown>, owner?: OwnerRef, annotations?: Record<string, string>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      labels,
      ...(annotations ? { annotations } : {}),
      ...(owner ? { ownerReferences: [{ ...owner, controller: true, blockOwnerDeletion: true }] } : {}),
    },
    spec,
  };
}

/** Status of a pod whose containers all run and are ready. */
export function runningPodStatus(containers: { name: string; image: string }[], hostIp: string, podIp: string, at: string): PodStatus {
  return {
    phase: "Running",
    conditions: ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"].map((type) => ({ type, status: "True" as const, lastTransitionTime: at })),
    hostIP: hostIp,
    podIP: podIp,
    podIPs: [{ ip: podIp }],
    startTime: at,
    qosClass: "Burstable",
    containerStatuses: containers.map((c) => ({
      name: c.name,
      image: c.image,
      imageID: `${c.image.split(":")[0]}@sha256:${createHash("sha256").update(c.image).digest("hex")}`,
      containerID: `containerd://${createHash("sha256").update(`${podIp}/${c.name}/${at}`).digest("hex")}`,
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: at } },
    })),
  };
}

/** Status of a pod whose containers all exited 0 (the pod of a Job, done). */
export function succeededPodStatus(running: PodStatus, at: string): PodStatus {
  const completed = (type: string) => ({ type, status: "False" as const, reason: "PodCompleted", lastTransitionTime: at });
  return {
    ...running,
    phase: "Succeeded",
    conditions: [completed("PodReadyToStartContainers"), { type: "Initialized", status: "True", reason: "PodCompleted", lastTransitionTime: at }, completed("Ready"), completed("ContainersReady"), { type: "PodScheduled", status: "True", lastTransitionTime: at }],
    containerStatuses: (running.containerStatuses ?? []).map((c) => {
      const startedAt = (c.state as { running?: { startedAt?: string } } | undefined)?.running?.startedAt ?? at;
      return { ...c, ready: false, started: false, state: { terminated: { exitCode: 0, reason: "Completed", startedAt, finishedAt: at, containerID: c.containerID } } };
    }),
  };
}

/** Status of a pod the scheduler cannot place yet. */
export function unschedulablePodStatus(message: string, at: string): PodStatus {
  return { phase: "Pending", qosClass: "Burstable", conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message, lastTransitionTime: at }] };
}

/** Status of a placed pod whose containers wait (ContainerCreating while the node's network is not ready). */
export function waitingPodStatus(containers: { name: string; image: string }[], reason: string, message: string | undefined, at: string, hostIp?: string): PodStatus {
  return {
    phase: "Pending",
    qosClass: "Burstable",
    ...(hostIp ? { hostIP: hostIp } : {}),
    startTime: at,
    conditions: [
      { type: "PodScheduled", status: "True", lastTransitionTime: at },
      { type: "Initialized", status: "True", lastTransitionTime: at },
      { type: "ContainersReady", status: "False", reason: "ContainersNotReady", message: `containers with unready status: [${containers.map((c) => c.name).join(" ")}]`, lastTransitionTime: at },
      { type: "Ready", status: "False", reason: "ContainersNotReady", message: `containers with unready status: [${containers.map((c) => c.name).join(" ")}]`, lastTransitionTime: at },
    ],
    containerStatuses: containers.map((c) => ({ name: c.name, image: c.image, ready: false, started: false, restartCount: 0, state: { waiting: { reason, ...(message ? { message } : {}) } } })),
  };
}

/** Status of a pod whose container `failing` keeps exiting with `message` (the kubelet backs off restarting it). */
export function crashingPodStatus(containers: { name: string; image: string }[], failing: string, message: string, restarts: number, hostIp: string, at: string): PodStatus {
  const running = runningPodStatus(containers, hostIp, hostIp, at);
  const notReady = `containers with unready status: [${failing}]`;
  return {
    ...running,
    conditions: running.conditions!.map((c) => (c.type === "Ready" || c.type === "ContainersReady" ? { ...c, status: "False" as const, reason: "ContainersNotReady", message: notReady } : c)),
    containerStatuses: running.containerStatuses!.map((c) =>
      c.name !== failing
        ? c
        : {
            ...c,
            ready: false,
            started: false,
            restartCount: restarts,
            state: { waiting: { reason: "CrashLoopBackOff", message: `back-off restarting failed container ${failing}` } },
            lastState: { terminated: { exitCode: 1, reason: "Error", message, startedAt: at, finishedAt: at } },
          },
    ),
  };
}

export interface PodPlan {
  object: KubeObject;
  containers: { name: string; image: string }[];
}

const CONTROL_PLANE_COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

function componentImage(component: (typeof CONTROL_PLANE_COMPONENTS)[number], version: string): string {
  return component === "etcd" ? "registry.k8s.io/etcd:3.5.15-0" : `registry.k8s.io/${component}:${version}`;
}

/** The mirror pods of the static pods kubeadm writes on a control-plane node. */
export function staticPods(nodeName: string, node: OwnerRef, version: string, hostIp: string): PodPlan[] {
  return CONTROL_PLANE_COMPONENTS.map((component) => {
    const containers = [{ name: component, image: componentImage(component, version) }];
    const spec = { nodeName, hostNetwork: true, priorityClassName: "system-node-critical", containers, tolerations: [{ operator: "Exists", effect: "NoExecute" }] };
    const annotations = { "kubernetes.io/config.source": "file", "kubernetes.io/config.mirror": nameSuffix(`${nodeName}/${component}`, 32) };
    if (component === "kube-apiserver") Object.assign(annotations, { "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint": `${hostIp}:6443` });
    return { object: pod(`${component}-${nodeName}`, "kube-system", { component, tier: "control-plane" }, spec, node, annotations), containers };
  });
}

/** The pod a DaemonSet runs on one node: its template, bound to the node, with the controller's tolerations. */
export function daemonPod(daemonSet: OwnerRef & { namespace: string }, labels: Record<string, string>, template: PodSpecView, nodeName: string): PodPlan {
  const { namespace, ...owner } = daemonSet;
  const spec = { ...structuredClone(template), nodeName, tolerations: [...(template.tolerations ?? []), ...daemonTolerations(template.hostNetwork === true)] };
  const containers = template.containers.map((c) => ({ name: c.name, image: c.image ?? "" }));
  return { object: pod(`${owner.name}-${nameSuffix(`${owner.name}/${nodeName}`)}`, namespace, labels, spec, owner), containers };
}

/** A pod of a workload's template (a Deployment's, a Job's), not placed yet. */
export function templatePod(workload: OwnerRef & { namespace: string }, name: string, labels: Record<string, string>, template: PodSpecView): PodPlan {
  const { namespace, ...owner } = workload;
  const containers = template.containers.map((c) => ({ name: c.name, image: c.image ?? "" }));
  return { object: pod(name, namespace, labels, structuredClone(template) as unknown as Record<string, unknown>, owner), containers };
}

// ---- add-ons and cluster data ----

export const KUBE_PROXY_LABELS = { "k8s-app": "kube-proxy" };
export const COREDNS_LABELS = { "k8s-app": "kube-dns" };
export const COREDNS_IMAGE = "registry.k8s.io/coredns/coredns:v1.11.3";
export const COREDNS_REPLICAS = 2;

export function kubeProxyImage(version: string): string {
  return `registry.k8s.io/kube-proxy:${version}`;
}

function workload(kind: "DaemonSet" | "Deployment", name: string, labels: Record<string, string>, podSpec: Record<string, unknown>, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind,
    metadata: { name, namespace: "kube-system", labels },
    spec: { ...extra, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: podSpec } },
  };
}

/** kube-proxy, as `kubeadm init` installs it: on the host network of every node. */
export function kubeProxyDaemonSet(version: string): KubeObject {
  return workload("DaemonSet", "kube-proxy", KUBE_PROXY_LABELS, {
    containers: [{ name: "kube-proxy", image: kubeProxyImage(version), command: ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"], securityContext: { privileged: true } }],
    hostNetwork: true,
    priorityClassName: "system-node-critical",
    serviceAccountName: "kube-proxy",
    nodeSelector: { "kubernetes.io/os": "linux" },
    tolerations: [{ operator: "Exists" }],
  });
}

/** CoreDNS, as `kubeadm init` installs it: it waits for a node whose network is ready. */
export function corednsDeployment(): KubeObject {
  return workload(
    "Deployment",
    "coredns",
    COREDNS_LABELS,
    {
      containers: [{ name: "coredns", image: COREDNS_IMAGE, args: ["-conf", "/etc/coredns/Corefile"], ports: [{ containerPort: 53, name: "dns", protocol: "UDP" }, { containerPort: 53, name: "dns-tcp", protocol: "TCP" }] }],
      priorityClassName: "system-cluster-critical",
      serviceAccountName: "coredns",
      nodeSelector: { "kubernetes.io/os": "linux" },
      tolerations: [{ key: "CriticalAddonsOnly", operator: "Exists" }, { key: CONTROL_PLANE_LABEL, effect: "NoSchedule" }],
    },
    { replicas: COREDNS_REPLICAS, strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } } },
  );
}

/** The bootstrap token Secret kubeadm init creates (type bootstrap.kubernetes.io/token). */
export function bootstrapTokenSecret(token: string, expiresAtMs: number | undefined): KubeObject {
  const [id, secret] = token.split(".") as [string, string];
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system" },
    type: "bootstrap.kubernetes.io/token",
    stringData: {
      description: "Bootstrap token generated by 'kubeadm init'.",
      "token-id": id,
      "token-secret": secret,
      ...(expiresAtMs === undefined ? {} : { expiration: new Date(expiresAtMs).toISOString().replace(/\.\d{3}Z$/, "Z") }),
      "usage-bootstrap-authentication": "true",
      "usage-bootstrap-signing": "true",
      "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
    },
  };
}

/** The kubeconfig in cluster-info: the endpoint and CA, no credentials. */
export function clusterInfoKubeconfig(endpoint: string, caCertPem: string): string {
  return stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "", cluster: { server: `https://${endpoint}`, "certificate-authority-data": Buffer.from(caCertPem).toString("base64") } }],
      contexts: null,
      "current-context": "",
      preferences: {},
      users: null,
    },
    { lineWidth: 0 },
  );
}

export function configMap(name: string, namespace: string, data: Record<string, string>): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data };
}
