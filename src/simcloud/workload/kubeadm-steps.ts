// The steps of a machine's life in a workload cluster, as kubeadm and the cluster's controllers take them:
// init creates the cluster, join checks discovery (endpoint, token, CA pin) and the shared PKI before the
// node registers, a join whose control plane is not up yet waits as kubeadm retries, the network plugin
// readies nodes, and the node of a vanished machine is removed. Each step runs on its cluster's queue.
import { isIP } from "node:net";
import { formatIPv4, parseCidr } from "../../api/cidr.ts";
import type { CniName } from "../../bootstrap/cni.ts";
import { caCertHash } from "../../bootstrap/pki.ts";
import type { WorkloadEmulator } from "./emulator.ts";
import { KubeadmFailure, PKI_DIR, caFileErrors, clusterInfoUrl, type InitPlan, type JoinPlan } from "./kubeadm-plan.ts";
import { nodePodCidr, type NodeFacts } from "./manifests.ts";
import { hostOf, type ClusterRecord, type MachineRecord } from "./records.ts";

/** How long kubeadm join keeps retrying discovery (simulated ms), as its default discovery timeout. */
export const DISCOVERY_TIMEOUT_MS = 5 * 60_000;

function portOf(endpoint: string): number {
  return Number(endpoint.slice(endpoint.lastIndexOf(":") + 1));
}

/** The id Kubernetes nodes carry for a sim cloud instance (`spec.providerID`). */
function providerIdOf(machine: MachineRecord): string {
  return `sim://${machine.region}/${machine.instanceId}`;
}

function identityFailure(reason: string): KubeadmFailure {
  return new KubeadmFailure("preflight", [`couldn't validate the identity of the API Server: ${reason}`]);
}

export class KubeadmSteps {
  constructor(private readonly emulator: WorkloadEmulator) {}

  private get records() {
    return this.emulator.records;
  }

  private iso(): string {
    return new Date(this.emulator.now()).toISOString();
  }

  /** kubeadm gave up: its output goes to the boot log, the machine keeps running without a node. */
  private async fail(machine: MachineRecord, failure: KubeadmFailure, before: string[] = []): Promise<void> {
    machine.state = "failed";
    machine.failure = failure.lines;
    delete machine.plan;
    delete machine.due;
    await this.records.saveMachine(machine);
    this.emulator.print(machine.instanceId, [...before, ...failure.lines]);
    this.emulator.logger.info({ instance: machine.instanceId, endpoint: machine.endpoint, error: failure.message }, "kubeadm failed on a workload machine");
  }

  /** A configuration kubeadm refused at once: print why, and the machine keeps running without a node. */
  private async refused(machine: MachineRecord): Promise<boolean> {
    if (!machine.failure) return false;
    machine.state = "failed";
    delete machine.plan;
    await this.records.saveMachine(machine);
    this.emulator.print(machine.instanceId, machine.failure);
    return true;
  }

  /** `kubeadm init`: the cluster behind the endpoint comes to life with this machine as its first node. */
  async init(machine: MachineRecord): Promise<void> {
    if (await this.refused(machine)) return;
    const plan = machine.plan as InitPlan;
    const lb = this.emulator.cloud.findLoadBalancerByDnsName(hostOf(plan.endpoint));
    const id = lb?.id ?? machine.instanceId;
    const existing = this.records.cluster(id) ?? this.records.clusterAt(plan.endpoint);
    if (existing) {
      const live = this.records.machinesOf(existing.id).filter((m) => m.role !== "worker" && m.state === "joined" && m.instanceId !== machine.instanceId);
      if (live.length > 0) {
        await this.fail(machine, new KubeadmFailure("preflight", [`[ERROR ControlPlaneEndpoint]: ${plan.endpoint} already serves the cluster "${existing.name}" (control plane on ${live.map((m) => m.nodeName).join(", ")}); join it instead of initialising another cluster`]));
        return;
      }
      await this.emulator.eraseCluster(existing);
    }
    const ca = { certPem: plan.pki["ca.crt"]!, keyPem: plan.pki["ca.key"]! };
    const host = hostOf(plan.endpoint);
    const serviceIp = formatIPv4(parseCidr(plan.serviceSubnet).base + 1);
    const dnsNames = [...new Set([...(isIP(host) ? [] : [host]), "kubernetes", "kubernetes.default", "kubernetes.default.svc", `kubernetes.default.svc.${plan.dnsDomain}`, "localhost", plan.node.name])];
    const ipAddresses = [...new Set(["127.0.0.1", serviceIp, machine.privateIp, ...(isIP(host) ? [host] : [])])];
    const cluster: ClusterRecord = {
      id,
      name: plan.clusterName,
      endpoint: plan.endpoint,
      serverName: lb?.dnsName ?? host,
      account: machine.account,
      region: machine.region,
      kubernetesVersion: plan.kubernetesVersion,
      podSubnet: plan.podSubnet,
      serviceSubnet: plan.serviceSubnet,
      dnsDomain: plan.dnsDomain,
      ca,
      servingNames: { dnsNames, ipAddresses },
      createdAt: this.iso(),
      podCidrsAllocated: 0,
    };
    await this.records.saveCluster(cluster);
    const objects = this.emulator.cluster(id)!;
    const expiresAt = plan.tokenTtlMs === 0 ? undefined : this.emulator.now() + plan.tokenTtlMs;
    await objects.initialise(cluster, plan, expiresAt, this.iso());
    await this.registerNode(cluster, machine, plan);
    const tokenId = plan.token.split(".")[0];
    this.emulator.print(machine.instanceId, [
      `[init] Using Kubernetes version: ${plan.kubernetesVersion}`,
      "[preflight] Running pre-flight checks",
      '[certs] Using certificateDir folder "/etc/kubernetes/pki"',
      "[certs] Using existing ca certificate authority",
      `[certs] apiserver serving cert is signed for DNS names [${dnsNames.join(" ")}] and IPs [${ipAddresses.join(" ")}]`,
      '[control-plane] Creating static Pod manifests for "kube-apiserver", "kube-controller-manager", "kube-scheduler"',
      '[etcd] Creating static Pod manifest for local etcd in "/etc/kubernetes/manifests"',
      "[kubelet-start] Starting the kubelet",
      `[mark-control-plane] Marking the node ${machine.nodeName} as control-plane by adding the labels: [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]`,
      `[bootstrap-token] Using token: ${tokenId}.<redacted>`,
      '[bootstrap-token] Creating the "cluster-info" ConfigMap in the "kube-public" namespace',
      "[addons] Applied essential addon: CoreDNS",
      "[addons] Applied essential addon: kube-proxy",
      "Your Kubernetes control-plane has initialized successfully!",
    ]);
    this.emulator.logger.info({ cluster: id, endpoint: plan.endpoint, instance: machine.instanceId }, "workload cluster initialised");
    for (const waiting of this.records.waitingFor(plan.endpoint)) await this.emulator.schedule(waiting, "join", 0);
  }

  private async registerNode(cluster: ClusterRecord, machine: MachineRecord, plan: InitPlan | JoinPlan): Promise<void> {
    const slots = 2 ** Math.max(0, 24 - parseCidr(cluster.podSubnet).prefix);
    const podCidr = nodePodCidr(cluster.podSubnet, cluster.podCidrsAllocated % slots);
    cluster.podCidrsAllocated += 1;
    await this.records.saveCluster(cluster);
    const facts: NodeFacts = {
      name: plan.node.name,
      controlPlane: machine.role !== "worker",
      providerID: providerIdOf(machine),
      internalIp: machine.privateIp,
      ...(machine.publicIp ? { externalIp: machine.publicIp } : {}),
      podCidr,
      kubeletVersion: cluster.kubernetesVersion,
      vcpus: machine.vcpus,
      memoryMiB: machine.memoryMiB,
      machineType: machine.machineType,
      region: machine.region,
      zone: machine.zone,
      registration: plan.node,
    };
    await this.emulator.cluster(cluster.id)!.addNode(facts, this.iso());
    machine.state = "joined";
    machine.clusterId = cluster.id;
    delete machine.plan;
    delete machine.waitingSince;
    await this.records.saveMachine(machine);
    if (cluster.cni) await this.emulator.schedule(machine, "ready", this.cniDelay());
  }

  /** The network plugin starts on a node in about half a kubeadm join. */
  private cniDelay(): number {
    return this.emulator.cloud.sampleDelay("kubeadmJoin") / 2;
  }

  /** Why discovery cannot reach `endpoint` at all; undefined while it may only be not up yet. */
  private discoveryRefusal(endpoint: string): string | undefined {
    const host = hostOf(endpoint);
    const url = clusterInfoUrl(endpoint);
    const lb = this.emulator.cloud.findLoadBalancerByDnsName(host);
    const refused = `Get "${url}": dial tcp ${endpoint}: connect: connection refused`;
    if (lb) return lb.listeners.some((l) => l.port === portOf(endpoint)) ? undefined : refused;
    if (this.records.clustersOnHost(host).length > 0) return refused;
    if (isIP(host) === 0) return `Get "${url}": dial tcp: lookup ${host}: no such host`;
    return undefined;
  }

  /** `kubeadm join`: discovery through the endpoint, the token and the CA pin, then the node registers. */
  async join(machine: MachineRecord): Promise<void> {
    if (await this.refused(machine)) return;
    const plan = machine.plan as JoinPlan;
    const cluster = this.records.clusterAt(plan.endpoint);
    if (!cluster) {
      const refusal = this.discoveryRefusal(plan.endpoint);
      if (refusal) {
        await this.fail(machine, identityFailure(`failed to request the cluster-info ConfigMap: ${refusal}`), [`[discovery] failed to request the cluster-info ConfigMap: ${refusal}`]);
        return;
      }
      if (machine.state !== "waiting") {
        machine.state = "waiting";
        machine.waitingSince = this.emulator.now();
        this.emulator.print(machine.instanceId, ["[preflight] Running pre-flight checks", `[discovery] the API server at ${plan.endpoint} does not answer yet; retrying`]);
      }
      const deadline = (machine.waitingSince ?? this.emulator.now()) + this.emulator.scaled(DISCOVERY_TIMEOUT_MS);
      await this.emulator.schedule(machine, "give-up", deadline - this.emulator.now());
      return;
    }
    const failure = await this.discoveryFailure(cluster, plan, machine);
    if (failure) {
      await this.fail(machine, failure);
      return;
    }
    const waited = machine.waitingSince !== undefined;
    await this.registerNode(cluster, machine, plan);
    this.emulator.print(machine.instanceId, [
      ...(waited ? [] : ["[preflight] Running pre-flight checks"]),
      "[preflight] Reading configuration from the cluster...",
      ...(plan.controlPlane ? ["[control-plane] Creating static Pod manifests", "[etcd] Announced new etcd member joining to the existing etcd cluster"] : []),
      "[kubelet-start] Starting the kubelet",
      "[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap",
      plan.controlPlane ? "This node has joined the cluster and a new control plane instance was created." : "This node has joined the cluster.",
      "Run 'kubectl get nodes' on the control-plane to see this node join the cluster.",
    ]);
  }

  private async discoveryFailure(cluster: ClusterRecord, plan: JoinPlan, machine: MachineRecord): Promise<KubeadmFailure | undefined> {
    const objects = this.emulator.cluster(cluster.id)!;
    const [tokenId, tokenSecret] = plan.token.split(".") as [string, string];
    const token = await objects.bootstrapToken(tokenId);
    const expired = token?.expiration !== undefined && Date.parse(token.expiration) <= this.emulator.now();
    if (!token || expired) {
      return identityFailure(`token id "${tokenId}" is invalid for this cluster or it has expired. Use "kubeadm token create" on the control-plane node to create a new valid token`);
    }
    if (token["token-secret"] !== tokenSecret) return identityFailure("failed to verify JWS signature of received cluster info object, can't trust this API Server");
    const pin = this.emulator.caPin(cluster);
    if (!plan.unsafeSkipCAVerification && !plan.caCertHashes.includes(pin)) {
      return identityFailure(`cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${pin}" are pinned`);
    }
    if (plan.controlPlane) {
      const problems = caFileErrors(plan.pki);
      if (plan.pki["ca.crt"] && problems.length === 0 && caCertHash(plan.pki["ca.crt"]) !== pin) {
        problems.push(`[ERROR CertificateAuthority]: ${PKI_DIR}/ca.crt is not the cluster's certificate authority`);
      }
      if (problems.length > 0) {
        return new KubeadmFailure("preflight", [
          `One or more conditions for hosting a new control plane instance is not satisfied. ${problems.join(" ")} Please ensure that: * The cluster has a stable controlPlaneEndpoint address. * The certificates that must be shared among control plane instances are provided.`,
        ]);
      }
    }
    // A join interrupted by a restart finds its own node: that is no conflict.
    const existing = await objects.nodeProviderId(plan.node.name);
    if (existing !== undefined && existing !== providerIdOf(machine)) {
      return new KubeadmFailure("kubelet-start", [`a Node with name "${plan.node.name}" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node`]);
    }
    return undefined;
  }

  /** Discovery retried until its timeout and no control plane ever answered. */
  async giveUp(machine: MachineRecord): Promise<void> {
    const url = clusterInfoUrl(machine.endpoint);
    await this.fail(machine, identityFailure(`failed to request the cluster-info ConfigMap: Get "${url}": context deadline exceeded (no control plane answered within 5m0s)`));
  }

  async ready(machine: MachineRecord): Promise<void> {
    const cluster = machine.clusterId ? this.records.cluster(machine.clusterId) : undefined;
    if (!cluster || machine.state !== "joined") return;
    await this.emulator.cluster(cluster.id)!.nodeReady(machine.nodeName, cluster.cni, this.iso());
    await this.records.saveMachine(machine);
  }

  /** The network plugin's DaemonSet exists: every node gets its pod and turns Ready shortly. */
  async networkPluginApplied(cluster: ClusterRecord, cni: CniName): Promise<void> {
    if (cluster.cni || !this.records.cluster(cluster.id)) return;
    cluster.cni = cni;
    await this.records.saveCluster(cluster);
    for (const machine of this.records.machinesOf(cluster.id)) {
      if (machine.state === "joined") await this.emulator.schedule(machine, "ready", this.cniDelay());
    }
    this.emulator.logger.info({ cluster: cluster.id, cni }, "network plugin applied to a workload cluster");
  }

  /** The node-lifecycle controller deletes a node whose machine is gone; the last control plane takes the cluster with it. */
  async remove(machine: MachineRecord): Promise<void> {
    const cluster = machine.clusterId ? this.records.cluster(machine.clusterId) : undefined;
    await this.records.removeMachine(machine.instanceId);
    if (!cluster) return;
    await this.emulator.cluster(cluster.id)!.removeNode(machine.nodeName, cluster.cni);
    const controlPlaneLeft = this.records.machinesOf(cluster.id).some((m) => m.role !== "worker" && m.state === "joined");
    if (machine.role !== "worker" && !controlPlaneLeft) await this.emulator.eraseCluster(cluster);
  }
}
