// The workload-cluster emulator's engine: it follows the sim cloud's instances through its hooks and does
// what kubeadm, the kubelets and the controllers of each cluster would do — init, join (or refuse to),
// nodes turning Ready once a network plugin is applied, nodes of vanished machines going away. Each
// machine's next step is persisted with when it is due, so a restart resumes it; work on one cluster
// runs one step at a time, clusters run in parallel, and an idle cluster holds no timer.
import type { Logger } from "pino";
import type { Registry } from "../../api/registry.ts";
import type { PostWriteHook, WriteEvent } from "../../apiserver/admission.ts";
import { cniOfDaemonSet } from "../../bootstrap/cni.ts";
import { caCertHash, issueCertificate, type KeyPairPem } from "../../bootstrap/pki.ts";
import { PrefixedStoreFamily } from "../../store/prefixed.ts";
import type { Store } from "../../store/store.ts";
import type { SimCloud } from "../cloud.ts";
import type { TimerHandle } from "../clock.ts";
import type { PublishedEndpoint, SimCloudHooks } from "../core.ts";
import type { Instance, LoadBalancer } from "../types.ts";
import { WorkloadCluster } from "./cluster.ts";
import { KubeadmSteps } from "./kubeadm-steps.ts";
import { KubeadmFailure, kubeadmPlan, type KubeadmPlan } from "./kubeadm-plan.ts";
import { EmulatorRecords, type ClusterRecord, type MachineAction, type MachineRecord } from "./records.ts";

/** Where the objects of every cluster live in the store: /clusters/<id>/… */
export const CLUSTERS_ROOT = "/clusters/";
/** How long the node-lifecycle controller waits for a silent node before deleting it (simulated ms). */
export const NODE_GONE_AFTER_MS = 40_000;

export interface WorkloadEmulatorOptions {
  cloud: SimCloud;
  store: Store;
  registry: Registry;
  logger: Logger;
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
      onInstanceBooted: (instance, userData, context) => (context.firstBoot ? this.machineBooted(instance, userData) : undefined),
      onInstanceTerminated: (instance) => void this.onCluster(this.records.machine(instance.id)?.endpoint, () => this.machineGone(instance.id)),
      isTargetServing: (instance) => this.isServing(instance.id),
      onLoadBalancerActive: (lb) => publish(lb),
    };
    this.detach = this.cloud.addHooks(hooks);
    for (const machine of this.records.allMachines()) {
      const instance = this.cloud.findInstance(machine.instanceId);
      if ((!instance || instance.state === "terminated") && machine.state !== "lost") {
        void this.onCluster(machine.endpoint, () => this.machineGone(machine.instanceId));
      } else if (machine.state === "waiting" && this.records.clusterAt(machine.endpoint)) {
        await this.schedule(machine, "join", 0);
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
      cluster = new WorkloadCluster(id, this.options.registry, this.family.view(id), { postWrite: [this.reactions(id)] });
      this.clusters.set(id, cluster);
    }
    return cluster;
  }

  /**
   * What the cluster's controllers do after a write to its API, whoever wrote (kubectl, Slipway's
   * controllers, the emulator): a network plugin's DaemonSet readies the nodes; a ResourceQuota gets a
   * status. Status writes are left alone (the quota's own status write among them).
   */
  private reactions(clusterId: string): PostWriteHook {
    return {
      name: "WorkloadControllers",
      afterWrite: (event) => {
        if (event.operation === "DELETE" || event.request.resource.subresource !== undefined) return;
        const { group, kind } = event.def;
        if ((group === "apps" && kind === "DaemonSet") || (group === "" && kind === "ResourceQuota")) return this.reactToWrite(clusterId, event);
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

  /** Runs `work` after the work already queued for the same cluster (keyed by its endpoint). */
  onCluster(endpoint: string | undefined, work: () => Promise<void>): Promise<void> {
    if (endpoint === undefined || this.closed) return Promise.resolve();
    const run = (this.queues.get(endpoint) ?? Promise.resolve()).then(() => (this.closed ? undefined : work()));
    const settled = run.catch((error: unknown) => {
      if (!this.closed) this.logger.error({ err: error, endpoint }, "workload emulator step failed");
    });
    this.queues.set(endpoint, settled);
    void settled.then(() => {
      if (this.queues.get(endpoint) === settled) this.queues.delete(endpoint);
    });
    return settled;
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
    if (this.closed || lines.length === 0 || !this.cloud.findInstance(instanceId)) return;
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
      case "join":
        return this.steps.join(machine);
      case "give-up":
        return this.steps.giveUp(machine);
      case "ready":
        return this.steps.ready(machine);
      case "remove":
        return this.steps.remove(machine);
    }
  }

  /** A machine booted: when its user data runs kubeadm, plan the step after kubeadm's own duration. */
  private async machineBooted(instance: Instance, userData: string): Promise<void> {
    let plan: KubeadmPlan | undefined;
    let failure: KubeadmFailure | undefined;
    try {
      plan = kubeadmPlan(userData);
    } catch (error) {
      if (!(error instanceof KubeadmFailure)) throw error;
      failure = error;
    }
    if (!plan && !failure) return;
    const command = plan?.command ?? (/^\s*-\s*kubeadm init/m.test(userData) ? "init" : "join");
    const machine: MachineRecord = {
      instanceId: instance.id,
      account: instance.account,
      region: instance.region,
      zone: instance.zone,
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
      ...(failure ? { failure: failure.lines } : {}),
    };
    const delay = failure ? 0 : this.cloud.sampleDelay(command === "init" ? "kubeadmInit" : "kubeadmJoin");
    await this.schedule(machine, command, delay);
  }

  /** The machine's instance is terminated: its node turns unreachable now and is deleted later. */
  private async machineGone(instanceId: string): Promise<void> {
    const machine = this.records.machine(instanceId);
    if (!machine || machine.state === "lost") return;
    const timer = this.timers.get(instanceId);
    if (timer) this.cloud.clock.clearTimer(timer);
    this.timers.delete(instanceId);
    const cluster = machine.clusterId ? this.records.cluster(machine.clusterId) : undefined;
    if (machine.state !== "joined" || !cluster) {
      await this.records.removeMachine(instanceId);
      return;
    }
    machine.state = "lost";
    await this.cluster(cluster.id)?.nodeUnreachable(machine.nodeName, new Date(this.now()).toISOString());
    await this.schedule(machine, "remove", this.scaled(NODE_GONE_AFTER_MS));
  }

  private isServing(instanceId: string): boolean {
    const machine = this.records.machine(instanceId);
    if (!machine) return true;
    return machine.role !== "worker" && machine.state === "joined";
  }

  private async reactToWrite(clusterId: string, event: WriteEvent): Promise<void> {
    const cluster = this.records.cluster(clusterId);
    if (!cluster) return;
    const { def, object, objects } = event;
    if (def.kind === "DaemonSet") {
      const cni = cniOfDaemonSet(object.metadata.namespace, object.metadata.name);
      if (cni) await this.onCluster(cluster.endpoint, () => this.steps.networkPluginApplied(cluster, cni));
    } else if (object.metadata.namespace) {
      const hard = (object.spec as { hard?: Record<string, string> } | undefined)?.hard ?? {};
      const used = Object.fromEntries(Object.keys(hard).map((name) => [name, "0"]));
      await objects.updateStatus(def, object.metadata.namespace, object.metadata.name!, { status: { hard, used } });
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
