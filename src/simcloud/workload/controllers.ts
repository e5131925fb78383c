// What the controller manager and the kubelets of an emulated workload cluster do with its workloads:
// the DaemonSet controller runs one pod per node the pod template fits, the Deployment controller keeps
// `replicas` pods of the current template placed on nodes that accept them, the Job controller runs a
// Job's pods `parallelism` at a time until `completions` succeeded, the disruption controller
// counts what each PodDisruptionBudget allows, and each node is Ready only while its kubelet reports and
// the network plugin runs on it. Statuses are written as the real controllers write them, and only when
// they change. Pods start at once (the network plugin's pod starts after a delay the emulator times), and
// the Job controller's pods, once started, run to completion at once.
import { createHash } from "node:crypto";
import type { KubeObject } from "../../api/meta.ts";
import type { KindDefinition } from "../../api/registry.ts";
import { AlreadyExistsError, NotFoundError } from "../../apiserver/errors.ts";
import type { ObjectService } from "../../apiserver/objects.ts";
import type { DaemonSetObject, DeploymentObject } from "./kinds-apps.ts";
import type { JobObject } from "./kinds-batch.ts";
import { selectorMatches, type PodSpecView } from "./kinds-podspec.ts";
import type { PodDisruptionBudgetObject } from "./kinds-policy.ts";
import type { NodeObject, PodObject } from "./kinds.ts";
import * as M from "./manifests.ts";
import { networkPluginOf, pluginFailureOnNode, pluginPodRange, NETWORK_PLUGINS, type NetworkPluginName } from "./network-plugins.ts";
import { fitsNode, nodeReadiness, staysOnNode } from "./scheduling.ts";

export interface WorkloadKinds {
  namespace: KindDefinition;
  node: KindDefinition;
  pod: KindDefinition;
  configMap: KindDefinition;
  secret: KindDefinition;
  daemonSet: KindDefinition;
  deployment: KindDefinition;
  job: KindDefinition;
  podDisruptionBudget: KindDefinition;
  clusterRole: KindDefinition;
  clusterRoleBinding: KindDefinition;
}

/** Pod label naming the DaemonSet generation a pod was made from (as the DaemonSet controller sets it). */
const TEMPLATE_GENERATION = "pod-template-generation";
/** Pod label naming a Deployment's template (its ReplicaSet's hash). */
const TEMPLATE_HASH = "pod-template-hash";
/** Back-off of a crashing container, as the kubelet doubles it: 10 s up to 5 minutes (simulated ms). */
export const CRASH_BACKOFF_MS = { first: 10_000, max: 300_000 };

/** How long the kubelet waits before restarting a container that crashed `restarts` times. */
export function crashBackoffMs(restarts: number): number {
  return Math.min(CRASH_BACKOFF_MS.first * 2 ** Math.max(0, restarts - 1), CRASH_BACKOFF_MS.max);
}

export interface SyncOutcome {
  /** Nodes whose network-plugin pod was just made and waits to start. */
  pluginPending: string[];
}

interface State {
  nodes: NodeObject[];
  pods: PodObject[];
}

function specOf(pod: { spec?: unknown }): PodSpecView {
  return (pod.spec ?? { containers: [] }) as PodSpecView;
}

function isRunning(pod: PodObject): boolean {
  return pod.status?.phase === "Running" && (pod.status.containerStatuses ?? []).every((c) => c.ready) && !pod.metadata.deletionTimestamp;
}

function finished(pod: PodObject): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

function ownedBy(pod: KubeObject, owner: KubeObject): boolean {
  return (pod.metadata.ownerReferences ?? []).some((r) => r.uid === owner.metadata.uid);
}

function containersOf(spec: PodSpecView): { name: string; image: string }[] {
  return spec.containers.map((c) => ({ name: c.name, image: c.image ?? "" }));
}

function internalIp(node: NodeObject): string {
  return node.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "";
}

function templateHash(template: unknown): string {
  return M.nameSuffix(createHash("sha256").update(JSON.stringify(template ?? {})).digest("hex"), 10);
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A percentage or a number of `total`, rounded up (Kubernetes' GetScaledValueFromIntOrPercent with roundUp). */
function scaled(value: number | string, total: number): number {
  if (typeof value === "number") return value;
  const percent = /^(\d+)%$/.exec(value);
  return percent ? Math.ceil((Number(percent[1]) * total) / 100) : Number(value) || 0;
}

export class WorkloadControllers {
  constructor(
    private readonly objects: ObjectService,
    private readonly kinds: WorkloadKinds,
  ) {}

  private async ignoreMissing(work: Promise<unknown>): Promise<void> {
    try {
      await work;
    } catch (error) {
      if (!(error instanceof NotFoundError) && !(error instanceof AlreadyExistsError)) throw error;
    }
  }

  private async state(): Promise<State> {
    const [nodes, pods] = await Promise.all([this.objects.list(this.kinds.node, undefined), this.objects.list(this.kinds.pod, undefined)]);
    return { nodes: nodes.items as NodeObject[], pods: pods.items as PodObject[] };
  }

  /** Brings pods, node readiness and statuses in line with the objects; answers which plugin pods wait to start. */
  async sync(at: string): Promise<SyncOutcome> {
    const state = await this.state();
    await this.collectOrphans(state);
    await this.syncNodeReadiness(state, at);
    const pluginPending: string[] = [];
    const daemonSets = (await this.objects.list(this.kinds.daemonSet, undefined)).items as DaemonSetObject[];
    for (const ds of daemonSets) pluginPending.push(...(await this.syncDaemonSet(ds, state, at)));
    const deployments = (await this.objects.list(this.kinds.deployment, undefined)).items as DeploymentObject[];
    for (const deployment of deployments) await this.syncDeployment(deployment, state, at);
    const jobs = (await this.objects.list(this.kinds.job, undefined)).items as JobObject[];
    for (const job of jobs) await this.syncJob(job, state, at);
    await this.syncBudgets(state.pods, at);
    return { pluginPending };
  }

  // ---- nodes ----

  /** The pod garbage collector: pods bound to a node that no longer exists are deleted (their owners replace them). */
  private async collectOrphans(state: State): Promise<void> {
    const nodes = new Set(state.nodes.map((n) => n.metadata.name));
    for (const pod of state.pods.filter((p) => specOf(p).nodeName && !nodes.has(specOf(p).nodeName))) {
      await this.ignoreMissing(this.objects.forget(this.kinds.pod, pod.metadata.namespace, pod.metadata.name!, pod.metadata.uid!));
      state.pods = state.pods.filter((p) => p !== pod);
    }
  }

  /** The network plugin's pod on each node, by node name (running or not). */
  private pluginPods(state: State): Map<string, PodObject> {
    const byNode = new Map<string, PodObject>();
    for (const pod of state.pods) {
      const owner = pod.metadata.ownerReferences?.find((r) => r.kind === "DaemonSet");
      if (owner && networkPluginOf(pod.metadata.namespace, owner.name) && specOf(pod).nodeName) byNode.set(specOf(pod).nodeName!, pod);
    }
    return byNode;
  }

  /** A node whose kubelet reports is Ready exactly while the network plugin runs on it. */
  private async syncNodeReadiness(state: State, at: string): Promise<void> {
    const plugins = this.pluginPods(state);
    for (const [i, node] of state.nodes.entries()) {
      const current = nodeReadiness(node);
      if (current === "Unknown") continue;
      const plugin = plugins.get(node.metadata.name!);
      const ready = plugin !== undefined && isRunning(plugin);
      if ((current === "True") === ready) continue;
      const name = node.metadata.name!;
      const taints = M.taintsFor(node.spec?.taints ?? [], ready ? "ready" : "network-not-ready", at);
      const patched = (await this.objects.patch(this.kinds.node, undefined, name, "merge", { spec: { taints } })).object as NodeObject;
      const written = await this.objects.updateStatus(this.kinds.node, undefined, name, { ...patched, status: { ...node.status, conditions: M.nodeConditions(ready ? "ready" : "network-not-ready", at) } });
      state.nodes[i] = written.object as NodeObject;
    }
  }

  // ---- DaemonSets ----

  private async syncDaemonSet(ds: DaemonSetObject, state: State, at: string): Promise<string[]> {
    const spec = ds.spec!;
    const template = specOf(spec.template);
    const namespace = ds.metadata.namespace!;
    const generation = String(ds.metadata.generation ?? 1);
    const plugin = networkPluginOf(namespace, ds.metadata.name);
    const eligible = state.nodes.filter((n) => !n.metadata.deletionTimestamp && fitsNode(template, n, true));
    const eligibleNames = new Set(eligible.map((n) => n.metadata.name!));
    // A pod stays on a node it no longer fits as long as it tolerates its NoExecute taints (a silent node).
    const staying = new Set(state.nodes.filter((n) => !eligibleNames.has(n.metadata.name!) && staysOnNode(template, n, true)).map((n) => n.metadata.name!));
    const pending: string[] = [];
    let pods = state.pods.filter((p) => ownedBy(p, ds));
    for (const pod of pods) {
      const node = specOf(pod).nodeName ?? "";
      const outdated = pod.metadata.labels?.[TEMPLATE_GENERATION] !== generation && spec.updateStrategy?.type !== "OnDelete";
      if ((eligibleNames.has(node) || staying.has(node)) && !outdated) continue;
      await this.ignoreMissing(this.objects.forget(this.kinds.pod, namespace, pod.metadata.name!, pod.metadata.uid!));
      state.pods = state.pods.filter((p) => p !== pod);
    }
    pods = state.pods.filter((p) => ownedBy(p, ds));
    for (const node of eligible) {
      const nodeName = node.metadata.name!;
      let pod = pods.find((p) => specOf(p).nodeName === nodeName);
      if (!pod) {
        const labels = { ...(spec.template.metadata?.labels ?? {}), [TEMPLATE_GENERATION]: generation };
        const plan = M.daemonPod({ apiVersion: "apps/v1", kind: "DaemonSet", name: ds.metadata.name!, uid: ds.metadata.uid!, namespace }, labels, template, nodeName);
        const status = plugin ? M.waitingPodStatus(plan.containers, "ContainerCreating", undefined, at) : this.startedStatus(template, plan.containers, node, plan.object.metadata.name!, at);
        pod = (await this.createPod(plan.object, status)) ?? undefined;
        if (!pod) continue;
        state.pods.push(pod);
        if (plugin) pending.push(nodeName);
      } else if (!plugin && pod.status?.phase === "Pending" && this.networkReady(node, template)) {
        pod = await this.setPodStatus(pod, this.startedStatus(template, containersOf(template), node, pod.metadata.name!, at), state);
      }
    }
    const mine = state.pods.filter((p) => ownedBy(p, ds) && eligibleNames.has(specOf(p).nodeName ?? ""));
    const ready = mine.filter(isRunning).length;
    const status = {
      desiredNumberScheduled: eligible.length,
      currentNumberScheduled: mine.length,
      numberMisscheduled: state.pods.filter((p) => ownedBy(p, ds) && staying.has(specOf(p).nodeName ?? "")).length,
      numberReady: ready,
      updatedNumberScheduled: mine.filter((p) => p.metadata.labels?.[TEMPLATE_GENERATION] === generation).length,
      numberAvailable: ready,
      ...(eligible.length > ready ? { numberUnavailable: eligible.length - ready } : {}),
      observedGeneration: ds.metadata.generation ?? 1,
    };
    if (!same(ds.status, status)) await this.ignoreMissing(this.objects.updateStatus(this.kinds.daemonSet, namespace, ds.metadata.name!, { ...ds, status }));
    return pending;
  }

  /** Whether a pod of this spec can start on the node: host-network pods always, others once the node's network is ready. */
  private networkReady(node: NodeObject, spec: PodSpecView): boolean {
    return spec.hostNetwork === true || nodeReadiness(node) === "True";
  }

  private startedStatus(spec: PodSpecView, containers: { name: string; image: string }[], node: NodeObject, podName: string, at: string): M.PodStatus {
    const hostIp = internalIp(node);
    if (!this.networkReady(node, spec)) {
      return M.waitingPodStatus(containers, "ContainerCreating", "network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized", at, hostIp);
    }
    const podIp = spec.hostNetwork ? hostIp : M.podAddress(node.spec?.podCIDR ?? "", parseInt(createHash("sha256").update(podName).digest("hex").slice(0, 6), 16) % 250);
    return M.runningPodStatus(containers, hostIp, podIp, at);
  }

  private async createPod(object: KubeObject, status: M.PodStatus): Promise<PodObject | undefined> {
    try {
      const created = (await this.objects.create(this.kinds.pod, object.metadata.namespace, object)).object;
      return (await this.objects.updateStatus(this.kinds.pod, object.metadata.namespace, created.metadata.name!, { ...created, status })).object as PodObject;
    } catch (error) {
      if (error instanceof AlreadyExistsError) return undefined;
      throw error;
    }
  }

  private async setPodStatus(pod: PodObject, status: M.PodStatus, state: State): Promise<PodObject> {
    const written = (await this.objects.updateStatus(this.kinds.pod, pod.metadata.namespace, pod.metadata.name!, { ...pod, status })).object as PodObject;
    state.pods = state.pods.map((p) => (p.metadata.uid === written.metadata.uid ? written : p));
    return written;
  }

  /**
   * The network plugin's pod on a node starts: it runs when its configuration serves the node's pod
   * range, and crashes (CrashLoopBackOff, restarting) otherwise. Answers the failure, if any.
   */
  async startNetworkPlugin(nodeName: string, at: string): Promise<{ failure?: string; restarts: number } | undefined> {
    const state = await this.state();
    const pod = this.pluginPods(state).get(nodeName);
    const node = state.nodes.find((n) => n.metadata.name === nodeName);
    if (!pod || !node || nodeReadiness(node) === "Unknown") return undefined;
    const owner = pod.metadata.ownerReferences!.find((r) => r.kind === "DaemonSet")!;
    const plugin = networkPluginOf(pod.metadata.namespace, owner.name)!;
    const ds = await this.objects.tryGet(this.kinds.daemonSet, plugin.namespace, plugin.daemonSet);
    if (!ds) return undefined;
    const range = await pluginPodRange(plugin, ds, async (namespace, name) => (await this.objects.tryGet(this.kinds.configMap, namespace, name))?.data as Record<string, string> | undefined);
    const failure = pluginFailureOnNode(plugin, range, nodeName, node.spec?.podCIDR ?? "");
    const containers = containersOf(specOf(pod));
    const restarts = failure ? Math.max(...(pod.status?.containerStatuses ?? []).map((c) => c.restartCount), 0) + 1 : 0;
    const status = failure
      ? M.crashingPodStatus(containers, plugin.container, failure, restarts, internalIp(node), at)
      : M.runningPodStatus(containers, internalIp(node), internalIp(node), at);
    await this.setPodStatus(pod, status, state);
    return { ...(failure ? { failure } : {}), restarts };
  }

  /** Nodes whose network-plugin pod is not running (after the plugin's configuration changed, they try again). */
  async nodesWithoutNetwork(): Promise<string[]> {
    const state = await this.state();
    const pods = this.pluginPods(state);
    return [...pods].filter(([, pod]) => !isRunning(pod)).map(([node]) => node);
  }

  /** The network plugin installed (its DaemonSet exists), if any. */
  async installedPlugin(): Promise<NetworkPluginName | undefined> {
    for (const plugin of NETWORK_PLUGINS) {
      if (await this.objects.tryGet(this.kinds.daemonSet, plugin.namespace, plugin.daemonSet)) return plugin.name;
    }
    return undefined;
  }

  // ---- Deployments ----

  private async syncDeployment(deployment: DeploymentObject, state: State, at: string): Promise<void> {
    const spec = deployment.spec!;
    const namespace = deployment.metadata.namespace!;
    const template = specOf(spec.template);
    const replicas = spec.replicas ?? 1;
    const hash = templateHash(spec.template);
    for (const pod of state.pods.filter((p) => ownedBy(p, deployment) && p.metadata.labels?.[TEMPLATE_HASH] !== hash)) {
      await this.ignoreMissing(this.objects.forget(this.kinds.pod, namespace, pod.metadata.name!, pod.metadata.uid!));
      state.pods = state.pods.filter((p) => p !== pod);
    }
    let mine = state.pods.filter((p) => ownedBy(p, deployment));
    for (const extra of mine.slice(replicas)) {
      await this.ignoreMissing(this.objects.forget(this.kinds.pod, namespace, extra.metadata.name!, extra.metadata.uid!));
      state.pods = state.pods.filter((p) => p !== extra);
    }
    mine = state.pods.filter((p) => ownedBy(p, deployment));
    const owner = { apiVersion: "apps/v1", kind: "Deployment", name: deployment.metadata.name!, uid: deployment.metadata.uid!, namespace };
    for (let n = 0; mine.length < replicas; n++) {
      const name = `${deployment.metadata.name}-${hash}-${M.nameSuffix(`${deployment.metadata.uid}/${hash}/${n}`)}`;
      if (state.pods.some((p) => p.metadata.namespace === namespace && p.metadata.name === name)) continue;
      const plan = M.templatePod(owner, name, { ...(spec.template.metadata?.labels ?? {}), [TEMPLATE_HASH]: hash }, template);
      const created = await this.createPod(plan.object, M.unschedulablePodStatus(this.unschedulableMessage(template, state.nodes), at));
      if (!created) continue;
      state.pods.push(created);
      mine.push(created);
    }
    for (const pod of mine) {
      if (isRunning(pod)) continue;
      await this.place(pod, template, state, at);
    }
    mine = state.pods.filter((p) => ownedBy(p, deployment));
    await this.writeDeploymentStatus(deployment, mine, hash, replicas, at);
  }

  // ---- Jobs ----

  /**
   * Keeps up to `parallelism` pods of the Job's template active until `completions` succeeded (without
   * completions, until one succeeded and none is active). A pod runs to completion as soon as it starts
   * on a node; one no node accepts stays Pending and active. A suspended Job's active pods are deleted
   * and no new ones made. A finished Job is left as it is.
   */
  private async syncJob(job: JobObject, state: State, at: string): Promise<void> {
    const spec = job.spec!;
    const done = (job.status?.conditions ?? []).some((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");
    if (done) return;
    const namespace = job.metadata.namespace!;
    const template = specOf(spec.template);
    const parallelism = spec.parallelism ?? 1;
    const owner = { apiVersion: "batch/v1", kind: "Job", name: job.metadata.name!, uid: job.metadata.uid!, namespace };
    const mine = () => state.pods.filter((p) => ownedBy(p, job));
    const active = () => mine().filter((p) => !finished(p) && !p.metadata.deletionTimestamp);
    // Counted once, as the real controller counts a pod before it lets it go: a succeeded pod removed since still counts.
    let succeeded = Math.max(job.status?.succeeded ?? 0, mine().filter((p) => p.status?.phase === "Succeeded").length);
    if (spec.suspend) {
      for (const pod of active()) {
        await this.ignoreMissing(this.objects.forget(this.kinds.pod, namespace, pod.metadata.name!, pod.metadata.uid!));
        state.pods = state.pods.filter((p) => p !== pod);
      }
    }
    const wanted = () => (spec.completions === undefined ? (succeeded > 0 ? 0 : parallelism) : Math.min(parallelism, spec.completions - succeeded));
    for (let n = 0, progress = true; progress && !spec.suspend; ) {
      progress = false;
      while (active().length < wanted()) {
        const name = `${job.metadata.name}-${M.nameSuffix(`${job.metadata.uid}/${n++}`)}`;
        if (state.pods.some((p) => p.metadata.namespace === namespace && p.metadata.name === name)) continue;
        const plan = M.templatePod(owner, name, { ...(spec.template.metadata?.labels ?? {}) }, template);
        const created = await this.createPod(plan.object, M.unschedulablePodStatus(this.unschedulableMessage(template, state.nodes), at));
        if (created) state.pods.push(created);
      }
      for (const pod of active()) {
        await this.place(pod, template, state, at);
        const placed = state.pods.find((p) => p.metadata.uid === pod.metadata.uid);
        if (placed?.status?.phase !== "Running") continue;
        await this.setPodStatus(placed, M.succeededPodStatus(placed.status, at), state);
        succeeded++;
        progress = true;
      }
    }
    await this.writeJobStatus(job, active(), succeeded, at);
  }

  private async writeJobStatus(job: JobObject, active: PodObject[], succeeded: number, at: string): Promise<void> {
    const previous = job.status ?? {};
    const complete = job.spec?.completions === undefined ? succeeded > 0 && active.length === 0 : succeeded >= job.spec.completions;
    const suspended = job.spec?.suspend === true && !complete;
    const condition = (type: string, reason: string, message: string) => {
      const before = previous.conditions?.find((c) => c.type === type && c.status === "True");
      return before ?? { type, status: "True" as const, reason, message, lastProbeTime: at, lastTransitionTime: at };
    };
    const conditions = [
      ...(suspended ? [condition("Suspended", "JobSuspended", "Job suspended")] : []),
      ...(complete ? ["SuccessCriteriaMet", "Complete"].map((type) => condition(type, "CompletionsReached", "Reached expected number of succeeded pods")) : []),
    ];
    const startTime = suspended ? undefined : (previous.startTime ?? at);
    const status = {
      ...(conditions.length > 0 ? { conditions } : {}),
      ...(startTime ? { startTime } : {}),
      ...(complete ? { completionTime: previous.completionTime ?? at } : {}),
      ...(active.length > 0 ? { active: active.length } : {}),
      ...(succeeded > 0 ? { succeeded } : {}),
      ...(previous.failed ? { failed: previous.failed } : {}),
      terminating: 0,
      uncountedTerminatedPods: {},
      ready: active.filter(isRunning).length,
    };
    if (!same(job.status, status)) await this.ignoreMissing(this.objects.updateStatus(this.kinds.job, job.metadata.namespace, job.metadata.name!, { ...job, status }));
  }

  /** Binds a pending pod to the node with the fewest pods of its owner among those it fits, and starts it there. */
  private async place(pod: PodObject, template: PodSpecView, state: State, at: string): Promise<void> {
    const bound = specOf(pod).nodeName;
    let node = bound ? state.nodes.find((n) => n.metadata.name === bound) : undefined;
    if (!node) {
      const candidates = state.nodes.filter((n) => !n.metadata.deletionTimestamp && fitsNode(template, n, false));
      const load = (n: NodeObject) => state.pods.filter((p) => specOf(p).nodeName === n.metadata.name && (p.metadata.ownerReferences ?? []).some((r) => pod.metadata.ownerReferences?.some((o) => o.uid === r.uid))).length;
      node = candidates.sort((a, b) => load(a) - load(b) || a.metadata.name!.localeCompare(b.metadata.name!))[0];
      if (!node) {
        const message = this.unschedulableMessage(template, state.nodes);
        if (pod.status?.conditions?.find((c) => c.type === "PodScheduled")?.message !== message) await this.setPodStatus(pod, M.unschedulablePodStatus(message, at), state);
        return;
      }
      const patched = (await this.objects.patch(this.kinds.pod, pod.metadata.namespace, pod.metadata.name!, "merge", { spec: { nodeName: node.metadata.name } })).object as PodObject;
      state.pods = state.pods.map((p) => (p.metadata.uid === patched.metadata.uid ? patched : p));
      pod = patched;
    }
    const status = this.startedStatus(template, containersOf(template), node, pod.metadata.name!, at);
    if (pod.status?.phase !== status.phase) await this.setPodStatus(pod, status, state);
  }

  /** The scheduler's message for a pod no node accepts. */
  private unschedulableMessage(template: PodSpecView, nodes: NodeObject[]): string {
    const reasons = new Map<string, number>();
    for (const node of nodes) {
      if (fitsNode(template, node, false)) continue;
      const labels = node.metadata.labels ?? {};
      const selectorMiss = Object.entries(template.nodeSelector ?? {}).some(([k, v]) => labels[k] !== v);
      const taint = (node.spec?.taints ?? []).find((t) => t.effect !== "PreferNoSchedule" && !fitsNode({ ...template, nodeSelector: {} }, { ...node, spec: { ...node.spec, taints: [t], unschedulable: false } }, false));
      const reason = selectorMiss ? "didn't match Pod's node affinity/selector" : node.spec?.unschedulable ? "were unschedulable" : `had untolerated taint {${taint?.key ?? ""}: ${taint?.value ?? ""}}`;
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }
    const detail = [...reasons].map(([reason, count]) => `${count} node(s) ${reason}`).join(", ");
    return `0/${nodes.length} nodes are available${detail ? `: ${detail}` : ""}. preemption: 0/${nodes.length} nodes are available: ${nodes.length} Preemption is not helpful for scheduling.`;
  }

  private async writeDeploymentStatus(deployment: DeploymentObject, pods: PodObject[], hash: string, replicas: number, at: string): Promise<void> {
    const ready = pods.filter(isRunning).length;
    const updated = pods.filter((p) => p.metadata.labels?.[TEMPLATE_HASH] === hash).length;
    const maxUnavailable = deployment.spec?.strategy?.type === "Recreate" ? 0 : Math.floor(scaledDown(deployment.spec?.strategy?.rollingUpdate?.maxUnavailable ?? "25%", replicas));
    const available = ready >= replicas - maxUnavailable;
    const complete = updated === replicas && ready === replicas && pods.length === replicas;
    const previous = deployment.status?.conditions ?? [];
    const condition = (type: string, status: "True" | "False", reason: string, message: string) => {
      const before = previous.find((c) => c.type === type);
      const unchanged = before?.status === status && before.reason === reason;
      return { type, status, reason, message, lastUpdateTime: unchanged ? (before.lastUpdateTime ?? at) : at, lastTransitionTime: before?.status === status ? (before.lastTransitionTime ?? at) : at };
    };
    const name = deployment.metadata.name!;
    const status = {
      observedGeneration: deployment.metadata.generation ?? 1,
      replicas: pods.length,
      updatedReplicas: updated,
      readyReplicas: ready,
      availableReplicas: ready,
      ...(replicas > ready ? { unavailableReplicas: replicas - ready } : {}),
      conditions: [
        available
          ? condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
          : condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
        complete
          ? condition("Progressing", "True", "NewReplicaSetAvailable", `ReplicaSet "${name}-${hash}" has successfully progressed.`)
          : condition("Progressing", "True", "ReplicaSetUpdated", `ReplicaSet "${name}-${hash}" is progressing.`),
      ],
    };
    if (!same(deployment.status, status)) await this.ignoreMissing(this.objects.updateStatus(this.kinds.deployment, deployment.metadata.namespace, name, { ...deployment, status }));
  }

  // ---- disruption budgets ----

  /** Pods a budget counts, and what it allows now. */
  budgetStatus(pdb: PodDisruptionBudgetObject, pods: PodObject[]): NonNullable<PodDisruptionBudgetObject["status"]> {
    const selected = pods.filter((p) => p.metadata.namespace === pdb.metadata.namespace && !p.metadata.deletionTimestamp && selectorMatches(pdb.spec?.selector, p.metadata.labels ?? {}));
    const expected = selected.length;
    const healthy = selected.filter(isRunning).length;
    const spec = pdb.spec ?? {};
    const desired =
      spec.maxUnavailable !== undefined ? Math.max(0, expected - scaled(spec.maxUnavailable, expected)) : scaled(spec.minAvailable ?? 1, expected);
    const allowed = Math.max(0, healthy - desired);
    return {
      observedGeneration: pdb.metadata.generation ?? 1,
      disruptionsAllowed: allowed,
      currentHealthy: healthy,
      desiredHealthy: desired,
      expectedPods: expected,
      conditions: [
        allowed > 0
          ? { type: "DisruptionAllowed", status: "True", reason: "SufficientPods", message: "", observedGeneration: pdb.metadata.generation ?? 1 }
          : { type: "DisruptionAllowed", status: "False", reason: "InsufficientPods", message: "", observedGeneration: pdb.metadata.generation ?? 1 },
      ],
    };
  }

  private async syncBudgets(pods: PodObject[], at: string): Promise<void> {
    const budgets = (await this.objects.list(this.kinds.podDisruptionBudget, undefined)).items as PodDisruptionBudgetObject[];
    for (const pdb of budgets) {
      const status = this.budgetStatus(pdb, pods);
      const old = pdb.status ? { ...pdb.status, conditions: pdb.status.conditions?.map(({ lastTransitionTime: _t, ...c }) => c) } : undefined;
      if (same(old, status)) continue;
      const conditions = status.conditions!.map((c) => ({ ...c, lastTransitionTime: pdb.status?.conditions?.find((p) => p.type === c.type && p.status === c.status)?.lastTransitionTime ?? at }));
      await this.ignoreMissing(this.objects.updateStatus(this.kinds.podDisruptionBudget, pdb.metadata.namespace, pdb.metadata.name!, { ...pdb, status: { ...status, conditions } }));
    }
  }
}

/** maxUnavailable of a rolling update: a percentage of the replicas rounded down. */
function scaledDown(value: number | string, total: number): number {
  if (typeof value === "number") return value;
  const percent = /^(\d+)%$/.exec(value);
  return percent ? Math.floor((Number(percent[1]) * total) / 100) : Number(value) || 0;
}
