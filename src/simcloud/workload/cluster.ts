// One emulated workload cluster's objects, written as kubeadm, the kubelets and the controller manager
// would write them: the objects of `kubeadm init`, a node and its static pods when a machine joins, the
// node unreachable when its machine stops, and removed when it is gone. Pods of DaemonSets, Deployments
// and Jobs, and whether a node is Ready, are the controllers' (controllers.ts).
import type { ServedRbac } from "../../apiserver/authorization/served.ts";
import type { KubeObject } from "../../api/meta.ts";
import type { KindDefinition, Registry } from "../../api/registry.ts";
import { ObjectService, type ObjectServiceOptions } from "../../apiserver/objects.ts";
import type { Store } from "../../store/store.ts";
import { WorkloadControllers, type WorkloadKinds } from "./controllers.ts";
import type { EtcdRecord } from "./etcd.ts";
import type { NodeObject } from "./kinds.ts";
import type { InitPlan } from "./kubeadm-plan.ts";
import { signClusterInfo } from "./kubeadm-plan.ts";
import * as M from "./manifests.ts";
import type { ClusterRecord } from "./records.ts";
import { createIfAbsent, deleteIfPresent } from "../../api/presence.ts";
import { defaultClusterRoleBindings, defaultClusterRoles } from "../../apiserver/authorization/default-roles.ts";

const NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];
/** The ConfigMap holding the emulator's record of etcd membership. */
export const ETCD_RECORD = "etcd-membership";

function kindsOf(registry: Registry): WorkloadKinds {
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
    job: find("batch/v1", "Job"),
    podDisruptionBudget: find("policy/v1", "PodDisruptionBudget"),
    clusterRole: find("rbac.authorization.k8s.io/v1", "ClusterRole"),
    clusterRoleBinding: find("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
  };
}

function ownerOf(object: KubeObject): M.OwnerRef {
  return { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name!, uid: object.metadata.uid! };
}

export class WorkloadCluster {
  readonly objects: ObjectService;
  readonly kinds: WorkloadKinds;
  readonly controllers: WorkloadControllers;

  constructor(
    readonly id: string,
    registry: Registry,
    readonly store: Store,
    /** The admission plugins and post-write hooks of the cluster's API. */
    options: ObjectServiceOptions = {},
    /** The RBAC the cluster's API enforces (its self reviews answer from it). */
    readonly rbac?: ServedRbac,
  ) {
    this.objects = new ObjectService(registry, store, options);
    this.kinds = kindsOf(registry);
    this.controllers = new WorkloadControllers(this.objects, this.kinds);
  }

  /** Creates an object (kept if it exists), then writes its status when it has one. */
  private async put(def: KindDefinition, object: KubeObject, status?: unknown): Promise<KubeObject> {
    const namespace = object.metadata.namespace;
    const created = (await createIfAbsent(() => this.objects.create(def, namespace, object)))?.object ?? (await this.objects.get(def, namespace, object.metadata.name!));
    if (status === undefined) return created;
    return (await this.objects.updateStatus(def, namespace, created.metadata.name!, { status })).object;
  }

  /**
   * What `kubeadm init` leaves in the API besides the first node (its pods come from the controllers):
   * the namespaces, the API server's bootstrap RBAC policy, the join token and the cluster's configuration.
   */
  async initialise(cluster: ClusterRecord, plan: InitPlan, tokenExpiresAt: number | undefined): Promise<void> {
    for (const name of NAMESPACES) await this.put(this.kinds.namespace, { apiVersion: "v1", kind: "Namespace", metadata: { name } });
    for (const role of defaultClusterRoles()) await this.put(this.kinds.clusterRole, role as unknown as KubeObject);
    for (const binding of defaultClusterRoleBindings()) await this.put(this.kinds.clusterRoleBinding, binding as unknown as KubeObject);
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
      ...(plan.apiServerExtraArgs ? { apiServer: { extraArgs: plan.apiServerExtraArgs } } : {}),
      networking: { podSubnet: plan.podSubnet, serviceSubnet: plan.serviceSubnet, dnsDomain: plan.dnsDomain },
    };
    await this.put(this.kinds.configMap, M.configMap("kubeadm-config", "kube-system", { ClusterConfiguration: JSON.stringify(clusterConfiguration, null, 2) }));
    await this.put(this.kinds.daemonSet, M.kubeProxyDaemonSet(plan.kubernetesVersion));
    await this.put(this.kinds.deployment, M.corednsDeployment());
  }

  /**
   * The emulator's record of the cluster's etcd — members, and membership and health over time — as
   * ConfigMap kube-system/etcd-membership (keys members, history (JSON), and broken once it is).
   */
  async writeEtcdRecord(etcd: EtcdRecord): Promise<void> {
    const data = { members: JSON.stringify(etcd.members.map((m) => m.name)), history: JSON.stringify(etcd.history), ...(etcd.broken ? { broken: etcd.broken } : {}) };
    const existing = await this.objects.tryGet(this.kinds.configMap, "kube-system", ETCD_RECORD);
    if (!existing) await this.put(this.kinds.configMap, M.configMap(ETCD_RECORD, "kube-system", data));
    else await this.objects.patch(this.kinds.configMap, "kube-system", ETCD_RECORD, "merge", { data });
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

  /** A joining kubelet registers its node (NotReady until the network plugin runs); a control-plane node gets its static pods. */
  async addNode(facts: M.NodeFacts, at: string): Promise<void> {
    const node = await this.put(this.kinds.node, M.nodeObject(facts), M.nodeStatus(facts, at));
    if (facts.controlPlane) {
      for (const pod of M.staticPods(facts.name, ownerOf(node), facts.kubeletVersion, facts.internalIp)) {
        await this.put(this.kinds.pod, pod.object, M.runningPodStatus(pod.containers, facts.internalIp, facts.internalIp, at));
      }
    }
  }

  /**
   * The node of that name, if it is the machine's (`providerId`, when given): the node-lifecycle
   * controller tells nodes by their provider ID, so a machine gone does not touch a node of the same name
   * another machine registered since.
   */
  private async machineNode(name: string, providerId: string | undefined): Promise<NodeObject | undefined> {
    const node = (await this.objects.tryGet(this.kinds.node, undefined, name)) as NodeObject | undefined;
    if (!node || (providerId !== undefined && node.spec?.providerID && node.spec.providerID !== providerId)) return undefined;
    return node;
  }

  /**
   * The node's kubelet stopped posting (its machine is down): every condition turns Unknown and the node
   * is tainted unreachable — and shut down, when the cloud says the machine is stopped rather than gone.
   */
  async nodeUnreachable(name: string, at: string, shutdown: boolean, providerId?: string): Promise<void> {
    const node = await this.machineNode(name, providerId);
    if (!node) return;
    await this.objects.patch(this.kinds.node, undefined, name, "merge", { spec: { taints: M.taintsFor(node.spec?.taints ?? [], shutdown ? "shutdown" : "unknown", at) } });
    await this.objects.updateStatus(this.kinds.node, undefined, name, { status: { ...node.status, conditions: M.nodeConditions("unknown", at) } });
  }

  /** The node's kubelet posts again (its machine started): NotReady until the controllers find its network. */
  async nodeBack(name: string, at: string, providerId?: string): Promise<void> {
    const node = await this.machineNode(name, providerId);
    if (!node) return;
    await this.objects.patch(this.kinds.node, undefined, name, "merge", { spec: { taints: M.taintsFor(node.spec?.taints ?? [], "network-not-ready", at) } });
    await this.objects.updateStatus(this.kinds.node, undefined, name, { status: { ...node.status, conditions: M.nodeConditions("network-not-ready", at) } });
  }

  /** Deletes the node and the pods bound to it, as the cloud node-lifecycle controller and the GC would. */
  async removeNode(name: string, providerId?: string): Promise<void> {
    // A node of the same name registered since by another machine is not this machine's to remove.
    if (providerId !== undefined && !(await this.machineNode(name, providerId))) return;
    const pods = await this.objects.list(this.kinds.pod, undefined, { fieldSelector: `spec.nodeName=${name}` });
    for (const pod of pods.items) await this.ignoreMissing(this.objects.forget(this.kinds.pod, pod.metadata.namespace, pod.metadata.name!, pod.metadata.uid!));
    await this.ignoreMissing(this.objects.delete(this.kinds.node, undefined, name));
  }

  private async ignoreMissing(work: Promise<unknown>): Promise<void> {
    await deleteIfPresent(() => work);
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
