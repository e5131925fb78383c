// The workload-cluster emulator's engine: it follows the sim cloud's instances through its hooks and does
// what cloud-init, kubeadm, the kubelets and the controllers of each cluster would do — install, init,
// join (or refuse to), run the pods, turn nodes Ready once the network plugin runs on them, and NotReady
// when their machine goes down. Connections to a cluster go through its endpoint as the cloud routes
// them (a load balancer's healthy targets, or a node's address). Each machine's next step is persisted
// with when it is due, so a restart resumes it; work on one cluster runs one step at a time, clusters
// run in parallel, and an idle cluster holds no timer.
import { isIP } from "node:net";
import type { Logger } from "pino";
import type { KubeObject } from "../../api/meta.ts";
import type { KindDefinition, Registry } from "../../api/registry.ts";
import type { PostWriteHook } from "../../apiserver/admission.ts";
import { ServedRbac } from "../../apiserver/authorization/served.ts";
import { QuotaEnforcement } from "../../apiserver/quota/enforcement.ts";
import { SYSTEM_IDENTITY } from "../../apiserver/request-context.ts";
import { caCertHash, issueCertificate, type KeyPairPem } from "../../bootstrap/pki.ts";
import { PrefixedStoreFamily } from "../../store/prefixed.ts";
import type { Store } from "../../store/store.ts";
import { image } from "../catalog.ts";
import type { SimCloud } from "../cloud.ts";
import type { TimerHandle } from "../clock.ts";
import type { PublishedEndpoint, SimCloudHooks } from "../core.ts";
import type { Instance, LoadBalancer } from "../types.ts";
import { clientSigner, requestorAdmission } from "./certificates.ts";
import { WorkloadCluster } from "./cluster.ts";
import { crashBackoffMs } from "./controllers.ts";
import { KubeadmSteps, providerIdOf } from "./kubeadm-steps.ts";
import { bootOutcome } from "./kubeadm-plan.ts";
import { NETWORK_PLUGINS } from "./network-plugins.ts";
import { hasQuorum, snapshot, type EtcdMember } from "./etcd.ts";
import { guestRecord, type PublicJoinAnswer, type PublicJoinRequest } from "./public-join.ts";
import { EmulatorRecords, hostOf, portOf, type ClusterRecord, type MachineAction, type MachineRecord } from "./records.ts";

/** Where the objects of every cluster live in the store: /clusters/<id>/… */
export const CLUSTERS_ROOT = "/clusters/";
/** How long the node-lifecycle controller waits for a silent kubelet before the node turns Unknown (simulated ms). */
export const NODE_MONITOR_GRACE_MS = 40_000;
/** How often the cloud node-lifecycle controller looks for nodes whose instance is gone (simulated ms). */
export const NODE_MONITOR_PERIOD_MS = 5_000;
/** From a machine going away to its node being deleted: the grace period, then the next look (simulated ms). */
export const NODE_GONE_AFTER_MS = NODE_MONITOR_GRACE_MS + NODE_MONITOR_PERIOD_MS;

/** Where a connection to a cluster's endpoint lands: the machines whose API server answers it, or the error. */
export type Reach = { machines: MachineRecord[] } | { error: string; retryAt?: number };

export interface WorkloadEmulatorOptions {
  cloud: SimCloud;
  store: Store;
  registry: Registry;
  logger: Logger;
  /** Base URLs of the other clouds on the public network, asked about endpoints this cloud does not know (public-join.ts). */
  peers?: readonly string[];
  /** Address ranges outside every sim cloud that its machines reach, as through a NAT gateway (outside-join.ts). */
  outside?: readonly string[];
}

export class WorkloadEmulator {
  readonly records: EmulatorRecords;
  readonly cloud: SimCloud;
  readonly logger: Logger;
  private readonly family: PrefixedStoreFamily;
  private readonly clusters = new Map<string, WorkloadCluster>();
  private readonly timers = new Map<string, TimerHandle>();
  private readonly queues = new Map<string, Promise<void>>();
  private readonly steps: KubeadmSteps;
  private readonly goneListeners: ((cluster: ClusterRecord) => void)[] = [];
  private readonly pins = new Map<string, string>();
  private readonly issuing = new Map<string, Promise<KeyPairPem>>();
  private detach: (() => void) | undefined;
  private closed = false;

  constructor(private readonly options: WorkloadEmulatorOptions) {
    this.cloud = options.cloud;
    this.logger = options.logger;
    this.records = new EmulatorRecords(options.store);
    this.family = new PrefixedStoreFamily(options.store, CLUSTERS_ROOT);
    this.steps = new KubeadmSteps(this);
  }

  /** Loads what a previous run left, attaches to the cloud, and re-arms every pending step. */
  async start(publish: (lb: LoadBalancer) => PublishedEndpoint): Promise<void> {
    await this.records.load();
    const hooks: SimCloudHooks = {
      onInstanceBooted: (instance, userData, context) =>
        context.firstBoot ? this.machineBooted(instance, userData) : void this.onCluster(this.records.machine(instance.id)?.endpoint, () => this.machineBack(instance.id)),
      onInstanceStopping: (instance) => void this.onCluster(this.records.machine(instance.id)?.endpoint, () => this.machineDown(instance.id, false)),
      onInstanceTerminated: (instance) => void this.onCluster(this.records.machine(instance.id)?.endpoint, () => this.machineDown(instance.id, true)),
      targetServingSince: (instanceId, port) => this.servingSince(instanceId, port),
      onTargetsChanged: (lb) => this.wake(lb.dnsName),
      onNameChanged: (name) => this.wake(name),
      onLoadBalancerActive: (lb) => {
        this.wake(lb.dnsName);
        return publish(lb);
      },
    };
    this.detach = this.cloud.addHooks(hooks);
    for (const machine of this.records.allMachines()) {
      const instance = this.cloud.findInstance(machine.instanceId);
      if (machine.guest) {
        this.arm(machine);
      } else if ((!instance || instance.state === "terminated") && machine.state !== "lost" && !machine.terminated) {
        void this.onCluster(machine.endpoint, () => this.machineDown(machine.instanceId, true));
      } else if ((machine.state === "waiting" || machine.state === "starting") && !machine.due) {
        await this.schedule(machine, machine.state === "starting" ? "upload" : "join", 0);
      } else {
        this.arm(machine);
      }
    }
  }

  /** The objects of a cluster (undefined when there is no such cluster). */
  cluster(id: string): WorkloadCluster | undefined {
    if (!this.records.cluster(id)) return undefined;
    let cluster = this.clusters.get(id);
    if (!cluster) {
      // Each cluster enforces its own RBAC objects and ResourceQuotas, as kube-apiserver does.
      const rbac = new ServedRbac();
      const quotas = new QuotaEnforcement(() => new Date(this.cloud.clock.now()));
      const csrKind = this.options.registry.byKind("certificates.k8s.io/v1", "CertificateSigningRequest")!;
      const signer = clientSigner(csrKind, { ca: () => this.records.cluster(id)?.ca, now: () => new Date(this.cloud.clock.now()) });
      cluster = new WorkloadCluster(id, this.options.registry, this.family.view(id), {
        authorizer: rbac.authorizer,
        admission: [rbac.admission, quotas.admission, requestorAdmission(csrKind)],
        postWrite: [rbac.hook, quotas.hook, signer, this.reactions(id)],
      }, rbac);
      rbac.attach(cluster.objects);
      this.clusters.set(id, cluster);
    }
    return cluster;
  }

  /**
   * What the cluster's controllers do after a write to its API: they act on what clients (kubectl,
   * Slipway's controllers) wrote, and not on the emulator's own writes, which they make themselves.
   * Status writes are left alone. (Quotas get their status from the quota hook, whoever wrote them.)
   */
  private reactions(clusterId: string): PostWriteHook {
    return {
      name: "WorkloadControllers",
      afterWrite: (event) => {
        if (event.request.resource.subresource !== undefined) return;
        const { def, object, operation } = event;
        if (event.request.identity.user === SYSTEM_IDENTITY.user) return;
        return this.clientWrote(clusterId, operation === "DELETE" ? "delete" : operation === "CREATE" ? "create" : "update", def, object);
      },
    };
  }

  /** The cluster CA's discovery hash (sha256:<SPKI digest>), as joins pin it. */
  caPin(cluster: ClusterRecord): string {
    let pin = this.pins.get(cluster.id);
    if (!pin) this.pins.set(cluster.id, (pin = caCertHash(cluster.ca.certPem)));
    return pin;
  }

  /** The API server's serving certificate, issued by the cluster CA on first use and kept. */
  servingCertificate(cluster: ClusterRecord): Promise<KeyPairPem> {
    if (cluster.serving) return Promise.resolve(cluster.serving);
    let issuing = this.issuing.get(cluster.id);
    if (!issuing) {
      issuing = issueCertificate(cluster.ca, { commonName: "kube-apiserver", ...cluster.servingNames, usages: ["server"] }).then(async (serving) => {
        cluster.serving = serving;
        if (this.records.cluster(cluster.id) === cluster) await this.records.saveCluster(cluster);
        return serving;
      });
      const settled = issuing.finally(() => this.issuing.delete(cluster.id));
      this.issuing.set(cluster.id, settled);
      return settled;
    }
    return issuing;
  }

  /** Called with a cluster whose control plane is gone for good (its objects are erased). */
  onClusterGone(listener: (cluster: ClusterRecord) => void): void {
    this.goneListeners.push(listener);
  }

  async eraseCluster(cluster: ClusterRecord): Promise<void> {
    await this.cluster(cluster.id)?.erase();
    this.clusters.delete(cluster.id);
    this.pins.delete(cluster.id);
    await this.records.removeCluster(cluster.id);
    for (const listener of this.goneListeners) listener(cluster);
    this.logger.info({ cluster: cluster.id, endpoint: cluster.endpoint }, "workload cluster erased");
  }

  /** Runs `work` after the work already queued for the same cluster (keyed by its endpoint); failures are logged. */
  onCluster(endpoint: string | undefined, work: () => Promise<void>): Promise<void> {
    if (endpoint === undefined || this.closed) return Promise.resolve();
    return this.exclusive(endpoint, work).catch((error: unknown) => {
      if (!this.closed) this.logger.error({ err: error, endpoint }, "workload emulator step failed");
    });
  }

  /** Runs `work` in the cluster's queue (keyed by its endpoint) and answers what it answers or throws. */
  exclusive<T>(endpoint: string, work: () => Promise<T>): Promise<T> {
    const run = (this.queues.get(endpoint) ?? Promise.resolve()).then(() => (this.closed ? Promise.reject(new Error("the workload emulator is closed")) : work()));
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(endpoint, settled);
    void settled.then(() => {
      if (this.queues.get(endpoint) === settled) this.queues.delete(endpoint);
    });
    return run;
  }

  /** Real milliseconds for simulated ones. */
  scaled(simulatedMs: number): number {
    return simulatedMs * this.cloud.timeScale;
  }

  now(): number {
    return this.cloud.clock.now();
  }

  /** Appends kubeadm's output to the machine's boot log (nothing when the instance is gone). */
  print(instanceId: string, lines: string[]): void {
    if (this.closed || lines.length === 0 || !this.cloud.hasInstance(instanceId)) return;
    this.cloud.appendBootLog(instanceId, lines);
  }

  /** Sets the machine's next step `delayMs` (real) from now, saves it and arms its timer. */
  async schedule(machine: MachineRecord, action: MachineAction, delayMs: number): Promise<void> {
    machine.due = { action, at: this.now() + Math.max(0, delayMs) };
    await this.records.saveMachine(machine);
    this.arm(machine);
  }

  private arm(machine: MachineRecord): void {
    const id = machine.instanceId;
    const previous = this.timers.get(id);
    if (previous) this.cloud.clock.clearTimer(previous);
    this.timers.delete(id);
    const due = machine.due;
    if (!due || this.closed) return;
    this.timers.set(
      id,
      this.cloud.clock.setTimer(due.at - this.now(), () => {
        this.timers.delete(id);
        void this.onCluster(machine.endpoint, () => this.runDue(id, due));
      }),
    );
  }

  private async runDue(instanceId: string, due: NonNullable<MachineRecord["due"]>): Promise<void> {
    const machine = this.records.machine(instanceId);
    if (!machine?.due || machine.due.at !== due.at || machine.due.action !== due.action) return;
    delete machine.due;
    switch (due.action) {
      case "init":
        return this.steps.init(machine);
      case "upload":
        return this.steps.upload(machine);
      case "join":
        return this.steps.join(machine);
      case "give-up":
        return this.steps.giveUp(machine);
      case "fail":
        return this.steps.failNow(machine);
      case "ready":
        return this.steps.ready(machine);
      case "silent":
        return this.steps.silent(machine);
      case "remove":
        return this.steps.remove(machine);
      case "promote":
        return this.steps.promote(machine);
    }
  }

  /** A machine booted for the first time: cloud-init runs its user data, and kubeadm if it installed it. */
  private async machineBooted(instance: Instance, userData: string): Promise<void> {
    // The bootstrap fetch reads its secret through the cloud with this instance's identity.
    const readSecret = (ref: { id: string; region: string }) => this.cloud.getSecretValueAsInstance(instance.id, ref.region, ref.id).value;
    const outcome = bootOutcome(userData, { vcpus: instance.vcpus, memoryMiB: instance.memoryMiB, image: image(instance.region, instance.imageId), hostname: instance.id, readSecret, metadata: { localIpv4: instance.privateIp, ...(instance.publicIp ? { publicIpv4: instance.publicIp } : {}) } });
    this.print(instance.id, outcome.output);
    if (!outcome.command) return;
    const plan = outcome.plan;
    const command = outcome.command;
    const machine: MachineRecord = {
      instanceId: instance.id,
      account: instance.account,
      region: instance.region,
      zone: instance.zone,
      networkId: instance.networkId,
      machineType: instance.machineType,
      vcpus: instance.vcpus,
      memoryMiB: instance.memoryMiB,
      privateIp: instance.privateIp,
      ...(instance.publicIp ? { publicIp: instance.publicIp } : {}),
      role: command === "init" ? "init" : plan?.command === "join" && plan.controlPlane ? "control-plane" : "worker",
      nodeName: plan?.node.name ?? instance.id,
      endpoint: plan?.endpoint ?? `unconfigured/${instance.id}`,
      state: "pending",
      ...(plan ? { plan } : {}),
      ...(outcome.failure ? { failure: outcome.failure.lines } : {}),
      ...(outcome.setup?.awaitsTurn && command === "join" ? { awaitsTurn: true } : {}),
    };
    await this.schedule(machine, command, outcome.failure || machine.awaitsTurn ? 0 : this.kubeadmDelay(machine.role));
  }

  /**
   * How long kubeadm takes before it reaches the cluster: init, up to its API server; a worker's join, up
   * to registering its node; a control-plane join, up to adding its etcd member (the other half is the
   * learner catching up: `learnerDelay`).
   */
  kubeadmDelay(role: MachineRecord["role"]): number {
    if (role === "init") return this.cloud.sampleDelay("kubeadmInit");
    const join = this.cloud.sampleDelay("kubeadmJoin");
    return role === "control-plane" ? join / 2 : join;
  }

  /** From a control-plane join's etcd member add to its promotion and the join's end. */
  learnerDelay(): number {
    return this.cloud.sampleDelay("kubeadmJoin") / 2;
  }

  /**
   * The machine goes down (stopping, or terminated): its kubelet stops posting, and after the node-monitor
   * grace period its node turns Unknown — then, if the instance is gone, the node is deleted. A machine
   * that never became a node has its kubeadm end with it.
   */
  private async machineDown(instanceId: string, terminated: boolean): Promise<void> {
    const machine = this.records.machine(instanceId);
    if (!machine || machine.state === "lost") return;
    if (machine.state !== "joined") {
      this.clearTimer(instanceId);
      await this.records.removeMachine(instanceId);
      await this.servingChanged(machine);
      return;
    }
    const wasSilent = machine.silentSince !== undefined;
    if (terminated) machine.terminated = true;
    if (!wasSilent) {
      machine.silentSince = this.now();
      await this.schedule(machine, "silent", this.scaled(NODE_MONITOR_GRACE_MS));
    } else if (terminated && machine.due?.action !== "silent") {
      // Stopped before and now gone: the next look of the node-lifecycle controller deletes the node.
      machine.state = "lost";
      await this.schedule(machine, "remove", this.scaled(NODE_MONITOR_PERIOD_MS));
    } else {
      await this.records.saveMachine(machine);
    }
    if (!wasSilent) await this.memberHealthChanged(machine, "unreachable");
    await this.servingChanged(machine);
  }

  /** A stopped machine started again: its kubelet posts again, and the network plugin on it restarts. */
  private async machineBack(instanceId: string): Promise<void> {
    const machine = this.records.machine(instanceId);
    const cluster = machine?.clusterId ? this.records.cluster(machine.clusterId) : undefined;
    if (!machine || machine.silentSince === undefined || machine.terminated || !cluster) return;
    this.clearTimer(instanceId);
    delete machine.silentSince;
    delete machine.due;
    if (machine.role !== "worker") machine.servingSince = this.now();
    await this.records.saveMachine(machine);
    await this.cluster(cluster.id)?.nodeBack(machine.nodeName, new Date(this.now()).toISOString(), providerIdOf(machine));
    await this.restartNetworkPlugin(cluster);
    await this.syncCluster(cluster);
    await this.memberHealthChanged(machine, "reachable again");
    await this.servingChanged(machine);
  }

  private clearTimer(instanceId: string): void {
    const timer = this.timers.get(instanceId);
    if (timer) this.cloud.clock.clearTimer(timer);
    this.timers.delete(instanceId);
  }

  /** Whether the machine's API server answers on `port`. */
  private serves(machine: MachineRecord, port: number): boolean {
    return (
      machine.role !== "worker" &&
      (machine.state === "starting" || machine.state === "joined") &&
      machine.servingSince !== undefined &&
      machine.silentSince === undefined &&
      (machine.bindPort ?? 6443) === port
    );
  }

  /** For the cloud's health checks: since when the instance answers on the port (undefined: it does not). */
  private servingSince(instanceId: string, port: number): number | undefined {
    const machine = this.records.machine(instanceId);
    return machine && this.serves(machine, port) ? machine.servingSince : undefined;
  }

  /**
   * Where a connection to `endpoint` (host:port) lands, from a machine's network or (no machine) from
   * outside the cloud: through the load balancer the host names (or, for a name of one of `account`'s DNS
   * zones, the one its record aliases), to its healthy targets whose API server answers, or straight to the
   * machine at that address.
   */
  reach(endpoint: string, from: MachineRecord | undefined, account = from?.account, network = from?.networkId): Reach {
    const name = hostOf(endpoint);
    const port = portOf(endpoint);
    // A name of a DNS zone leads where its A record does: a load balancer it aliases, or its first address.
    const resolved = isIP(name) || account === undefined ? undefined : this.cloud.resolveName(account, name);
    const host = !resolved ? name : "loadBalancer" in resolved ? resolved.loadBalancer : resolved.addresses[0]!;
    if (isIP(host)) {
      const target = this.records.machineAt(host, from?.networkId);
      if (!target || target.silentSince !== undefined) return { error: `dial tcp ${endpoint}: i/o timeout` };
      return this.serves(target, port) ? { machines: [target] } : { error: `dial tcp ${endpoint}: connect: connection refused` };
    }
    const route = this.cloud.routeThroughLoadBalancer(host, port, network ? { networkId: network } : {});
    if ("error" in route) return host === name ? route : { ...route, error: route.error.replaceAll(host, name) };
    const machines = route.targets.flatMap((id) => {
      const machine = this.records.machine(id);
      return machine && this.serves(machine, route.targetPort) ? [machine] : [];
    });
    return machines.length > 0 ? { machines } : { error: `dial tcp ${endpoint}: connect: connection refused` };
  }

  /** The other clouds on the public network. */
  get peers(): readonly string[] {
    return this.options.peers ?? [];
  }

  /** The ranges outside the sim clouds its machines reach. */
  get outside(): readonly string[] {
    return this.options.outside ?? [];
  }

  /**
   * Where a connection from another cloud's public address `from` to `endpoint` lands here: machines whose
   * API server answers, the error, or undefined when the endpoint is not one of this cloud's.
   */
  reachFromPublic(from: string | undefined, endpoint: string): Reach | undefined {
    const route = this.cloud.routeFromPublic(from, hostOf(endpoint), portOf(endpoint));
    if ("unknown" in route) return undefined;
    if ("error" in route) return { error: route.error };
    const machines = route.targets.flatMap((id) => {
      const machine = this.records.machine(id);
      return machine && this.serves(machine, route.targetPort) ? [machine] : [];
    });
    return machines.length > 0 ? { machines } : { error: `dial tcp ${endpoint}: connect: connection refused` };
  }

  /** A machine of another cloud joins a cluster here through the public network (public-join.ts). */
  joinGuest(request: PublicJoinRequest): Promise<PublicJoinAnswer> {
    const reach = this.reachFromPublic(request.machine.publicIp, request.plan.endpoint);
    if (!reach) return Promise.resolve({ unknown: true });
    return this.exclusive(request.plan.endpoint, () => this.steps.joinGuest(guestRecord(request), request.plan, reach));
  }

  /**
   * Whether a client of the loopback port reaches the cluster's API at its endpoint now (its etcd must have
   * quorum). The port is the cloud's forwarding into the network of the cluster's load balancer — what a
   * private endpoint or a bastion gives a real cloud's customers — so an internal load balancer answers there
   * too; machines of other clouds still reach only internet-facing ones (reachFromPublic).
   */
  answers(cluster: ClusterRecord): boolean {
    const reach = this.reach(cluster.endpoint, undefined, cluster.account, this.cloud.loadBalancerNetworkId(cluster.id));
    return "machines" in reach && reach.machines.some((m) => m.clusterId === cluster.id) && this.etcdHasQuorum(cluster);
  }

  /** An etcd member is up while its machine is joined and running. */
  readonly memberHealthy = (member: EtcdMember): boolean => {
    const machine = this.records.machine(member.instanceId);
    return machine !== undefined && machine.state === "joined" && machine.silentSince === undefined;
  };

  etcdHasQuorum(cluster: ClusterRecord): boolean {
    return !cluster.etcd || hasQuorum(cluster.etcd.members, this.memberHealthy);
  }

  /**
   * Records a change of the cluster's etcd membership or of its members' health, and writes the record
   * where a client of the cluster can read it (ConfigMap kube-system/etcd-membership).
   */
  async etcdChanged(cluster: ClusterRecord, event: string): Promise<void> {
    const etcd = (cluster.etcd ??= { members: [], history: [] });
    const wasBroken = etcd.broken;
    snapshot(etcd, event, this.memberHealthy, new Date(this.now()).toISOString());
    if (etcd.broken && !wasBroken) this.logger.warn({ cluster: cluster.id, reason: etcd.broken }, "workload control plane broken");
    await this.records.saveCluster(cluster);
    await this.cluster(cluster.id)?.writeEtcdRecord(etcd);
  }

  /** A control-plane machine's health changed (down, back, gone): its member's, if it is one, too. */
  async memberHealthChanged(machine: MachineRecord, what: string): Promise<void> {
    const cluster = machine.clusterId ? this.records.cluster(machine.clusterId) : undefined;
    const member = cluster?.etcd?.members.find((m) => m.instanceId === machine.instanceId);
    if (!cluster || !member) return;
    if (what === "gone") cluster.etcd!.broken ??= `the machine of etcd member ${member.name} went without the member being removed first`;
    await this.etcdChanged(cluster, `member ${member.name} ${what}`);
  }

  /** Machines trying an endpoint on `host` try again now (something that decides where it leads changed). */
  private wake(host: string): void {
    const names = [host.toLowerCase(), ...(isIP(host) ? [] : this.cloud.namesAliasing(host))];
    for (const machine of names.flatMap((name) => this.records.waitingOn(name))) {
      const action: MachineAction = machine.state === "starting" ? "upload" : "join";
      void this.onCluster(machine.endpoint, async () => {
        const current = this.records.machine(machine.instanceId);
        if (current?.state === machine.state && current.due?.action === action) await this.schedule(current, action, 0);
      });
    }
  }

  /** A machine's API server started or stopped answering: whoever tries its addresses or load balancers tries again. */
  async servingChanged(machine: MachineRecord): Promise<void> {
    const hosts = [machine.privateIp, ...(machine.publicIp ? [machine.publicIp] : []), ...this.cloud.loadBalancersTargeting(machine.instanceId)];
    for (const host of hosts) this.wake(host);
  }

  /** The network plugin starts on a node in about half a kubeadm join. */
  private pluginDelay(): number {
    return this.cloud.sampleDelay("kubeadmJoin") / 2;
  }

  /** Runs the cluster's controllers; network-plugin pods they made start on their nodes shortly. */
  async syncCluster(cluster: ClusterRecord): Promise<void> {
    const objects = this.cluster(cluster.id);
    if (!objects || this.closed) return;
    const { pluginPending } = await objects.controllers.sync(new Date(this.now()).toISOString());
    await this.startPluginOn(cluster, pluginPending);
  }

  private async startPluginOn(cluster: ClusterRecord, nodes: readonly string[]): Promise<void> {
    if (nodes.length === 0) return;
    const wanted = new Set(nodes);
    for (const machine of this.records.machinesOf(cluster.id)) {
      if (wanted.has(machine.nodeName) && machine.state === "joined" && machine.silentSince === undefined && machine.due?.action !== "ready") {
        await this.schedule(machine, "ready", this.pluginDelay());
      }
    }
  }

  /** Nodes whose network-plugin pod does not run try to start it again (its configuration may have changed). */
  private async restartNetworkPlugin(cluster: ClusterRecord): Promise<void> {
    const objects = this.cluster(cluster.id);
    if (objects) await this.startPluginOn(cluster, await objects.controllers.nodesWithoutNetwork());
  }

  /** The network plugin crashed on the machine's node: the kubelet restarts it after its back-off. */
  async pluginCrashed(machine: MachineRecord, restarts: number): Promise<void> {
    await this.schedule(machine, "ready", this.scaled(crashBackoffMs(restarts)));
  }

  /** After a client's write to a cluster, the controllers act on it. */
  async clientWrote(clusterId: string, verb: string, def: KindDefinition, object: KubeObject): Promise<void> {
    const cluster = this.records.cluster(clusterId);
    if (!cluster) return;
    const workloadKind = (def.group === "apps" && (def.kind === "DaemonSet" || def.kind === "Deployment")) || (def.group === "batch" && def.kind === "Job") || (def.group === "policy" && def.kind === "PodDisruptionBudget");
    const core = def.group === "" && (def.kind === "Node" || (def.kind === "Pod" && verb === "delete"));
    if (workloadKind || core) {
      await this.onCluster(cluster.endpoint, () => this.syncCluster(cluster));
    } else if (def.group === "" && def.kind === "ConfigMap" && verb !== "delete" && NETWORK_PLUGINS.some((p) => p.namespace === object.metadata.namespace)) {
      await this.onCluster(cluster.endpoint, () => this.restartNetworkPlugin(cluster));
    }
  }

  /** Resolves once no step is running or queued (timers may still be armed). */
  async idle(): Promise<void> {
    while (this.queues.size > 0) await Promise.all([...this.queues.values()]);
    await this.records.flush();
  }

  /** Stops every timer and detaches from the cloud; pending steps resume at the next start. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.detach?.();
    for (const timer of this.timers.values()) this.cloud.clock.clearTimer(timer);
    this.timers.clear();
    await Promise.allSettled([...this.queues.values()]);
    await this.records.flush();
  }

  get isClosed(): boolean {
    return this.closed;
  }
}
