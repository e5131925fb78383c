// One emulated workload cluster served on its own, by a process on a host rather than by the sim cloud:
// what the SSH host lab's stand-in `kubeadm init` starts on the leader host (src/providers/ssh/testing).
// It reads what the real kubeadm reads — the InitConfiguration and ClusterConfiguration file and the
// cluster CA under /etc/kubernetes/pki — writes what `kubeadm init` leaves in the API (WorkloadCluster),
// registers the first node, and serves the API on the host's address and bind port with a serving
// certificate from the cluster CA. Clients authenticate with certificates the cluster CA issued, and
// joining nodes with a bootstrap token (as kube-apiserver's bootstrap-token authenticator does). The
// cluster's controllers run every second, and each node's kubelet starts the network plugin's pod there
// once its DaemonSet exists, so nodes turn Ready as they would on the sim cloud. Everything is in memory.
import { readFile } from "node:fs/promises";
import { cpus, hostname, totalmem } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import pino, { type Logger } from "pino";
import { parseCidr } from "../../api/cidr.ts";
import { AuthenticatorChain, ClientCertificates, bearerToken, type Authenticator } from "../../apiserver/authentication.ts";
import { Collectors } from "../../apiserver/collectors.ts";
import { ApiMetrics } from "../../apiserver/metrics.ts";
import { renderOpenApi } from "../../apiserver/openapi.ts";
import { BOOKMARK_INTERVAL_MS, type ApiContext } from "../../apiserver/routes.ts";
import { createApiServer } from "../../apiserver/server.ts";
import { issueCertificate, type KeyPairPem } from "../../bootstrap/pki.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import { WorkloadCluster } from "./cluster.ts";
import { crashBackoffMs } from "./controllers.ts";
import type { NodeObject } from "./kinds.ts";
import { workloadRegistry } from "./kinds.ts";
import { readKubeadmConfig } from "./kubeadm-config.ts";
import { parseDuration, type InitPlan } from "./kubeadm-plan.ts";
import { nodeLabelsOf } from "./kubeadm-steps.ts";
import * as M from "./manifests.ts";
import type { ClusterRecord } from "./records.ts";
import { versionOf } from "./server.ts";

export const DEFAULT_PKI_DIR = "/etc/kubernetes/pki";
const DEFAULT_BIND_PORT = 6443;
const SYNC_INTERVAL_MS = 1000;
/** The container runtime a node reports (the lab's stand-in containerd). */
const CONTAINER_RUNTIME = "containerd://1.7.22";

export interface StandaloneClusterOptions {
  /** The kubeadm configuration file `kubeadm init --config` names. */
  configPath: string;
  /** The address the API server binds (the host's). */
  address: string;
  /** The port to serve on instead of the configuration's bind port (tests). */
  port?: number;
  pkiDir?: string;
  logger?: Logger;
}

export interface StandaloneCluster {
  /** https://<address>:<bind port> */
  url: string;
  close(): Promise<void>;
}

/** What a node reports of the machine it runs on. */
export interface HostFacts {
  name: string;
  address: string;
  controlPlane: boolean;
  kubernetesVersion: string;
  labels: Record<string, string>;
  taints?: { key: string; value?: string; effect: string }[];
  /** A cloud's machine joining from outside: what its cloud says of it (a host reports its own CPUs and memory, and no cloud). */
  cloudMachine?: { providerID: string; vcpus: number; memoryMiB: number; machineType: string; region: string; zone: string };
}

/** The Node object and status a kubelet on this machine registers (its pod range comes from the node IPAM). */
export function registeredNode(facts: HostFacts, at: string): { node: NodeObject; status: NonNullable<NodeObject["status"]> } {
  const machine = facts.cloudMachine;
  const nodeFacts: M.NodeFacts = {
    name: facts.name,
    controlPlane: facts.controlPlane,
    providerID: machine?.providerID ?? "",
    internalIp: facts.address,
    podCidr: "",
    kubeletVersion: facts.kubernetesVersion,
    containerRuntime: CONTAINER_RUNTIME,
    vcpus: machine?.vcpus ?? cpus().length,
    memoryMiB: machine?.memoryMiB ?? Math.floor(totalmem() / 1024 / 1024),
    machineType: machine?.machineType ?? "host",
    region: machine?.region ?? "",
    zone: machine?.zone ?? "",
    labels: facts.labels,
    ...(facts.taints ? { taints: facts.taints } : {}),
  };
  const node = M.nodeObject(nodeFacts) as NodeObject;
  delete node.spec!.podCIDR;
  delete node.spec!.podCIDRs;
  if (!machine) {
    delete node.spec!.providerID;
    for (const key of ["topology.kubernetes.io/region", "topology.kubernetes.io/zone"]) delete node.metadata.labels![key];
  }
  node.metadata.labels!["kubernetes.io/hostname"] = facts.name || hostname();
  return { node, status: M.nodeStatus(nodeFacts, at) };
}

/** The bootstrap-token authenticator: `<id>.<secret>` of a valid token Secret in kube-system. */
function bootstrapTokens(cluster: WorkloadCluster): Authenticator {
  return {
    async authenticate(credentials) {
      const token = bearerToken(credentials.authorization);
      const match = token ? /^([a-z0-9]{6})\.([a-z0-9]{16})$/.exec(token) : null;
      if (!match) return undefined;
      const data = await cluster.bootstrapToken(match[1]!);
      if (!data || data["token-secret"] !== match[2] || data["usage-bootstrap-authentication"] !== "true") return undefined;
      if (data.expiration && Date.parse(data.expiration) < Date.now()) return undefined;
      const extra = (data["auth-extra-groups"] ?? "").split(",").filter((g) => g.length > 0);
      return { user: `system:bootstrap:${match[1]}`, groups: ["system:bootstrappers", ...extra] };
    },
  };
}

/** The node IPAM of the controller manager: each node without a pod range gets the next free /24. */
async function allocatePodRanges(cluster: WorkloadCluster, podSubnet: string): Promise<void> {
  const nodes = (await cluster.objects.list(cluster.kinds.node, undefined)).items as NodeObject[];
  const taken = new Set(nodes.map((n) => n.spec?.podCIDR).filter((c): c is string => !!c));
  const slots = 2 ** Math.max(0, 24 - parseCidr(podSubnet).prefix);
  for (const node of nodes.filter((n) => !n.spec?.podCIDR)) {
    let index = 0;
    while (index < slots && taken.has(M.nodePodCidr(podSubnet, index))) index++;
    const cidr = M.nodePodCidr(podSubnet, index);
    taken.add(cidr);
    await cluster.objects.patch(cluster.kinds.node, undefined, node.metadata.name!, "merge", { spec: { podCIDR: cidr, podCIDRs: [cidr] } });
  }
}

/** Starts the cluster's API as `kubeadm init` would leave it; resolves once it serves. */
export async function serveStandaloneCluster(options: StandaloneClusterOptions): Promise<StandaloneCluster> {
  const logger = options.logger ?? pino({ level: "silent" });
  const pkiDir = options.pkiDir ?? DEFAULT_PKI_DIR;
  const config = readKubeadmConfig(await readFile(options.configPath, "utf8"));
  const init = config.init;
  const clusterConfig = config.cluster;
  if (!init || !clusterConfig?.controlPlaneEndpoint) throw new Error(`${options.configPath} has no InitConfiguration and ClusterConfiguration with a controlPlaneEndpoint`);
  const ca: KeyPairPem = { certPem: await readFile(join(pkiDir, "ca.crt"), "utf8"), keyPem: await readFile(join(pkiDir, "ca.key"), "utf8") };
  const endpoint = clusterConfig.controlPlaneEndpoint;
  const endpointHost = endpoint.replace(/:\d+$/, "");
  const bindPort = options.port ?? init.localAPIEndpoint?.bindPort ?? DEFAULT_BIND_PORT;
  const kubernetesVersion = clusterConfig.kubernetesVersion ?? "v1.31.2";
  const networking = clusterConfig.networking ?? {};
  const podSubnet = networking.podSubnet ?? "10.244.0.0/16";
  const token = init.bootstrapTokens?.[0]?.token ?? "";
  const ttlMs = parseDuration(init.bootstrapTokens?.[0]?.ttl ?? "24h0m0s") ?? 86_400_000;
  const nodeName = init.nodeRegistration?.name ?? hostname();
  const now = () => new Date().toISOString();

  const registry = workloadRegistry();
  const store = SqliteStore.open(":memory:");
  const cluster = new WorkloadCluster(clusterConfig.clusterName ?? "kubernetes", registry, store);
  const servingNames = { dnsNames: ["kubernetes", "kubernetes.default", "kubernetes.default.svc", `kubernetes.default.svc.${networking.dnsDomain ?? "cluster.local"}`, "localhost", nodeName], ipAddresses: [...new Set([options.address, endpointHost, "127.0.0.1"])].filter((a) => /^\d+\.\d+\.\d+\.\d+$/.test(a)) };
  const record: ClusterRecord = {
    id: cluster.id,
    name: cluster.id,
    endpoint,
    serverName: endpointHost,
    account: "",
    region: "",
    kubernetesVersion,
    podSubnet,
    serviceSubnet: networking.serviceSubnet ?? "10.96.0.0/12",
    dnsDomain: networking.dnsDomain ?? "cluster.local",
    ca,
    servingNames,
    createdAt: now(),
    podCidrsAllocated: 0,
  };
  const plan: InitPlan = {
    command: "init",
    clusterName: cluster.id,
    kubernetesVersion,
    podSubnet,
    serviceSubnet: record.serviceSubnet,
    dnsDomain: record.dnsDomain,
    token,
    tokenTtlMs: ttlMs,
    bindPort,
    apiCallTimeoutMs: 60_000,
    endpoint,
    node: { ...init.nodeRegistration, name: nodeName },
    pki: {},
    software: { kubeletVersion: kubernetesVersion, containerRuntime: CONTAINER_RUNTIME },
    warnings: [],
    kubeletHealthTimeoutMs: 240_000,
  };
  await cluster.initialise(record, plan, ttlMs === 0 ? undefined : Date.now() + ttlMs);
  const labels = nodeLabelsOf(plan);
  const first = registeredNode({ name: nodeName, address: options.address, controlPlane: true, kubernetesVersion, labels: "labels" in labels ? labels.labels : {}, ...(plan.node.taints ? { taints: plan.node.taints } : {}) }, now());
  await cluster.objects.create(cluster.kinds.node, undefined, first.node);
  await cluster.objects.updateStatus(cluster.kinds.node, undefined, nodeName, { status: first.status });

  const serving = await issueCertificate(ca, { commonName: "kube-apiserver", dnsNames: servingNames.dnsNames, ipAddresses: servingNames.ipAddresses, usages: ["server"] });
  const metrics = new ApiMetrics();
  const ctx: ApiContext = { registry, objects: cluster.objects, metrics, bookmarkIntervalMs: BOOKMARK_INTERVAL_MS, openapi: renderOpenApi(registry), version: versionOf(kubernetesVersion) };
  const authenticator = new AuthenticatorChain([new ClientCertificates().issuedBy(cluster.id, ca.certPem), bootstrapTokens(cluster)]);
  const collectors = new Collectors(cluster.objects, logger.child({ component: "collectors" }));
  await collectors.start();
  const app: FastifyInstance = createApiServer({
    tls: { key: serving.keyPem, cert: serving.certPem, requestCert: true, rejectUnauthorized: false },
    logger,
    metrics,
    route: (_request, path) => ({ ctx, path, authenticator }),
  });
  await app.listen({ host: options.address, port: bindPort });

  // The controller manager and every node's kubelet: pod ranges, pods, node readiness, the network plugin.
  // A kubelet keeps trying to start the plugin's pod on its node until it runs: at once while the node has
  // not reported yet (a kubelet registers its node, then posts its status), after the crash back-off once
  // the plugin failed there.
  const pluginRetry = new Map<string, number>();
  let syncing = false;
  const timer = setInterval(() => {
    if (syncing) return;
    syncing = true;
    void (async () => {
      await allocatePodRanges(cluster, podSubnet);
      await cluster.controllers.sync(now());
      // Every node whose plugin pod does not run, those the sync just made a pod for among them.
      const waiting = new Set(await cluster.controllers.nodesWithoutNetwork());
      for (const node of pluginRetry.keys()) if (!waiting.has(node)) pluginRetry.delete(node);
      for (const node of waiting) {
        if ((pluginRetry.get(node) ?? 0) > Date.now()) continue;
        const started = await cluster.controllers.startNetworkPlugin(node, now());
        if (started?.failure) pluginRetry.set(node, Date.now() + crashBackoffMs(started.restarts));
        else pluginRetry.delete(node);
      }
    })()
      .catch((error: unknown) => logger.warn({ err: error }, "the cluster's controllers failed a round"))
      .finally(() => (syncing = false));
  }, SYNC_INTERVAL_MS);
  logger.info({ endpoint, bindPort, node: nodeName }, "workload cluster initialised");
  return {
    url: `https://${options.address}:${bindPort}`,
    async close() {
      clearInterval(timer);
      await collectors.stop();
      await app.close();
      await store.close();
    },
  };
}
