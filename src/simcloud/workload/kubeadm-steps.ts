// The steps of a machine's life in a workload cluster, as kubeadm and the cluster's controllers take them.
// `kubeadm init` brings the API server up on the machine, then goes on through the control-plane
// endpoint (upload-config, mark-control-plane, bootstrap-token), which answers only once the load
// balancer sends it to a healthy target: until kubeadm's API-call timeout, after which init fails naming
// the endpoint. `kubeadm join` finds the cluster through its endpoint (the load balancer's healthy
// targets, or a node's address) — never by name — retrying discovery until its timeout, then checks the
// token, the CA pin and, for a control plane, every shared key. Each step runs on its cluster's queue.
import { isIP } from "node:net";
import { formatIPv4, parseCidr } from "../../api/cidr.ts";
import { caCertHash } from "../../bootstrap/pki.ts";
import { NODE_GONE_AFTER_MS, type Reach, type WorkloadEmulator } from "./emulator.ts";
import { joinThroughPeers, PUBLIC_RETRY_MS, type GuestFacts, type PublicJoinAnswer } from "./public-join.ts";
import { joinOutside, outsideEndpoint } from "./outside-join.ts";
import { addLearner, addMember } from "./etcd.ts";
import { KubeadmFailure, PKI_DIR, clusterInfoUrl, kubeletVersionProblems, nodeIpOf, pkiFileErrors, publicKeyDigest, type InitPlan, type JoinPlan, type KubeadmPlan } from "./kubeadm-plan.ts";
import { nodePodCidr, type NodeFacts } from "./manifests.ts";
import { hostOf, type ClusterRecord, type MachineRecord } from "./records.ts";

/** How long kubeadm join keeps retrying discovery by default (simulated ms): v1beta4's timeouts.discovery. */
export const DISCOVERY_TIMEOUT_MS = 5 * 60_000;
/** How long kubeadm init retries API calls through the control-plane endpoint by default (timeouts.kubernetesAPICall). */
export const API_CALL_TIMEOUT_MS = 60_000;
/**
 * How often kubeadm init tries an API call through the endpoint again (kubeadm's APICallRetryInterval,
 * simulated ms): a change of what the endpoint leads to wakes it sooner, this catches any it missed.
 */
export const API_CALL_RETRY_MS = 500;
/** How long `slipway-join-turn` holds the control plane's join Lease at most (simulated ms): a holder that hangs frees it then. */
export const JOIN_LEASE_MS = 10 * 60_000;
/** How often `slipway-join-turn` looks again while the turn is taken (simulated ms); the holder's join ending wakes it sooner. */
export const TURN_POLL_MS = 5_000;
/** The Lease through which control-plane machines take turns to join (`slipway-join-turn`). */
export const JOIN_LEASE = "kube-system/slipway-control-plane-join";

function minorOf(version: string): number {
  return Number(version.replace(/^v/, "").split(".")[1]);
}

function compareVersions(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => v.replace(/^v/, "").split(".").map(Number));
  for (let i = 0; i < 3; i++) if ((x![i] ?? 0) !== (y![i] ?? 0)) return (x![i] ?? 0) - (y![i] ?? 0);
  return 0;
}

/** kubeadm refuses to join a control plane more than one minor version ahead of the one running, or behind it. */
function controlPlaneSkew(kubelet: string, running: string): { check: string; message: string }[] {
  const ahead = minorOf(kubelet) - minorOf(running);
  if (ahead > 1 || ahead < 0) {
    return [{ check: "ControlPlaneVersion", message: `this version of kubeadm (${kubelet}) cannot join a control plane running ${running}: a new control-plane instance must be at its version or one minor version ahead` }];
  }
  return [];
}

/** The id Kubernetes nodes carry for a sim cloud instance (`spec.providerID`). */
/** What a control-plane `kubeadm join` prints up to adding its etcd member (as a learner). */
const LEARNER_LINES = [
  "[preflight] Reading configuration from the cluster...",
  "[control-plane] Creating static Pod manifests",
  "[etcd] Announced new etcd member joining to the existing etcd cluster",
  "[etcd] Waiting for the new etcd member to join the cluster. This can take up to 40s",
];

/** What `kubeadm join` prints once the node joined (a control plane's: after its learner was promoted). */
function joinedLines(controlPlane: boolean): string[] {
  return [
    ...(controlPlane ? ["[etcd] The learner was promoted to a voting member"] : ["[preflight] Reading configuration from the cluster..."]),
    "[kubelet-start] Starting the kubelet",
    "[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap",
    controlPlane ? "This node has joined the cluster and a new control plane instance was created." : "This node has joined the cluster.",
    "Run 'kubectl get nodes' on the control-plane to see this node join the cluster.",
  ];
}

/** What a machine tells the cloud it joins across the public network about itself. */
function guestFacts(machine: MachineRecord): GuestFacts {
  const { instanceId, region, zone, machineType, vcpus, memoryMiB, privateIp, publicIp } = machine;
  return { instanceId, region, zone, machineType, vcpus, memoryMiB, privateIp, ...(publicIp ? { publicIp } : {}) };
}

export function providerIdOf(machine: MachineRecord): string {
  return `sim://${machine.region}/${machine.instanceId}`;
}

function identityFailure(reason: string): KubeadmFailure {
  return new KubeadmFailure("preflight", [`couldn't validate the identity of the API Server: ${reason}`]);
}

/** Label prefixes a kubelet may set on its own node (the NodeRestriction rules kubelets follow). */
const KUBELET_LABEL_PREFIXES = ["kubelet.kubernetes.io/", "node.kubernetes.io/"];
const KUBELET_LABELS = new Set([
  "kubernetes.io/hostname",
  "kubernetes.io/arch",
  "kubernetes.io/os",
  "beta.kubernetes.io/arch",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/instance-type",
  "node.kubernetes.io/instance-type",
  "failure-domain.beta.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "topology.kubernetes.io/zone",
]);

/** The labels of the kubelet's --node-labels, or the kubelet's refusal of ones it may not set. */
export function nodeLabelsOf(plan: KubeadmPlan): { labels: Record<string, string> } | { error: string } {
  const arg = plan.node.kubeletExtraArgs?.find((a) => a.name === "node-labels")?.value ?? "";
  const labels: Record<string, string> = {};
  for (const pair of arg.split(",").filter((p) => p.trim() !== "")) {
    const [key, value = ""] = pair.split("=", 2) as [string, string | undefined];
    labels[key.trim()] = value.trim();
  }
  const forbidden = Object.keys(labels).filter((key) => {
    const prefix = key.includes("/") ? key.slice(0, key.indexOf("/")) : "";
    const restricted = prefix === "kubernetes.io" || prefix.endsWith(".kubernetes.io") || prefix === "k8s.io" || prefix.endsWith(".k8s.io");
    return restricted && !KUBELET_LABELS.has(key) && !KUBELET_LABEL_PREFIXES.some((p) => key.startsWith(p) || key.includes(`.${p}`));
  });
  if (forbidden.length > 0) return { error: `"command failed" err="failed to validate kubelet flags: unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [${forbidden.join(" ")}]"` };
  return { labels };
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
  private async fail(machine: MachineRecord, failure: KubeadmFailure | string[], before: string[] = []): Promise<void> {
    const lines = Array.isArray(failure) ? failure : failure.lines;
    machine.state = "failed";
    machine.failure = lines;
    delete machine.plan;
    delete machine.due;
    delete machine.servingSince;
    delete machine.pendingFailure;
    await this.records.saveMachine(machine);
    this.emulator.print(machine.instanceId, [...before, ...lines]);
    this.emulator.logger.info({ instance: machine.instanceId, endpoint: machine.endpoint, error: lines[0] }, "kubeadm failed on a workload machine");
    await this.emulator.servingChanged(machine);
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

  /** The kubelet never comes up: kubeadm waits for it, then fails in `phase`. */
  private async kubeletNeverHealthy(machine: MachineRecord, plan: KubeadmPlan, phase: string, kubeletLog: string): Promise<void> {
    const timeout = `${Math.round(plan.kubeletHealthTimeoutMs / 60_000)}m0s`;
    this.emulator.print(machine.instanceId, [
      `[kubelet-check] Waiting for a healthy kubelet at http://127.0.0.1:10248/healthz. This can take up to ${timeout}`,
      `kubelet[${1000 + (machine.instanceId.charCodeAt(2) % 9000)}]: ${kubeletLog}`,
    ]);
    machine.pendingFailure = new KubeadmFailure(phase, [
      `failed while waiting for the kubelet to start: The HTTP call equal to 'curl -sSL http://127.0.0.1:10248/healthz' returned error: Get "http://127.0.0.1:10248/healthz": context deadline exceeded`,
    ], [`[kubelet-check] The kubelet is not healthy after ${timeout}`]).lines;
    await this.emulator.schedule(machine, "fail", this.emulator.scaled(plan.kubeletHealthTimeoutMs));
  }

  /** The kubelet's failure when it cannot start with this plan (swap, labels it may not set). */
  private kubeletFailure(plan: KubeadmPlan): string | undefined {
    const labels = nodeLabelsOf(plan);
    return plan.kubeletFailure ?? ("error" in labels ? labels.error : undefined);
  }

  /** A step kubeadm had scheduled to fail (the kubelet never came up). */
  async failNow(machine: MachineRecord): Promise<void> {
    await this.fail(machine, machine.pendingFailure ?? ["error execution phase kubelet-start: the kubelet did not start"]);
  }

  /** `kubeadm init`, up to the API server answering on this machine; then its phases through the endpoint. */
  async init(machine: MachineRecord): Promise<void> {
    if (await this.refused(machine)) return;
    const plan = machine.plan as InitPlan;
    this.emulator.print(machine.instanceId, [`[init] Using Kubernetes version: ${plan.kubernetesVersion}`, "[preflight] Running pre-flight checks", ...plan.warnings]);
    const kubelet = this.kubeletFailure(plan);
    if (kubelet) return this.kubeletNeverHealthy(machine, plan, "wait-control-plane", kubelet);
    machine.state = "starting";
    machine.servingSince = this.emulator.now();
    machine.waitingSince = this.emulator.now();
    machine.bindPort = plan.bindPort;
    await this.records.saveMachine(machine);
    this.emulator.print(machine.instanceId, [
      '[certs] Using certificateDir folder "/etc/kubernetes/pki"',
      "[certs] Using existing ca certificate authority",
      '[control-plane] Creating static Pod manifests for "kube-apiserver", "kube-controller-manager", "kube-scheduler"',
      '[etcd] Creating static Pod manifest for local etcd in "/etc/kubernetes/manifests"',
      "[kubelet-start] Starting the kubelet",
      "[api-check] The API server is healthy",
    ]);
    await this.emulator.servingChanged(machine);
    await this.upload(machine);
  }

  /**
   * init's phases that go through controlPlaneEndpoint (kubeadm's admin.conf points there): they need the
   * endpoint to reach this machine's API server. Retried until kubeadm's API-call timeout.
   */
  async upload(machine: MachineRecord): Promise<void> {
    const plan = machine.plan as InitPlan | undefined;
    if (machine.state !== "starting" || !plan) return;
    const url = `https://${plan.endpoint}/api/v1/namespaces/kube-system/configmaps?timeout=10s`;
    const reach = this.emulator.reach(plan.endpoint, machine);
    let error: string | undefined;
    let retryAt: number | undefined;
    if ("error" in reach) ({ error, retryAt } = reach);
    else if (reach.machines.some((m) => m.instanceId !== machine.instanceId)) error = "tls: failed to verify certificate: x509: certificate signed by unknown authority";
    if (error !== undefined) {
      const deadline = (machine.waitingSince ?? this.emulator.now()) + this.emulator.scaled(plan.apiCallTimeoutMs);
      if (this.emulator.now() >= deadline) {
        await this.fail(machine, new KubeadmFailure("upload-config/kubeadm", [`error uploading the kubeadm ClusterConfiguration: unable to create ConfigMap: Post "${url}": ${error}`]));
        return;
      }
      machine.lastError = error;
      const again = retryAt ?? this.emulator.now() + this.emulator.scaled(API_CALL_RETRY_MS);
      await this.emulator.schedule(machine, "upload", Math.min(again, deadline) - this.emulator.now());
      return;
    }
    await this.createCluster(machine, plan);
  }

  private async createCluster(machine: MachineRecord, plan: InitPlan): Promise<void> {
    const name = hostOf(plan.endpoint);
    const resolved = isIP(name) ? undefined : this.emulator.cloud.resolveName(machine.account, name);
    const lb = this.emulator.cloud.findLoadBalancerByDnsName(resolved && "loadBalancer" in resolved ? resolved.loadBalancer : name);
    const id = lb?.id ?? machine.instanceId;
    const existing = this.records.cluster(id);
    if (existing) await this.emulator.eraseCluster(existing);
    const ca = { certPem: plan.pki["ca.crt"]!, keyPem: plan.pki["ca.key"]! };
    const host = hostOf(plan.endpoint);
    const serviceIp = formatIPv4(parseCidr(plan.serviceSubnet).base + 1);
    const sans = plan.certSANs ?? [];
    const dnsNames = [...new Set([...(isIP(host) ? [] : [host]), ...sans.filter((n) => !isIP(n)), "kubernetes", "kubernetes.default", "kubernetes.default.svc", `kubernetes.default.svc.${plan.dnsDomain}`, "localhost", plan.node.name])];
    const ipAddresses = [...new Set(["127.0.0.1", serviceIp, plan.advertiseAddress ?? machine.privateIp, ...(isIP(host) ? [host] : []), ...sans.filter((n) => isIP(n))])];
    const cluster: ClusterRecord = {
      id,
      name: plan.clusterName,
      endpoint: plan.endpoint,
      // Clients ask for the name the endpoint gives (a DNS zone's name, or the load balancer's own).
      serverName: host.toLowerCase(),
      account: machine.account,
      region: machine.region,
      kubernetesVersion: plan.kubernetesVersion,
      podSubnet: plan.podSubnet,
      serviceSubnet: plan.serviceSubnet,
      dnsDomain: plan.dnsDomain,
      ca,
      shared: {
        frontProxyCa: caCertHash(plan.pki["front-proxy-ca.crt"]!),
        etcdCa: caCertHash(plan.pki["etcd/ca.crt"]!),
        serviceAccount: publicKeyDigest(plan.pki["sa.pub"]!) ?? "",
      },
      servingNames: { dnsNames, ipAddresses },
      createdAt: this.iso(),
      podCidrsAllocated: 0,
      ...(plan.oidc ? { oidc: plan.oidc } : {}),
    };
    await this.records.saveCluster(cluster);
    const objects = this.emulator.cluster(id)!;
    const expiresAt = plan.tokenTtlMs === 0 ? undefined : this.emulator.now() + plan.tokenTtlMs;
    await objects.initialise(cluster, plan, expiresAt);
    await this.registerNode(cluster, machine, plan);
    const tokenId = plan.token.split(".")[0];
    this.emulator.print(machine.instanceId, [
      `[certs] apiserver serving cert is signed for DNS names [${dnsNames.join(" ")}] and IPs [${ipAddresses.join(" ")}]`,
      '[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace',
      `[mark-control-plane] Marking the node ${machine.nodeName} as control-plane by adding the labels: [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]`,
      `[bootstrap-token] Using token: ${tokenId}.<redacted>`,
      '[bootstrap-token] Creating the "cluster-info" ConfigMap in the "kube-public" namespace',
      "[addons] Applied essential addon: CoreDNS",
      "[addons] Applied essential addon: kube-proxy",
      "Your Kubernetes control-plane has initialized successfully!",
    ]);
    this.emulator.logger.info({ cluster: id, endpoint: plan.endpoint, instance: machine.instanceId }, "workload cluster initialised");
    await this.emulator.servingChanged(machine);
  }

  private async registerNode(cluster: ClusterRecord, machine: MachineRecord, plan: InitPlan | JoinPlan): Promise<void> {
    const slots = 2 ** Math.max(0, 24 - parseCidr(cluster.podSubnet).prefix);
    const podCidr = nodePodCidr(cluster.podSubnet, cluster.podCidrsAllocated % slots);
    cluster.podCidrsAllocated += 1;
    await this.records.saveCluster(cluster);
    const labels = nodeLabelsOf(plan);
    const facts: NodeFacts = {
      name: plan.node.name,
      controlPlane: machine.role !== "worker",
      providerID: providerIdOf(machine),
      internalIp: nodeIpOf(plan.node) ?? machine.privateIp,
      ...(machine.publicIp ? { externalIp: machine.publicIp } : {}),
      podCidr,
      kubeletVersion: plan.software.kubeletVersion,
      containerRuntime: plan.software.containerRuntime,
      vcpus: machine.vcpus,
      memoryMiB: machine.memoryMiB,
      machineType: machine.machineType,
      region: machine.region,
      zone: machine.zone,
      labels: "labels" in labels ? labels.labels : {},
      ...(plan.node.taints ? { taints: plan.node.taints } : {}),
    };
    await this.emulator.cluster(cluster.id)!.addNode(facts, this.iso());
    machine.state = "joined";
    machine.clusterId = cluster.id;
    machine.software = plan.software;
    delete machine.plan;
    delete machine.waitingSince;
    delete machine.lastError;
    await this.records.saveMachine(machine);
    if (machine.role !== "worker") {
      const member = addMember((cluster.etcd ??= { members: [], history: [] }), { name: plan.node.name, instanceId: machine.instanceId, address: machine.privateIp });
      await this.emulator.etcdChanged(cluster, `member ${member.name} added`);
    }
    await this.emulator.syncCluster(cluster);
  }

  /** `kubeadm join`: discovery through the endpoint, the token and the CA pin, then the node registers. */
  async join(machine: MachineRecord): Promise<void> {
    if (await this.refused(machine)) return;
    const plan = machine.plan as JoinPlan | undefined;
    if (!plan || (machine.state !== "pending" && machine.state !== "waiting")) return;
    if (machine.state === "pending") {
      machine.state = "waiting";
      machine.waitingSince = this.emulator.now();
      machine.bindPort = plan.bindPort;
      await this.records.saveMachine(machine);
      this.emulator.print(machine.instanceId, ["[preflight] Running pre-flight checks", ...plan.warnings]);
    }
    const url = clusterInfoUrl(plan.endpoint);
    let found = this.discover(plan.endpoint, machine);
    // An endpoint this cloud does not know may be another cloud's, reached over the public network.
    if ("error" in found && this.emulator.peers.length > 0) {
      const remote = await joinThroughPeers(this.emulator.peers, { machine: guestFacts(machine), plan });
      if (remote && "joined" in remote) return this.joinedElsewhere(machine, plan);
      if (remote && "failure" in remote) return this.fail(machine, remote.failure);
      if (remote) found = { error: remote.error, retryAt: this.emulator.now() + this.emulator.scaled(PUBLIC_RETRY_MS) };
    }
    // An endpoint outside every sim cloud (hosts), in a range the cloud reaches, is joined over the network.
    if ("error" in found && outsideEndpoint(plan.endpoint, this.emulator.outside)) {
      const outside = await joinOutside(machine, plan, providerIdOf(machine));
      if ("joined" in outside) return this.joinedElsewhere(machine, plan);
      if ("failure" in outside) return this.fail(machine, outside.failure);
      found = { error: outside.error, retryAt: this.emulator.now() + this.emulator.scaled(PUBLIC_RETRY_MS) };
    }
    if ("error" in found) {
      const deadline = (machine.waitingSince ?? this.emulator.now()) + this.emulator.scaled(plan.discoveryTimeoutMs);
      const error = `Get "${url}": ${found.error}`;
      if (this.emulator.now() >= deadline) {
        await this.fail(machine, identityFailure(`failed to request the cluster-info ConfigMap: ${error}`));
        return;
      }
      if (machine.lastError !== error) this.emulator.print(machine.instanceId, [`[discovery] Failed to request cluster-info, will try again: ${error}`]);
      machine.lastError = error;
      await this.emulator.schedule(machine, "join", Math.min(found.retryAt ?? deadline, deadline) - this.emulator.now());
      return;
    }
    if (plan.controlPlane && (await this.awaitTurn(found.cluster, machine))) return;
    const failure = await this.discoveryFailure(found.cluster, plan, machine);
    if (failure) {
      await this.fail(machine, failure);
      return;
    }
    const kubelet = this.kubeletFailure(plan);
    if (kubelet) {
      this.emulator.print(machine.instanceId, ["[preflight] Reading configuration from the cluster...", "[kubelet-start] Starting the kubelet"]);
      return this.kubeletNeverHealthy(machine, plan, "kubelet-start", kubelet);
    }
    if (plan.controlPlane) return this.addLearner(found.cluster, machine, plan);
    await this.registerNode(found.cluster, machine, plan);
    this.emulator.print(machine.instanceId, joinedLines(false));
  }

  /**
   * `slipway-join-turn`: the user data takes the Lease JOIN_LEASE before `kubeadm join`, once no other
   * machine holds it (its holder not yet joined, failed or gone, and the lease not run out) and etcd has
   * no learner pending — so that control-plane joins go one at a time. True when the machine waits, or
   * took the turn and its `kubeadm join` now runs (scheduled).
   */
  private async awaitTurn(cluster: ClusterRecord, machine: MachineRecord): Promise<boolean> {
    if (!machine.awaitsTurn) return false;
    const now = this.emulator.now();
    const lease = cluster.joinLease;
    const holder = lease && lease.instanceId !== machine.instanceId && lease.until > now ? this.records.machine(lease.instanceId) : undefined;
    const busy = holder && holder.state !== "joined" && holder.state !== "failed" ? holder.nodeName : undefined;
    const learner = cluster.etcd?.learner && cluster.etcd.learner.instanceId !== machine.instanceId ? cluster.etcd.learner.name : undefined;
    if (busy !== undefined || learner !== undefined) {
      const why = busy !== undefined ? `${busy} holds Lease ${JOIN_LEASE}` : `etcd member ${learner} is still a learner`;
      const line = `[slipway-join-turn] waiting for the control-plane join under way: ${why}`;
      if (machine.lastError !== line) this.emulator.print(machine.instanceId, [line]);
      machine.lastError = line;
      const retry = this.emulator.scaled(TURN_POLL_MS);
      await this.emulator.schedule(machine, "join", busy !== undefined ? Math.min(lease!.until - now, retry) : retry);
      return true;
    }
    cluster.joinLease = { holder: machine.nodeName, instanceId: machine.instanceId, until: now + this.emulator.scaled(JOIN_LEASE_MS) };
    await this.records.saveCluster(cluster);
    delete machine.awaitsTurn;
    delete machine.lastError;
    // kubeadm join starts now, with its own timeouts.
    machine.waitingSince = now;
    this.emulator.print(machine.instanceId, [`[slipway-join-turn] took Lease ${JOIN_LEASE}; running kubeadm join`]);
    await this.emulator.schedule(machine, "join", this.emulator.kubeadmDelay(machine.role));
    return true;
  }

  /**
   * A control-plane join adds its etcd member as a learner — refused while another join's learner is
   * pending, as etcd refuses a second learner (kubeadm retries the add for its etcd API-call timeout; the
   * emulator refuses at once, so that overlapping joins show) — and ends once the learner is promoted.
   */
  private async addLearner(cluster: ClusterRecord, machine: MachineRecord, plan: JoinPlan): Promise<void> {
    const etcd = (cluster.etcd ??= { members: [], history: [] });
    const added = addLearner(etcd, { name: plan.node.name, instanceId: machine.instanceId, address: machine.privateIp });
    if ("refused" in added) {
      await this.fail(machine, new KubeadmFailure("control-plane-join/etcd", [`error creating local etcd static pod manifest file: ${added.refused}`]), LEARNER_LINES.slice(0, 3));
      return;
    }
    machine.joining = cluster.id;
    await this.records.saveCluster(cluster);
    this.emulator.print(machine.instanceId, LEARNER_LINES);
    await this.emulator.schedule(machine, "promote", this.emulator.learnerDelay());
  }

  /** The learner caught up and is promoted: the machine's member votes, its node registers, the join ends. */
  async promote(machine: MachineRecord): Promise<void> {
    const cluster = machine.joining ? this.records.cluster(machine.joining) : undefined;
    const plan = machine.plan as JoinPlan | undefined;
    if (!cluster || !plan || machine.state !== "waiting") return;
    delete machine.joining;
    const etcd = cluster.etcd;
    if (etcd?.learner?.instanceId !== machine.instanceId) {
      await this.fail(machine, new KubeadmFailure("control-plane-join/etcd", ["error creating local etcd static pod manifest file: etcdserver: member not found"]));
      return;
    }
    delete etcd.learner;
    if (cluster.joinLease?.instanceId === machine.instanceId) delete cluster.joinLease;
    machine.servingSince = this.emulator.now();
    await this.registerNode(cluster, machine, plan);
    this.emulator.print(machine.instanceId, joinedLines(true));
    await this.emulator.servingChanged(machine);
  }

  /** The machine joined a cluster of another cloud: its node is there, and this cloud only runs it. */
  private async joinedElsewhere(machine: MachineRecord, plan: JoinPlan): Promise<void> {
    machine.state = "joined";
    machine.software = plan.software;
    delete machine.plan;
    delete machine.waitingSince;
    delete machine.lastError;
    await this.records.saveMachine(machine);
    this.emulator.print(machine.instanceId, joinedLines(false));
  }

  /**
   * A machine of another cloud that reached the endpoint through the public network: the same discovery
   * checks as for a machine of this cloud, then its node registers here. Joining again after it joined
   * answers that it did (its first answer may have been lost).
   */
  async joinGuest(guest: MachineRecord, plan: JoinPlan, reach: Reach): Promise<PublicJoinAnswer> {
    const known = this.records.machine(guest.instanceId);
    if (known?.guest && known.state === "joined") return { joined: true };
    if (known && !known.guest) return { failure: [`error execution phase kubelet-start: instance ${guest.instanceId} is already a machine of this cloud`] };
    if (plan.controlPlane) return { failure: ["error execution phase preflight: a control-plane machine joins only from the control plane's own cloud"] };
    const found = this.clusterServing(reach);
    if ("error" in found) return { error: found.error };
    const failure = await this.discoveryFailure(found.cluster, plan, guest);
    if (failure) return { failure: failure.lines };
    await this.registerNode(found.cluster, guest, plan);
    return { joined: true };
  }

  /** The cluster whose cluster-info the endpoint serves to this machine, or the error discovery meets. */
  private discover(endpoint: string, machine: MachineRecord): { cluster: ClusterRecord } | { error: string; retryAt?: number } {
    return this.clusterServing(this.emulator.reach(endpoint, machine));
  }

  private clusterServing(reach: Reach): { cluster: ClusterRecord } | { error: string; retryAt?: number } {
    if ("error" in reach) return reach;
    const serving = reach.machines.find((m) => m.clusterId !== undefined) ?? reach.machines[0]!;
    const cluster = serving.clusterId ? this.records.cluster(serving.clusterId) : undefined;
    // An API server whose `kubeadm init` has not uploaded cluster-info yet answers, but not with it.
    if (!cluster) return { error: "configmaps \"cluster-info\" is forbidden: User \"system:anonymous\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"kube-public\"" };
    return { cluster };
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
    // A worker's kubelet may not be newer than the oldest API server; a new control-plane machine brings
    // its own, one minor version ahead at most (a rolling upgrade of the control plane).
    const oldest = this.controlPlaneVersion(cluster);
    const kubelet = plan.controlPlane ? controlPlaneSkew(plan.software.kubeletVersion, oldest) : kubeletVersionProblems(plan.software.kubeletVersion, plan.software.kubeletVersion, oldest);
    if (kubelet.length > 0) return new KubeadmFailure("preflight", kubelet.map((p) => `[ERROR ${p.check}]: ${p.message}`));
    if (plan.controlPlane) {
      const problems = [...pkiFileErrors(plan.pki), ...this.foreignKeys(cluster, plan.pki)];
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

  /** The oldest version the cluster's running control-plane machines run (what its API servers are at least). */
  controlPlaneVersion(cluster: ClusterRecord): string {
    const serving = this.records.machinesOf(cluster.id).filter((m) => m.role !== "worker" && m.state === "joined" && m.silentSince === undefined && m.software);
    const versions = serving.map((m) => m.software!.kubeletVersion);
    return versions.sort(compareVersions)[0] ?? cluster.kubernetesVersion;
  }

  /** The shared keys a control-plane machine carries that are not the cluster's. */
  private foreignKeys(cluster: ClusterRecord, pki: Record<string, string>): string[] {
    const problems: string[] = [];
    const check = (file: string, actual: string | undefined, expected: string, what: string) => {
      if (pki[file] && actual !== expected) problems.push(`[ERROR ${what}]: ${PKI_DIR}/${file} is not the cluster's ${what === "ServiceAccountKey" ? "service-account key" : "certificate authority"} (${file} differs from the one the control plane uses)`);
    };
    const hash = (file: string) => {
      try {
        return pki[file] ? caCertHash(pki[file]) : undefined;
      } catch {
        return undefined;
      }
    };
    check("ca.crt", hash("ca.crt"), this.emulator.caPin(cluster), "CertificateAuthority");
    // Clusters recorded before the shared keys were kept can only be checked for their CA.
    if (!cluster.shared) return problems;
    check("front-proxy-ca.crt", hash("front-proxy-ca.crt"), cluster.shared.frontProxyCa, "CertificateAuthority");
    check("etcd/ca.crt", hash("etcd/ca.crt"), cluster.shared.etcdCa, "CertificateAuthority");
    check("sa.pub", pki["sa.pub"] ? publicKeyDigest(pki["sa.pub"]) : undefined, cluster.shared.serviceAccount, "ServiceAccountKey");
    return problems;
  }

  /** Legacy "give-up": a discovery attempt (its deadline decides). */
  async giveUp(machine: MachineRecord): Promise<void> {
    await this.join(machine);
  }

  /** The network plugin's pod on the machine's node starts (and crashes again later while misconfigured). */
  async ready(machine: MachineRecord): Promise<void> {
    const cluster = machine.clusterId ? this.records.cluster(machine.clusterId) : undefined;
    if (!cluster || machine.state !== "joined" || machine.silentSince !== undefined) return;
    const started = await this.emulator.cluster(cluster.id)!.controllers.startNetworkPlugin(machine.nodeName, this.iso());
    await this.emulator.syncCluster(cluster);
    if (started?.failure) await this.emulator.pluginCrashed(machine, started.restarts);
  }

  /** The node-monitor grace period ran out: the node of a machine that went down turns Unknown. */
  async silent(machine: MachineRecord): Promise<void> {
    const cluster = machine.clusterId ? this.records.cluster(machine.clusterId) : undefined;
    if (!cluster || machine.silentSince === undefined) return;
    await this.emulator.cluster(cluster.id)!.nodeUnreachable(machine.nodeName, this.iso(), !machine.terminated, providerIdOf(machine));
    if (machine.terminated) {
      // The cloud node-lifecycle controller finds the instance gone at its next look and deletes the node.
      machine.state = "lost";
      const at = machine.silentSince + this.emulator.scaled(NODE_GONE_AFTER_MS);
      await this.emulator.schedule(machine, "remove", at - this.emulator.now());
    } else {
      await this.records.saveMachine(machine);
    }
    await this.emulator.syncCluster(cluster);
  }

  /** The node of a vanished machine is deleted; the last control plane takes the cluster with it. */
  async remove(machine: MachineRecord): Promise<void> {
    const cluster = machine.clusterId ? this.records.cluster(machine.clusterId) : undefined;
    await this.records.removeMachine(machine.instanceId);
    if (!cluster) return;
    await this.emulator.cluster(cluster.id)!.removeNode(machine.nodeName, providerIdOf(machine));
    if (this.records.machinesOf(cluster.id).some((m) => m.role !== "worker" && m.state === "joined")) await this.emulator.memberHealthChanged(machine, "gone");
    const controlPlaneLeft = this.records.machinesOf(cluster.id).some((m) => m.role !== "worker" && m.state === "joined");
    if (machine.role !== "worker" && !controlPlaneLeft) {
      await this.emulator.eraseCluster(cluster);
      return;
    }
    await this.emulator.syncCluster(cluster);
  }
}

