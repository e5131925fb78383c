// One emulated workload cluster's objects, written as kubeadm, the kubelets and the controller manager
// would write them: the objects of `kubeadm init`, a node and its pods when a machine joins, the node
// turning Ready once a network plugin runs, unreachable when its machine is gone, and removed.
import type { KubeObject } from "../../api/meta.ts";
import type { KindDefinition, Registry } from "../../api/registry.ts";
import { AlreadyExistsError, NotFoundError } from "../../apiserver/errors.ts";
import { ObjectService, type ObjectServiceOptions } from "../../apiserver/objects.ts";
import { CNI_DAEMONSETS, type CniName } from "../../bootstrap/cni.ts";
import type { Store } from "../../store/store.ts";
import type { NodeObject, PodObject } from "./kinds.ts";
import type { InitPlan } from "./kubeadm-plan.ts";
import { signClusterInfo } from "./kubeadm-plan.ts";
import * as M from "./manifests.ts";
import type { ClusterRecord } from "./records.ts";

const NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

interface Kinds {
  namespace: KindDefinition;
  node: KindDefinition;
  pod: KindDefinition;
  configMap: KindDefinition;
  secret: KindDefinition;
  daemonSet: KindDefinition;
  deployment: KindDefinition;
}

function kindsOf(registry: Registry): Kinds {
  const find = (apiVersion: string, kind: string): KindDefinition => {
    const def = registry.byKind(apiVersion, kind);
    if (!def) throw new Error(`the workload registry lacks ${kind}`);
    return def;
  };
  return {
    namespace: find("v1", "Namespace"),
    node: find("v1", "Node"),
    pod: find("v1", "Pod"),
    configMap: find("v1", "ConfigMap"),
    secret: find("v1", "Secret"),
    daemonSet: find("apps/v1", "DaemonSet"),
    deployment: find("apps/v1", "Deployment"),
  };
}

function ownerOf(object: KubeObject): M.OwnerRef {
  return { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name!, uid: object.metadata.uid! };
}

export class WorkloadCluster {
  readonly objects: ObjectService;
  private readonly kinds: Kinds;

  constructor(
    readonly id: string,
    registry: Registry,
    readonly store: Store,
    /** The admission plugins and post-write hooks of the cluster's API. */
    options: ObjectServiceOptions = {},
  ) {
    this.objects = new ObjectService(registry, store, options);
    this.kinds = kindsOf(registry);
  }

  /** Creates an object (kept if it exists), then writes its status when it has one. */
  private async put(def: KindDefinition, object: KubeObject, status?: unknown): Promise<KubeObject> {
    const namespace = object.metadata.namespace;
    let created: KubeObject;
    try {
      created = (await this.objects.create(def, namespace, object)).object;
    } catch (error) {
      if (!(error instanceof AlreadyExistsError)) throw error;
      created = await this.objects.get(def, namespace, object.metadata.name!);
    }
    if (status === undefined) return created;
    return (await this.objects.updateStatus(def, namespace, created.metadata.name!, { status })).object;
  }

  private async putPod(plan: M.PodPlan, status: M.PodStatus): Promise<void> {
    await this.put(this.kinds.pod, plan.object, status);
  }

  /** What `kubeadm init` leaves in the API besides the first node. */
  async initialise(cluster: ClusterRecord, plan: InitPlan, tokenExpiresAt: number | undefined, at: string): Promise<void> {
    for (const name of NAMESPACES) await this.put(this.kinds.namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name } });
    await this.put(this.kinds.secret, M.bootstrapTokenSecret(plan.token, tokenExpiresAt));
    const kubeconfig = M.clusterInfoKubeconfig(cluster.endpoint, cluster.ca.certPem);
    const [tokenId, tokenSecret] = plan.token.split(".") as [string, string];
    await this.put(this.kinds.configMap, M.configMap("cluster-info", "kube-public", { kubeconfig, [`jws-kubeconfig-${tokenId}`]: signClusterInfo(kubeconfig, tokenId, tokenSecret) }));
    const clusterConfiguration = {
      apiVersion: "kubeadm.k8s.io/v1beta4",
      kind: "ClusterConfiguration",
      clusterName: plan.clusterName,
      controlPlaneEndpoint: plan.endpoint,
      kubernetesVersion: plan.kubernetesVersion,
      certificatesDir: "/etc/kubernetes/pki",
      networking: { podSubnet: plan.podSubnet, serviceSubnet: plan.serviceSubnet, dnsDomain: plan.dnsDomain },
    };
    await this.put(this.kinds.configMap, M.configMap("kubeadm-config", "kube-system", { ClusterConfiguration: JSON.stringify(clusterConfiguration, null, 2) }));
    await this.put(this.kinds.daemonSet, M.kubeProxyDaemonSet(plan.kubernetesVersion), { desiredNumberScheduled: 0, currentNumberScheduled: 0, numberMisscheduled: 0, numberReady: 0 });
    const coredns = await this.put(this.kinds.deployment, M.corednsDeployment(), this.corednsStatus(0, at));
    const message = "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
    for (const pod of M.corednsPods(ownerOf(coredns))) await this.putPod(pod, M.unschedulablePodStatus(message, at));
  }

  private corednsStatus(ready: number, at: string): unknown {
    const available = ready > 0;
    return {
      replicas: M.COREDNS_REPLICAS,
      updatedReplicas: M.COREDNS_REPLICAS,
      readyReplicas: ready,
      availableReplicas: ready,
      unavailableReplicas: M.COREDNS_REPLICAS - ready,
      observedGeneration: 1,
      conditions: [
        {
          type: "Available",
          status: available ? "True" : "False",
          reason: available ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
          message: available ? "Deployment has minimum availability." : "Deployment does not have minimum availability.",
          lastUpdateTime: at,
          lastTransitionTime: at,
        },
      ],
    };
  }

  async hasNode(name: string): Promise<boolean> {
    return (await this.objects.tryGet(this.kinds.node, undefined, name)) !== undefined;
  }

  /** The provider id of a node (undefined when there is no such node). */
  async nodeProviderId(name: string): Promise<string | undefined> {
    const node = (await this.objects.tryGet(this.kinds.node, undefined, name)) as NodeObject | undefined;
    return node ? (node.spec?.providerID ?? "") : undefined;
  }

  /** The data of a bootstrap token Secret, decoded (undefined when there is none). */
  async bootstrapToken(tokenId: string): Promise<Record<string, string> | undefined> {
    const secret = await this.objects.tryGet(this.kinds.secret, "kube-system", `bootstrap-token-${tokenId}`);
    if (!secret || secret.type !== "bootstrap.kubernetes.io/token") return undefined;
    const data = (secret.data ?? {}) as Record<string, string>;
    return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
  }

  /** A joining kubelet registers its node; a control-plane node gets its static pods; kube-proxy starts. */
  async addNode(facts: M.NodeFacts, at: string): Promise<void> {
    const node = await this.put(this.kinds.node, M.nodeObject(facts), M.nodeStatus(facts, at));
    if (facts.controlPlane) {
      for (const pod of M.staticPods(facts.name, ownerOf(node), facts.kubeletVersion, facts.internalIp)) {
        await this.putPod(pod, M.runningPodStatus(pod.containers, facts.internalIp, facts.internalIp, at));
      }
    }
    const proxy = await this.objects.tryGet(this.kinds.daemonSet, "kube-system", "kube-proxy");
    if (proxy) {
      const pod = M.daemonPod({ ...ownerOf(proxy), namespace: "kube-system" }, M.KUBE_PROXY_LABELS, [{ name: "kube-proxy", image: M.kubeProxyImage(facts.kubeletVersion) }], facts.name);
      await this.putPod(pod, M.runningPodStatus(pod.containers, facts.internalIp, facts.internalIp, at));
      await this.refreshDaemonSet("kube-system", "kube-proxy");
    }
  }

  /** The network plugin runs on the node: its pod starts, the node turns Ready, CoreDNS can be placed. */
  async nodeReady(name: string, cni: CniName | undefined, at: string): Promise<void> {
    const node = (await this.objects.tryGet(this.kinds.node, undefined, name)) as NodeObject | undefined;
    if (!node) return;
    const internalIp = node.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "";
    if (cni) {
      const { namespace, name: dsName } = CNI_DAEMONSETS[cni];
      const ds = await this.objects.tryGet(this.kinds.daemonSet, namespace, dsName);
      if (ds) {
        const template = (ds.spec as { template?: { metadata?: { labels?: Record<string, string> }; spec?: { containers?: { name?: string; image?: string }[] } } } | undefined)?.template;
        const containers = (template?.spec?.containers ?? []).map((c) => ({ name: c.name ?? dsName, image: c.image ?? "" }));
        const pod = M.daemonPod({ ...ownerOf(ds), namespace }, template?.metadata?.labels ?? {}, containers, name);
        await this.putPod(pod, M.runningPodStatus(pod.containers, internalIp, internalIp, at));
      }
    }
    await this.objects.patch(this.kinds.node, undefined, name, "merge", { spec: { taints: M.taintsFor(node.spec?.taints ?? [], "ready", at) } });
    await this.objects.updateStatus(this.kinds.node, undefined, name, { status: { ...node.status, conditions: M.nodeConditions("ready", at) } });
    if (cni) await this.refreshDaemonSet(CNI_DAEMONSETS[cni].namespace, CNI_DAEMONSETS[cni].name);
    await this.placeCoredns(name, node.spec?.podCIDR ?? "", internalIp, at);
  }

  private async placeCoredns(nodeName: string, podCidr: string, hostIp: string, at: string): Promise<void> {
    const pods = (await this.objects.list(this.kinds.pod, "kube-system", { labelSelector: "k8s-app=kube-dns" })).items as PodObject[];
    let offset = 0;
    for (const pod of pods) {
      if (pod.status?.phase === "Running" || !podCidr) continue;
      const name = pod.metadata.name!;
      await this.objects.patch(this.kinds.pod, "kube-system", name, "merge", { spec: { nodeName } });
      const containers = ((pod.spec as { containers?: { name: string; image: string }[] } | undefined)?.containers ?? []).map((c) => ({ name: c.name, image: c.image }));
      await this.objects.updateStatus(this.kinds.pod, "kube-system", name, { status: M.runningPodStatus(containers, hostIp, M.podAddress(podCidr, offset++), at) });
    }
    const running = (await this.objects.list(this.kinds.pod, "kube-system", { labelSelector: "k8s-app=kube-dns", fieldSelector: "status.phase=Running" })).items.length;
    await this.updateStatusIfPresent(this.kinds.deployment, "kube-system", "coredns", this.corednsStatus(running, at));
  }

  /** The machine is gone: its kubelet stops reporting, so every condition turns Unknown and the node is tainted. */
  async nodeUnreachable(name: string, at: string): Promise<void> {
    const node = (await this.objects.tryGet(this.kinds.node, undefined, name)) as NodeObject | undefined;
    if (!node) return;
    await this.objects.patch(this.kinds.node, undefined, name, "merge", { spec: { taints: M.taintsFor(node.spec?.taints ?? [], "unknown", at) } });
    await this.objects.updateStatus(this.kinds.node, undefined, name, { status: { ...node.status, conditions: M.nodeConditions("unknown", at) } });
  }

  /** Deletes the node and the pods bound to it, as the cloud node-lifecycle controller and the GC would. */
  async removeNode(name: string, cni: CniName | undefined): Promise<void> {
    const pods = await this.objects.list(this.kinds.pod, undefined, { fieldSelector: `spec.nodeName=${name}` });
    for (const pod of pods.items) await this.ignoreMissing(this.objects.forget(this.kinds.pod, pod.metadata.namespace, pod.metadata.name!, pod.metadata.uid!));
    await this.ignoreMissing(this.objects.delete(this.kinds.node, undefined, name));
    await this.refreshDaemonSet("kube-system", "kube-proxy");
    if (cni) await this.refreshDaemonSet(CNI_DAEMONSETS[cni].namespace, CNI_DAEMONSETS[cni].name);
  }

  /** Recomputes a DaemonSet's status from the nodes and the set's pods. */
  async refreshDaemonSet(namespace: string, name: string): Promise<void> {
    const ds = await this.objects.tryGet(this.kinds.daemonSet, namespace, name);
    if (!ds) return;
    const nodes = (await this.objects.list(this.kinds.node, undefined)).items.length;
    const pods = (await this.objects.list(this.kinds.pod, namespace)).items.filter((p) => p.metadata.ownerReferences?.some((o) => o.uid === ds.metadata.uid)) as PodObject[];
    const ready = pods.filter((p) => p.status?.containerStatuses?.every((c) => c.ready) && p.status.phase === "Running").length;
    await this.updateStatusIfPresent(this.kinds.daemonSet, namespace, name, {
      desiredNumberScheduled: nodes,
      currentNumberScheduled: pods.length,
      numberMisscheduled: 0,
      numberReady: ready,
      updatedNumberScheduled: pods.length,
      numberAvailable: ready,
      ...(nodes > ready ? { numberUnavailable: nodes - ready } : {}),
      observedGeneration: ds.metadata.generation ?? 1,
    });
  }

  private async updateStatusIfPresent(def: KindDefinition, namespace: string, name: string, status: unknown): Promise<void> {
    await this.ignoreMissing(this.objects.updateStatus(def, namespace, name, { status }));
  }

  private async ignoreMissing(work: Promise<unknown>): Promise<void> {
    try {
      await work;
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
  }

  /** Removes every object of the cluster (its control plane is gone for good). */
  async erase(): Promise<void> {
    while (true) {
      const page = await this.store.list("", { limit: 500 });
      for (const kv of page.items) await this.store.delete(kv.key).catch(() => undefined);
      if (!page.more) return;
    }
  }
}
