// What the Machine and MachinePool controllers' tests need around them, made as the Cluster and
// Infrastructure controllers would make it: a Connection, a Cluster, a ready Infrastructure over real
// resources of the sim cloud (network, subnet, security group, key pair, control-plane load balancer),
// the cluster's PKI and bootstrap token Secrets, an admin kubeconfig Secret, and the network plugin
// (applied, and the Cluster's NetworkPluginInstalled condition set).
import type { ClusterObject, ConnectionObject, InfrastructureObject, SecretObject } from "../../api/kinds.ts";
import { secretKind } from "../../api/core.ts";
import { clusterKind, CONDITION_CONTROL_PLANE_INITIALIZED, LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { renderCniManifest } from "../../bootstrap/cni.ts";
import { renderKubeconfig } from "../../bootstrap/kubeconfig.ts";
import { issueCertificate } from "../../bootstrap/pki.ts";
import { KubeClient } from "../../kubeclient/index.ts";
import type { LoadBalancerInfo } from "../../providers/provider.ts";
import { SimProvider } from "../../providers/sim/index.ts";
import { sshPublicKey, waitFor } from "../../simcloud/test-support.ts";
import { machineKind, ROLE_CONTROL_PLANE } from "../../api/slipway/machine.ts";
import { ConflictError } from "../../apiserver/errors.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { setCondition } from "../../runtime/conditions.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { controllerRef } from "../contract.ts";
import { names } from "../../api/slipway/names.ts";
import { ensureBootstrapToken, ensureClusterPki } from "../pki.ts";
import { networkPluginCondition, pluginPodsReady, readPluginDaemonSet } from "../cluster/networkplugin.ts";
import type { ControllerTestEnv } from "../testing.ts";

export const NAMESPACE = "default";
export const CLUSTER = "demo";
export const CONNECTION = "east";
export const REGION = "sim-east-1";
export const POD_CIDR = "10.244.0.0/16";

export interface ClusterFixture {
  cluster: ClusterObject;
  connection: ConnectionObject;
  infrastructure: InfrastructureObject;
  /** The sim cloud, as the connection's provider sees it. */
  provider: SimProvider;
  loadBalancer: LoadBalancerInfo;
  /** A client of the workload cluster's API (answers once the first control-plane node initialised it). */
  kube: KubeClient;
}

async function until<R>(check: () => Promise<R | undefined>, what: string): Promise<R> {
  return waitFor(check, what, 10_000);
}

/** Everything a machine of cluster `demo` in connection `east` waits for, ready. */
export async function clusterFixture(env: ControllerTestEnv, fixture: { targetPort?: number } = {}): Promise<ClusterFixture> {
  const connection = await env.client.of<ConnectionObject>(connectionKind).create({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Connection",
    metadata: { name: CONNECTION, namespace: NAMESPACE },
    spec: { provider: "sim", region: REGION },
  });
  const cluster = await env.client.of<ClusterObject>(clusterKind).create({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: CLUSTER, namespace: NAMESPACE },
    spec: { controlPlane: { connection: CONNECTION, machineType: "s1.medium" }, network: { podCIDR: POD_CIDR } },
  });
  const provider = new SimProvider(env.cloud, REGION);
  const tags = { [LABEL_CLUSTER]: `${NAMESPACE}/${CLUSTER}` };
  const options = (purpose: string) => ({ token: `${cluster.metadata.uid}/${purpose}`, tags });
  const zone = (await provider.zones())[0]!;
  const network = await provider.create("network", { cidr: "10.0.0.0/16" }, options("network"));
  await until(async () => ((await provider.get("network", network.id))?.state === "ready" ? true : undefined), "network ready");
  const subnet = await provider.create("subnet", { networkId: network.id, zone, cidr: "10.0.1.0/24" }, options("subnet"));
  const securityGroup = await provider.create(
    "securityGroup",
    { networkId: network.id, name: "nodes", description: "nodes", rules: [{ direction: "ingress", protocol: "all", cidr: "10.0.0.0/16" }] },
    options("securityGroup"),
  );
  const keyPair = await provider.create("keyPair", { name: "demo", publicKey: sshPublicKey() }, options("keyPair"));
  await until(async () => ((await provider.get("subnet", subnet.id))?.state === "ready" ? true : undefined), "subnet ready");
  const created = await provider.create(
    "loadBalancer",
    { name: "demo-api", networkId: network.id, subnetIds: [subnet.id], listeners: [{ port: 6443, targetPort: fixture.targetPort ?? 6443 }] },
    options("loadBalancer"),
  );
  const loadBalancer = await until(async () => {
    const lb = await provider.get("loadBalancer", created.id);
    return lb?.state === "ready" ? lb : undefined;
  }, "load balancer ready");
  const imageId = (await provider.images()).find((i) => i.name === "ubuntu-22.04")!.id;

  const infrastructures = env.client.of<InfrastructureObject>(infrastructureKind);
  const infra = await infrastructures.create({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Infrastructure",
    metadata: { name: names.infrastructure(CLUSTER, CONNECTION), namespace: NAMESPACE, ownerReferences: [controllerRef(cluster)] },
    spec: { clusterName: CLUSTER, connection: CONNECTION, region: REGION, nodeCIDR: "10.0.0.0/16", controlPlane: true },
  });
  infra.status = {
    phase: "Ready",
    ready: true,
    networkId: network.id,
    subnetId: subnet.id,
    securityGroupId: securityGroup.id,
    keyPairId: keyPair.id,
    images: { "ubuntu-22.04": imageId },
    zones: [zone],
    loadBalancer: { id: loadBalancer.id, host: loadBalancer.dnsName, port: loadBalancer.port, url: loadBalancer.url },
  };
  const infrastructure = await infrastructures.updateStatus(infra);

  const pki = await ensureClusterPki(env.client, cluster);
  await ensureBootstrapToken(env.client, cluster);
  const admin = await issueCertificate(pki.ca, { commonName: "kubernetes-admin", organizations: ["system:masters"], usages: ["client"] });
  const kubeconfig = renderKubeconfig({
    clusterName: CLUSTER,
    server: loadBalancer.url,
    tlsServerName: loadBalancer.dnsName,
    caCertPem: pki.ca.certPem,
    user: "kubernetes-admin",
    clientCertPem: admin.certPem,
    clientKeyPem: admin.keyPem,
  });
  await env.client.of<SecretObject>(secretKind).create({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: names.kubeconfigSecret(CLUSTER), namespace: NAMESPACE, ownerReferences: [controllerRef(cluster)] },
    type: "Opaque",
    data: { value: Buffer.from(kubeconfig).toString("base64") },
  } as SecretObject);
  return { cluster, connection, infrastructure, provider, loadBalancer, kube: KubeClient.fromKubeconfig(kubeconfig, { timeoutMs: 5000 }) };
}

/**
 * Applies the network plugin through the workload API, as the Cluster controller does once the API
 * answers, and sets the Cluster's NetworkPluginInstalled condition as it does: once the plugin's
 * DaemonSet reports all its pods ready.
 */
export async function applyNetworkPlugin(env: ControllerTestEnv, fixture: ClusterFixture): Promise<void> {
  for (const object of renderCniManifest("calico", { podCIDR: POD_CIDR })) await fixture.kube.apply(object);
  const ds = await until(async () => {
    const found = await readPluginDaemonSet(fixture.kube, "calico");
    return found && pluginPodsReady(found) ? found : undefined;
  }, "calico's pods ready");
  const clusters = env.client.of<ClusterObject>(clusterKind);
  for (;;) {
    const cluster = await clusters.get(NAMESPACE, CLUSTER);
    const status = structuredClone(cluster.status ?? {});
    setCondition(status, networkPluginCondition("calico", ds), nowTimestamp(new Date()));
    try {
      await clusters.updateStatus({ ...cluster, status });
      return;
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
    }
  }
}

export interface WorkloadNodeView {
  name: string;
  ready: boolean;
  unschedulable: boolean;
  labels: Record<string, string>;
}

/** The workload cluster's nodes as `kubectl get nodes` would show them. */
export async function workloadNodes(fixture: ClusterFixture): Promise<WorkloadNodeView[]> {
  interface Node {
    metadata: { name?: string; labels?: Record<string, string> };
    spec?: { unschedulable?: boolean };
    status?: { conditions?: { type: string; status: string }[] };
  }
  const nodes = await fixture.kube.listAll<Node>("/api/v1/nodes");
  return nodes
    .map((n) => ({
      name: n.metadata.name ?? "",
      ready: n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
      unschedulable: n.spec?.unschedulable ?? false,
      labels: n.metadata.labels ?? {},
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * What the Cluster controller's status says of the control plane, and all a machine reads of it: the
 * cluster's ControlPlaneInitialized condition turns True once a control-plane machine has bootstrapped.
 * Tests that run the Machine controller without the Cluster controller register this in its place.
 */
export function registerControlPlaneInitialized(manager: ControllerManager): void {
  const clusters = manager.informer(clusterKind);
  const machines = manager.informer(machineKind);
  const controller = manager.add<ClusterObject>({
    name: "control-plane-initialized",
    component: "test/control-plane-initialized",
    informer: clusters,
    reconcile: async (ctx) => {
      const cluster = clusters.cache.get(ctx.key);
      if (!cluster) return {};
      const initialized = machines.cache
        .list()
        .some((m) => m.metadata.namespace === cluster.metadata.namespace && m.spec.clusterName === cluster.metadata.name && m.spec.role === ROLE_CONTROL_PLANE && m.status?.bootstrapped);
      const status = structuredClone(cluster.status ?? {});
      setCondition(status, { type: CONDITION_CONTROL_PLANE_INITIALIZED, status: initialized ? "True" : "False", reason: initialized ? "Initialized" : "WaitingForInit" }, nowTimestamp(new Date()));
      if (JSON.stringify(status) !== JSON.stringify(cluster.status ?? {})) await ctx.client.of<ClusterObject>(clusterKind).updateStatus({ ...cluster, status });
      return {};
    },
  });
  controller.watch(machines, (m) => [keyFor(m.metadata.namespace, m.spec.clusterName)]);
}
