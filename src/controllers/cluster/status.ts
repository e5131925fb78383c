// The cluster's status, summed up from its children after every reconcile: replica counts, conditions,
// the phase with a reason when something is wrong, and the step journal the CLI draws as a timeline.
import type { ClusterObject, ClusterStep, InfrastructureObject, MachineObject } from "../../api/kinds.ts";
import type { ConditionT } from "../../api/meta.ts";
import { CONDITION_CONTROL_PLANE_INITIALIZED, CONDITION_NETWORK_PLUGIN_INSTALLED, DEFAULT_KUBERNETES_VERSION, STEP_NETWORK_PLUGIN, STEP_READY } from "../../api/slipway/cluster.ts";
import { isMachineReady } from "../../api/slipway/machine.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { getCondition, isTrue, setCondition, type ConditionInput } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import { INTERNAL_ERROR, InternalReconcileError, describeError } from "../../runtime/failures.ts";
import { names } from "../../api/slipway/names.ts";
import { isDeclaredPool, isOutdated, poolSpec, targetVersion } from "./children.ts";
import { ANNOTATION_REPLICAS_MANAGED_BY } from "../../api/slipway/machinepool.ts";
import type { ClusterScope } from "./scope.ts";
import { isCurrent, poolTemplate, type PoolTemplate } from "../machinepool/template.ts";

type Status = NonNullable<ClusterObject["status"]>;

/**
 * Whether a child's status speaks of the spec it has now, and that spec is the one the cluster wants:
 * a child this reconcile just changed, or one that has not looked at its change yet, reports what its
 * old spec met, which says nothing of the cluster's current generation.
 */
function reportsCurrentSpec(scope: ClusterScope, child: { metadata: { name?: string; generation?: number }; status?: { observedGeneration?: number } }): boolean {
  if (scope.changedChildren.has(child.metadata.name ?? "")) return false;
  const observed = child.status?.observedGeneration;
  return observed === undefined || observed >= (child.metadata.generation ?? 0);
}

function failingChild(scope: ClusterScope): { reason: string; message: string } | undefined {
  for (const infra of scope.infrastructures) {
    if (infra.status?.phase === "Failed" && reportsCurrentSpec(scope, infra)) return { reason: infra.status.reason ?? "InfrastructureFailed", message: `infrastructure ${infra.spec.connection}: ${infra.status.message ?? "failed"}` };
  }
  for (const pool of scope.pools) {
    if (pool.status?.phase === "Failed" && reportsCurrentSpec(scope, pool)) return { reason: pool.status.reason ?? "WorkerPoolFailed", message: `pool ${pool.metadata.name}: ${pool.status.message ?? "failed"}` };
  }
  return undefined;
}

/**
 * Machines that failed and are being replaced: worth saying, not a failed cluster. The reason is the
 * failed step of the first (e.g. JoinWorkerFailed), the message names each machine and its failure.
 */
function replacing(scope: ClusterScope): { reason: string; message: string } | undefined {
  const failed = scope.machines.filter((m) => m.status?.phase === "Failed");
  if (failed.length === 0) return undefined;
  const message = failed.map((m) => `${m.status?.failureReason ?? "Failed"} on machine ${m.metadata.name}: ${m.status?.failureMessage ?? "failed"}`).join("; ");
  return { reason: failed[0]!.status?.failureReason ?? "ReplacingMachine", message: scope.waitingOn ? `${message}; waiting for ${scope.waitingOn}` : message };
}

/**
 * An initialised cluster whose control-plane machines are all failed or going, none Ready: its etcd went
 * with them, so nothing that replaces them can join (and a second `kubeadm init` would be another
 * cluster). Said as a failure naming each lost machine, not left as an endless "waiting".
 */
function controlPlaneLost(scope: ClusterScope, initialized: boolean): { reason: string; message: string } | undefined {
  if (!initialized || scope.controlPlane.some(isMachineReady)) return undefined;
  const lost = scope.controlPlane.filter((m) => m.metadata.deletionTimestamp !== undefined || m.status?.phase === "Failed");
  if (lost.length === 0) return undefined;
  const which = lost.map((m) => `${m.metadata.name}${m.status?.failureReason ? ` (${m.status.failureReason}: ${m.status.failureMessage ?? "failed"})` : " (being removed)"}`).join(", ");
  return {
    reason: "ControlPlaneLost",
    message: `no control-plane machine is left serving the cluster: ${which}; its etcd data went with them, so a replacement cannot join. Delete the cluster and create it again (a control plane of 3 machines survives the loss of one)`,
  };
}

/** The current template of each worker pool, by MachinePool name: from the spec for those the cluster declares, an adopted pool's own. */
function workerTemplates(scope: ClusterScope): Map<string, PoolTemplate> {
  const cluster = scope.object;
  const templates = new Map<string, PoolTemplate>();
  for (const pool of scope.pools) if (!isDeclaredPool(cluster, pool)) templates.set(pool.metadata.name!, poolTemplate(pool.spec));
  for (const worker of cluster.spec.workers ?? []) templates.set(names.machinePool(cluster.metadata.name!, worker.name), poolTemplate(poolSpec(cluster, worker, targetVersion(cluster))));
  return templates;
}

/**
 * The worker machines wanted: each declared pool's replicas from the spec (the pool's own when it is
 * scaled from outside), and those of the pools adopted by the cluster.
 */
export function desiredWorkerMachines(scope: ClusterScope): number {
  const cluster = scope.object;
  const live = scope.pools.filter((p) => !p.metadata.deletionTimestamp);
  const declared = (cluster.spec.workers ?? []).reduce((sum, w) => {
    const pool = live.find((p) => p.metadata.name === names.machinePool(cluster.metadata.name!, w.name));
    const external = pool?.metadata.annotations?.[ANNOTATION_REPLICAS_MANAGED_BY] !== undefined;
    return sum + ((external ? pool?.spec.replicas : w.replicas) ?? 1);
  }, 0);
  return live.filter((p) => !isDeclaredPool(cluster, p)).reduce((sum, p) => sum + (p.spec.replicas ?? 1), declared);
}

/** A worker machine Ready and made from its pool's current template (a pool no longer declared has none). */
function workerUpToDate(machine: MachineObject, templates: Map<string, PoolTemplate>): boolean {
  const template = templates.get(machine.spec.pool ?? "");
  return isMachineReady(machine) && template !== undefined && isCurrent(machine, template);
}

/** The nodes the machines became, control plane first, each with its machine, readiness and kubelet version. */
export function nodesOf(machines: readonly MachineObject[]): NonNullable<Status["nodes"]> {
  return machines
    .filter((m) => m.status?.nodeName && !m.metadata.deletionTimestamp)
    .map((m) => ({
      name: m.status!.nodeName!,
      role: m.spec.role,
      machine: m.metadata.name!,
      ready: m.status!.nodeReady === true,
      ...(m.status!.kubeletVersion ? { version: m.status!.kubeletVersion } : {}),
    }))
    .sort((a, b) => (a.role === b.role ? (a.name < b.name ? -1 : 1) : a.role === "control-plane" ? -1 : 1));
}

/** The oldest kubelet version the control plane's nodes report (what its API servers are at most), if any is known. */
function observedVersion(controlPlane: readonly MachineObject[]): string | undefined {
  const versions = controlPlane.map((m) => m.status?.kubeletVersion).filter((v): v is string => v !== undefined);
  const numeric = (v: string) => v.replace(/^v/, "").split(/[.+-]/).slice(0, 3).map(Number);
  return versions.sort((a, b) => {
    const [x, y] = [numeric(a), numeric(b)];
    for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
    return 0;
  })[0];
}

export function summarizeCluster(ctx: ReconcileContext, scope: ClusterScope, error: unknown): void {
  const cluster = scope.object;
  const st: Status = (cluster.status ??= {});
  const now = nowTimestamp(new Date(ctx.clock.now()));
  const deleting = cluster.metadata.deletionTimestamp !== undefined;

  const cpDesired = cluster.spec.controlPlane.replicas ?? 1;
  const cpReady = scope.controlPlane.filter(isMachineReady).length;
  const workersDesired = desiredWorkerMachines(scope);
  const workerMachines = scope.machines.filter((m) => m.spec.role === "worker");
  const workersReady = workerMachines.filter(isMachineReady).length;
  const templates = workerTemplates(scope);
  const workersUpdated = workerMachines.filter((m) => workerUpToDate(m, templates)).length;
  // A control-plane machine is up to date when it is Ready at the cluster's version.
  const target = targetVersion(cluster);
  const cpUpdated = scope.controlPlane.filter((m) => isMachineReady(m) && !isOutdated(m, target)).length;
  const remediation = cpReady === cpDesired && scope.controlPlane.length === cpDesired ? undefined : st.controlPlane?.remediation;
  st.controlPlane = { desired: cpDesired, ready: cpReady, updated: cpUpdated, replicas: scope.controlPlane.length, ...(remediation ? { remediation } : {}) };
  st.workers = { desired: workersDesired, ready: workersReady, updated: workersUpdated, replicas: workerMachines.length };
  st.nodes = nodesOf(scope.machines);
  st.version = observedVersion(scope.controlPlane) ?? (scope.controlPlane.some((m) => m.status?.bootstrapped) ? cluster.spec.kubernetesVersion : st.version);
  if (cluster.metadata.generation !== undefined && st.observedGeneration !== cluster.metadata.generation) st.lastUpdated = now;
  if (cluster.spec.templateName) st.template = { name: cluster.spec.templateName, kubernetesVersion: cluster.spec.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION };

  const infraReady = scope.infrastructures.length > 0 && scope.infrastructures.every((i) => isTrue(i.status?.conditions, "Ready"));
  const set = (input: ConditionInput) => setCondition(st, input, now);
  set(
    infraReady
      ? { type: "InfrastructureReady", status: "True", reason: "Ready", message: `${scope.infrastructures.length} connection(s) ready` }
      : { type: "InfrastructureReady", status: "False", reason: "Provisioning", message: pendingInfra(scope.infrastructures) },
  );
  const wasInitialized = isTrue(st.conditions, CONDITION_CONTROL_PLANE_INITIALIZED);
  const initialized = scope.controlPlane.some((m) => m.status?.bootstrapped);
  set(initialized ? { type: CONDITION_CONTROL_PLANE_INITIALIZED, status: "True", reason: "Initialized", message: "kubeadm init completed" } : { type: CONDITION_CONTROL_PLANE_INITIALIZED, status: "False", reason: "WaitingForInit", message: "the first control-plane machine has not initialised the cluster yet" });
  const cpExtra = scope.controlPlane.length - cpDesired;
  const cpOld = scope.controlPlane.filter((m) => !m.metadata.deletionTimestamp && isOutdated(m, target)).length;
  const cpDone = cpReady >= cpDesired && cpExtra <= 0 && cpUpdated >= cpDesired;
  set({
    type: "ControlPlaneReady",
    status: cpDone ? "True" : "False",
    reason: cpDone ? "Ready" : cpOld > 0 ? "Upgrading" : "Scaling",
    message: `${cpReady}/${cpDesired} control-plane nodes Ready${cpOld > 0 ? `, ${cpUpdated} at ${target}, ${cpOld} to upgrade` : ""}${cpExtra > 0 ? `, ${cpExtra} to remove` : ""}`,
  });
  const workersDone = workersUpdated >= workersDesired && workerMachines.length === workersDesired;
  const rolling = workersUpdated < Math.min(workersReady, workersDesired);
  set({
    type: "WorkersReady",
    status: workersDone ? "True" : "False",
    reason: workersDone ? "Ready" : rolling ? "Rolling" : "Scaling",
    message: `${workersReady}/${workersDesired} worker nodes Ready${workersUpdated < workersReady ? `, ${workersUpdated} from their pool's current template` : ""}${workerMachines.length > workersDesired ? `, ${workerMachines.length - workersDesired} more machine(s) to remove` : ""}`,
  });
  const validated = isTrue(st.conditions, "Validated");
  const ready = validated && infraReady && initialized && ["ControlPlaneReady", "WorkersReady", "NetworkPluginInstalled"].every((t) => isTrue(st.conditions, t));
  set(ready ? { type: "Ready", status: "True", reason: "Ready", message: "every node is Ready" } : { type: "Ready", status: "False", reason: "NotReady", message: scope.waitingOn ? `waiting for ${scope.waitingOn}` : "provisioning" });

  const failing = scope.problem ?? failingChild(scope) ?? controlPlaneLost(scope, initialized || wasInitialized);
  const wasRunning = st.phase === "Running" || st.phase === "Updating";
  // On its way: to Running again once built, else through validation and provisioning.
  const progressing = wasRunning || (st.phase === "Failed" && initialized) ? "Updating" : validated ? "Provisioning" : "Validating";
  if (deleting) {
    st.phase = "Deleting";
    st.reason = undefined;
    st.message = scope.waitingOn ? `waiting for ${scope.waitingOn}` : undefined;
  } else if (error instanceof InternalReconcileError) {
    st.phase = "Failed";
    st.reason = INTERNAL_ERROR;
    st.message = error.message;
  } else if (failing) {
    st.phase = "Failed";
    st.reason = failing.reason;
    st.message = failing.message;
  } else if (error !== undefined) {
    // A reconcile error is retried with backoff: the cluster is not where its spec asks, and says why.
    st.phase = progressing;
    st.reason = "Retrying";
    st.message = `retrying after: ${describeError(error)}`;
  } else if (ready) {
    st.phase = "Running";
    st.reason = undefined;
    st.message = undefined;
  } else if (scope.pending) {
    st.phase = "Pending";
    st.reason = scope.pending.reason;
    st.message = scope.pending.message;
  } else {
    st.phase = progressing;
    const replaced = replacing(scope);
    st.reason = replaced?.reason;
    st.message = replaced?.message ?? (scope.waitingOn ? `waiting for ${scope.waitingOn}` : undefined);
  }
  if (st.reason === undefined) delete st.reason;
  if (st.message === undefined) delete st.message;
  st.steps = journal(cluster, scope, now);
}

function pendingInfra(infras: InfrastructureObject[]): string {
  if (infras.length === 0) return "no infrastructure yet";
  const pending = infras.filter((i) => !isTrue(i.status?.conditions, "Ready")).map((i) => i.spec.connection);
  return `waiting for connection(s) ${pending.join(", ")}`;
}

function transition(conditions: ConditionT[] | undefined, type: string): string | undefined {
  const c = getCondition(conditions, type);
  return c?.status === "True" ? c.lastTransitionTime : undefined;
}

/**
 * The step journal, rebuilt from the children each time: when each piece started and ended. Start and
 * end times come from creation timestamps and conditions' transition times, so the journal survives
 * restarts and replicas without bookkeeping of its own.
 */
export function journal(cluster: ClusterObject, scope: ClusterScope, now: string): ClusterStep[] {
  const steps: ClusterStep[] = [];
  const add = (name: string, startedAt: string | undefined, finishedAt: string | undefined, failed?: string, target?: { kind: string; name: string }) => {
    if (!startedAt) return;
    steps.push({
      name,
      startedAt,
      ...(finishedAt ? { finishedAt } : {}),
      outcome: failed ? "Failed" : finishedAt ? "Succeeded" : "Running",
      ...(failed ? { message: failed } : {}),
      ...(target ? { target } : {}),
    });
  };
  const st = cluster.status ?? {};
  add("Validate", cluster.metadata.creationTimestamp, transition(st.conditions, "Validated"), st.reason === "ValidationFailed" || st.reason === "QuotaExceeded" ? st.message : undefined);
  for (const infra of scope.infrastructures) {
    const c = infra.status?.conditions;
    const target = { kind: "Infrastructure", name: infra.metadata.name! };
    const conn = infra.spec.connection;
    const network = transition(c, "NetworkReady");
    const subnet = transition(c, "SubnetReady");
    add(`Network ${conn}`, infra.metadata.creationTimestamp, network, undefined, target);
    add(`Subnet ${conn}`, network, subnet, undefined, target);
    add(`SecurityGroup ${conn}`, subnet, transition(c, "SecurityGroupReady"), undefined, target);
    add(`KeyPair ${conn}`, subnet, transition(c, "KeyPairReady"), undefined, target);
    if (infra.spec.controlPlane) add(`LoadBalancer ${conn}`, subnet, transition(c, "LoadBalancerReady"), undefined, target);
    if (infra.status?.phase === "Failed") add(`Infrastructure ${conn}`, infra.metadata.creationTimestamp, now, infra.status.message, target);
  }
  const machines = [...scope.machines].sort((a, b) => (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? ""));
  for (const m of machines) {
    const role = m.spec.role === "control-plane" ? "ControlPlane" : "Worker";
    add(`${role} ${m.metadata.name}`, m.metadata.creationTimestamp, transition(m.status?.conditions, "Ready"), m.status?.phase === "Failed" ? `${m.status.failureReason}: ${m.status.failureMessage}` : undefined, {
      kind: "Machine",
      name: m.metadata.name!,
    });
  }
  // The plugin is applied once the control plane is initialised, and installed once its pods run on
  // every node: the step spans both.
  const cni = getCondition(st.conditions, CONDITION_NETWORK_PLUGIN_INSTALLED);
  if (cni) add(STEP_NETWORK_PLUGIN, transition(st.conditions, CONDITION_CONTROL_PLANE_INITIALIZED) ?? cni.lastTransitionTime, cni.status === "True" ? cni.lastTransitionTime : undefined);
  const ready = transition(st.conditions, "Ready");
  if (ready) add(STEP_READY, ready, ready);
  return steps.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}

/**
 * What a cluster's status says beyond progress: all of it but the steps' starts and ends (a failed step
 * counts), the machine counts, the nodes, the message, and the conditions' messages. The controllers
 * act on all of that (conditions, phase, reason, the remediation record), never on progress.
 */
function beyondProgress(st: Status | undefined): string {
  const { steps, controlPlane, workers: _workers, nodes: _nodes, message: _message, conditions, ...rest } = st ?? {};
  return JSON.stringify({
    ...rest,
    remediation: controlPlane?.remediation,
    failed: (steps ?? []).filter((s) => s.outcome === "Failed").map((s) => [s.name, s.message]),
    conditions: (conditions ?? []).map((c) => [c.type, c.status, c.reason]),
  });
}

/** Whether a cluster's status changed in its progress only (written at most once a second: runtime/reconciler.ts). */
export function clusterProgressOnly(written: Status | undefined, next: Status | undefined): boolean {
  return beyondProgress(written) === beyondProgress(next);
}

/**
 * Events for steps that failed between two journals. Steps that start or succeed are not events: the
 * journal (status.steps, `slipway timeline`) and the cluster's own events (CreatingInfrastructure,
 * InitializingControlPlane, NetworkPluginInstalled, ClusterRunning …) already say so, and an event is a
 * store write — a third of a cluster's writes went to them.
 */
export function stepEvents(before: ClusterStep[] | undefined, after: ClusterStep[] | undefined): { type: "Warning"; reason: string; message: string }[] {
  const previous = new Map((before ?? []).map((s) => [s.name, s]));
  const events: { type: "Warning"; reason: string; message: string }[] = [];
  for (const step of after ?? []) {
    if (step.outcome !== "Failed" || previous.get(step.name)?.outcome === "Failed") continue;
    events.push({ type: "Warning", reason: "StepFailed", message: `${step.name} failed: ${step.message ?? ""}` });
  }
  return events;
}
