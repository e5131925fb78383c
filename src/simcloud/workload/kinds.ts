// The kinds an emulated workload cluster serves: core v1 Node and Pod here, the other core, apps and
// policy kinds beside this file, and Namespace, Secret, Event and the RBAC kinds shared with Slipway's own
// API. Schemas are lighter than Kubernetes' own but structural: what controllers and kubectl read is
// typed, and pod specs have the PodSpec shape (kinds-podspec.ts), unknown fields refused.
import { Type } from "@sinclair/typebox";
import { ageColumn, computedColumn, fieldColumn } from "../../api/columns.ts";
import { configMapKind, eventKind, namespaceKind, secretKind } from "../../api/core.ts";
import { FreeForm, MapOf, StringEnum, Struct, objectSchema, type KubeObject, type ObjectOf } from "../../api/meta.ts";
import { Registry, type KindDefinition } from "../../api/registry.ts";
import { daemonSetKind, deploymentKind } from "./kinds-apps.ts";
import { jobKind } from "./kinds-batch.ts";
import { PodSpec, podSpecErrors, type PodSpecView } from "./kinds-podspec.ts";
import { podDisruptionBudgetKind } from "./kinds-policy.ts";
import { serviceKind } from "./kinds-service.ts";
import { resourceQuotaKind, serviceAccountKind } from "./kinds-config.ts";
import { certificateSigningRequestKind } from "./certificates.ts";
import { rbacKinds } from "../../api/rbac.ts";

const CORE = { group: "", version: "v1" } as const;

// ---------------------------------------------------------------------------------------------------------
// Node

export const TaintSchema = Struct(
  {
    key: Type.String({ description: "The taint key, e.g. node-role.kubernetes.io/control-plane." }),
    value: Type.Optional(Type.String({ description: "The taint value." })),
    effect: StringEnum(["NoSchedule", "PreferNoSchedule", "NoExecute"], { description: "What happens to pods that do not tolerate the taint." }),
    timeAdded: Type.Optional(Type.String({ description: "When a NoExecute taint was added (RFC 3339)." })),
  },
  { description: "A taint: pods that do not tolerate it are kept off the node." },
);

const NodeConditionSchema = Struct(
  {
    type: Type.String({ description: "Ready, MemoryPressure, DiskPressure, PIDPressure or NetworkUnavailable." }),
    status: StringEnum(["True", "False", "Unknown"], { description: "True, False or Unknown." }),
    reason: Type.Optional(Type.String({ description: "One-word CamelCase reason for the last transition." })),
    message: Type.Optional(Type.String({ description: "Human-readable details." })),
    lastHeartbeatTime: Type.Optional(Type.String({ description: "When the kubelet last reported the condition (RFC 3339)." })),
    lastTransitionTime: Type.Optional(Type.String({ description: "When the status last changed (RFC 3339)." })),
  },
  { description: "One aspect of the node's state, as its kubelet reports it." },
);

const NodeInfoSchema = Struct(
  {
    machineID: Type.Optional(Type.String({ description: "Machine id reported by the node." })),
    systemUUID: Type.Optional(Type.String({ description: "System UUID reported by the node." })),
    bootID: Type.Optional(Type.String({ description: "Boot id reported by the node." })),
    kernelVersion: Type.String({ description: "Kernel version (uname -r)." }),
    osImage: Type.String({ description: "Operating system image, e.g. Ubuntu 22.04.4 LTS." }),
    containerRuntimeVersion: Type.String({ description: "Container runtime and version, e.g. containerd://1.7.12." }),
    kubeletVersion: Type.String({ description: "Kubelet version, e.g. v1.31.2." }),
    kubeProxyVersion: Type.Optional(Type.String({ description: "Deprecated: kube-proxy version." })),
    operatingSystem: Type.String({ description: "Operating system, e.g. linux." }),
    architecture: Type.String({ description: "CPU architecture, e.g. amd64." }),
  },
  { description: "Versions and platform of the node." },
);

export const NodeSchema = objectSchema("v1", "Node", "A machine that runs pods, registered by its kubelet.", {
  spec: Type.Optional(
    Struct(
      {
        podCIDR: Type.Optional(Type.String({ description: "The pod IP range assigned to the node." })),
        podCIDRs: Type.Optional(Type.Array(Type.String(), { description: "The pod IP ranges assigned to the node (one per IP family)." })),
        providerID: Type.Optional(Type.String({ description: "The cloud's id of the machine, e.g. sim://sim-east-1/i-0123." })),
        unschedulable: Type.Optional(Type.Boolean({ description: "True when the node is cordoned: no new pods are placed on it." })),
        taints: Type.Optional(Type.Array(TaintSchema, { description: "Taints of the node." })),
      },
      { description: "Desired state of the node." },
    ),
  ),
  status: Type.Optional(
    Struct(
      {
        conditions: Type.Optional(Type.Array(NodeConditionSchema, { description: "Current conditions (Ready among them)." })),
        addresses: Type.Optional(
          Type.Array(
            Struct(
              {
                type: StringEnum(["InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS"], { description: "Kind of address." }),
                address: Type.String({ description: "The address." }),
              },
              { description: "An address of the node." },
            ),
            { description: "Addresses the node is reachable at." },
          ),
        ),
        nodeInfo: Type.Optional(NodeInfoSchema),
        capacity: Type.Optional(MapOf(Type.String(), "Total resources of the node (cpu, memory, pods, …).")),
        allocatable: Type.Optional(MapOf(Type.String(), "Resources available to pods.")),
        daemonEndpoints: Type.Optional(FreeForm("Endpoints of daemons running on the node (kubelet port).")),
        images: Type.Optional(Type.Array(FreeForm("An image present on the node."), { description: "Images on the node." })),
      },
      { description: "Observed state of the node." },
    ),
  ),
});
export type NodeObject = ObjectOf<typeof NodeSchema>;

/** "Ready", "NotReady", with ",SchedulingDisabled" when cordoned — kubectl's STATUS column. */
export function nodeStatusText(node: NodeObject): string {
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  const text = ready?.status === "True" ? "Ready" : ready ? "NotReady" : "Unknown";
  return node.spec?.unschedulable ? `${text},SchedulingDisabled` : text;
}

/** Roles from node-role.kubernetes.io/<role> labels, as kubectl lists them. */
export function nodeRoles(node: KubeObject): string {
  const roles = Object.keys(node.metadata.labels ?? {})
    .filter((label) => label.startsWith("node-role.kubernetes.io/"))
    .map((label) => label.slice("node-role.kubernetes.io/".length))
    .filter((role) => role !== "")
    .sort();
  return roles.length > 0 ? roles.join(",") : "<none>";
}

function nodeAddress(node: NodeObject, type: string): string {
  return node.status?.addresses?.find((a) => a.type === type)?.address ?? "<none>";
}

export const nodeKind: KindDefinition<NodeObject> = {
  ...CORE,
  kind: "Node",
  plural: "nodes",
  singular: "node",
  shortNames: ["no"],
  namespaced: false,
  schema: NodeSchema,
  description: "A machine that runs pods, registered by its kubelet.",
  subresources: { status: true },
  printerColumns: [
    computedColumn<NodeObject>("STATUS", ".status.conditions", "Ready or NotReady, and SchedulingDisabled when cordoned.", nodeStatusText),
    { name: "ROLES", type: "string", jsonPath: ".metadata.labels", description: "Roles from node-role.kubernetes.io labels.", value: nodeRoles },
    ageColumn,
    fieldColumn("VERSION", ".status.nodeInfo.kubeletVersion", "Kubelet version."),
    computedColumn<NodeObject>("INTERNAL-IP", ".status.addresses", "Internal address.", (o) => nodeAddress(o, "InternalIP"), { priority: 1 }),
    computedColumn<NodeObject>("EXTERNAL-IP", ".status.addresses", "External address.", (o) => nodeAddress(o, "ExternalIP"), { priority: 1 }),
    fieldColumn("OS-IMAGE", ".status.nodeInfo.osImage", "Operating system image.", { priority: 1 }),
    fieldColumn("KERNEL-VERSION", ".status.nodeInfo.kernelVersion", "Kernel version.", { priority: 1 }),
    fieldColumn("CONTAINER-RUNTIME", ".status.nodeInfo.containerRuntimeVersion", "Container runtime.", { priority: 1 }),
  ],
  fieldSelectors: { "spec.unschedulable": (n) => String(n.spec?.unschedulable ?? false) },
};

// ---------------------------------------------------------------------------------------------------------
// Pod

const ContainerStatusSchema = Struct(
  {
    name: Type.String({ description: "Container name." }),
    ready: Type.Boolean({ description: "Whether the container passes its readiness probe." }),
    started: Type.Optional(Type.Boolean({ description: "Whether the container has started." })),
    restartCount: Type.Integer({ minimum: 0, description: "How many times the container restarted." }),
    image: Type.String({ description: "Image the container runs." }),
    imageID: Type.Optional(Type.String({ description: "Image digest." })),
    containerID: Type.Optional(Type.String({ description: "Runtime id of the container." })),
    state: Type.Optional(FreeForm("Current state: waiting, running or terminated, with details.")),
    lastState: Type.Optional(FreeForm("Previous state, if the container restarted.")),
  },
  { description: "Status of one container." },
);

export const PodSchema = objectSchema("v1", "Pod", "A group of containers scheduled together on one node.", {
  spec: Type.Optional(PodSpec),
  status: Type.Optional(
    Struct(
      {
        phase: Type.Optional(StringEnum(["Pending", "Running", "Succeeded", "Failed", "Unknown"], { description: "Lifecycle phase." })),
        reason: Type.Optional(Type.String({ description: "Why the pod is in this state, e.g. Evicted." })),
        message: Type.Optional(Type.String({ description: "Human-readable details." })),
        conditions: Type.Optional(
          Type.Array(
            Struct(
              {
                type: Type.String({ description: "PodScheduled, Initialized, ContainersReady or Ready." }),
                status: StringEnum(["True", "False", "Unknown"], { description: "True, False or Unknown." }),
                reason: Type.Optional(Type.String({ description: "Reason for the last transition." })),
                message: Type.Optional(Type.String({ description: "Human-readable details." })),
                lastProbeTime: Type.Optional(Type.String({ description: "When the condition was last probed." })),
                lastTransitionTime: Type.Optional(Type.String({ description: "When the status last changed (RFC 3339)." })),
              },
              { description: "One aspect of the pod's state." },
            ),
            { description: "Current conditions of the pod." },
          ),
        ),
        hostIP: Type.Optional(Type.String({ description: "Address of the node the pod runs on." })),
        podIP: Type.Optional(Type.String({ description: "Address of the pod." })),
        podIPs: Type.Optional(Type.Array(Struct({ ip: Type.String({ description: "An address." }) }, { description: "A pod address." }), { description: "Addresses of the pod." })),
        startTime: Type.Optional(Type.String({ description: "When the kubelet accepted the pod (RFC 3339)." })),
        qosClass: Type.Optional(StringEnum(["Guaranteed", "Burstable", "BestEffort"], { description: "Quality-of-service class." })),
        containerStatuses: Type.Optional(Type.Array(ContainerStatusSchema, { description: "Status of each container." })),
      },
      { description: "Observed state of the pod." },
    ),
  ),
});
export type PodObject = ObjectOf<typeof PodSchema>;

function podSpec(pod: KubeObject): Partial<PodSpecView> {
  const spec = pod.spec;
  return typeof spec === "object" && spec !== null ? (spec as PodSpecView) : {};
}

function podStatusText(pod: PodObject): string {
  if (pod.metadata.deletionTimestamp) return "Terminating";
  const states = (pod.status?.containerStatuses ?? []).map((c) => c.state as { waiting?: { reason?: string }; terminated?: { reason?: string } } | undefined);
  const reason = states.map((s) => s?.waiting?.reason).find(Boolean) ?? states.map((s) => s?.terminated?.reason).find(Boolean);
  return pod.status?.reason ?? reason ?? pod.status?.phase ?? "Pending";
}

export const podKind: KindDefinition<PodObject> = {
  ...CORE,
  kind: "Pod",
  plural: "pods",
  singular: "pod",
  shortNames: ["po"],
  categories: ["all"],
  namespaced: true,
  schema: PodSchema,
  description: "A group of containers scheduled together on one node.",
  subresources: { status: true },
  validate: (pod) => podSpecErrors(pod.spec as PodSpecView | undefined, "spec"),
  printerColumns: [
    computedColumn<PodObject>("READY", ".status.containerStatuses", "Ready containers of all containers.", (pod) => {
      const total = podSpec(pod).containers?.length ?? 0;
      const ready = (pod.status?.containerStatuses ?? []).filter((c) => c.ready).length;
      return `${ready}/${total}`;
    }),
    computedColumn<PodObject>("STATUS", ".status.phase", "Phase or the reason for it.", podStatusText),
    computedColumn<PodObject>("RESTARTS", ".status.containerStatuses", "Container restarts in total.", (o) => (o.status?.containerStatuses ?? []).reduce((sum, c) => sum + c.restartCount, 0), { type: "integer" }),
    ageColumn,
    computedColumn<PodObject>("IP", ".status.podIP", "Address of the pod.", (o) => o.status?.podIP ?? "<none>", { priority: 1 }),
    computedColumn("NODE", ".spec.nodeName", "Node the pod runs on.", (o) => podSpec(o).nodeName ?? "<none>", { priority: 1 }),
  ],
  fieldSelectors: {
    "spec.nodeName": (p) => podSpec(p).nodeName ?? "",
    "status.phase": (p) => p.status?.phase ?? "",
  },
};

// ---------------------------------------------------------------------------------------------------------
// The registry

function general<T extends KubeObject>(definition: KindDefinition<T>): KindDefinition {
  return definition as unknown as KindDefinition;
}

export const workloadKinds: readonly KindDefinition[] = [
  general(namespaceKind),
  general(nodeKind),
  general(podKind),
  general(configMapKind),
  general(secretKind),
  general(serviceAccountKind),
  general(resourceQuotaKind),
  general(eventKind),
  ...rbacKinds,
  general(daemonSetKind),
  general(deploymentKind),
  general(jobKind),
  general(podDisruptionBudgetKind),
  general(serviceKind),
  general(certificateSigningRequestKind),
];

/** The registry every emulated workload cluster serves. */
export function workloadRegistry(): Registry {
  return new Registry([...workloadKinds]);
}
