// The cluster controller: owns everything a Cluster is made of. It reconciles a cluster when the
// cluster changes and when any of its children (infrastructure, pools, machines) or connections do;
// every object of a cluster lives in the cluster's shard.
import type { ClusterObject, ConnectionObject, InfrastructureObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { clusterKind, FINALIZER_CLUSTER, isRegistered, LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { machineKind } from "../../api/slipway/machine.ts";
import { machinePoolKind } from "../../api/slipway/machinepool.ts";
import { leaseKind } from "../../api/slipway/lease.ts";
import { notStatusOnly, type Controller } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { getCondition } from "../../runtime/conditions.ts";
import { objectReconciler } from "../../runtime/reconciler.ts";
import { heldByPause, leavingWithParent, olderClustersFirst } from "../contract.ts";
import { ETCD_MEMBER_REMOVED } from "../machine/etcd.ts";
import { isRegisteredTarget } from "../machine/status.ts";
import { KubeconfigTargets } from "./kubeconfig.ts";
import { clusterDeletePhases, clusterPhases } from "./phases.ts";
import { RecentChecks } from "./recent-checks.ts";
import type { ClusterDeps, ClusterMemory, ClusterScope, ClusterTiming } from "./scope.ts";
import { clusterConnections } from "./preflight.ts";
import { clusterProgressOnly, stepEvents, summarizeCluster } from "./status.ts";

export const CLUSTER_COMPONENT = "slipway.dev/cluster-controller";

export interface ClusterControllerOptions extends Partial<ClusterTiming> {
  concurrency?: number;
}

/** What the cluster reads of a machine. */
function machineView(m: MachineObject): string {
  const ready = getCondition(m.status?.conditions, "Ready");
  const st = m.status;
  // A control-plane machine on its way out holds the control plane's next step until it left etcd and the load balancer.
  const leaving = m.metadata.deletionTimestamp ? [getCondition(st?.conditions, ETCD_MEMBER_REMOVED)?.status, isRegisteredTarget(m)] : [];
  return JSON.stringify([m.metadata.deletionTimestamp, st?.phase, st?.nodeReady, st?.bootstrapped, st?.instanceId, ready?.status, ready?.lastTransitionTime, st?.failureReason, st?.failureMessage, ...leaving]);
}

/** What the cluster reads of a pool (whether its status speaks of its current spec, too). */
function poolView(p: MachinePoolObject): string {
  const failed = p.status?.phase === "Failed";
  return JSON.stringify([p.metadata.deletionTimestamp, p.metadata.generation, p.spec, p.status?.observedGeneration, p.status?.phase, failed ? p.status?.reason : "", failed ? p.status?.message : ""]);
}

function ofCluster<T extends { metadata: { namespace?: string } }>(items: T[], namespace: string | undefined): T[] {
  return items.filter((i) => i.metadata.namespace === namespace);
}

export function registerClusterController(manager: ControllerManager, deps: ClusterDeps, options: ClusterControllerOptions = {}): Controller<ClusterObject> {
  const clusters = manager.informer(clusterKind);
  const connections = manager.informer(connectionKind);
  const infrastructures = manager.informer(infrastructureKind);
  const pools = manager.informer(machinePoolKind);
  const machines = manager.informer(machineKind);
  const leases = manager.informer(leaseKind);
  const pollMs = options.pollMs ?? 1000;
  const timing: ClusterTiming = { pollMs, recheckMs: options.recheckMs ?? 120 * pollMs, revalidateMs: options.revalidateMs ?? 30 * pollMs };
  const memory: ClusterMemory = { checks: new RecentChecks(), kubeconfigs: new KubeconfigTargets() };

  const reconcile = objectReconciler<ClusterObject, ClusterScope>({
    kind: clusterKind,
    cache: clusters.cache,
    finalizer: FINALIZER_CLUSTER,
    observedGeneration: true,
    scope: (_ctx, base) => {
      const cluster = base.object;
      const ns = cluster.metadata.namespace;
      const name = cluster.metadata.name!;
      const conns = new Map<string, ConnectionObject | undefined>();
      for (const c of clusterConnections(cluster.spec)) conns.set(c, connections.cache.get(keyFor(ns, c)));
      const all = ofCluster(machines.cache.withLabel(LABEL_CLUSTER, name), ns) as MachineObject[];
      return {
        ...base,
        deps,
        timing,
        memory,
        connections: conns,
        infrastructures: ofCluster(infrastructures.cache.withLabel(LABEL_CLUSTER, name), ns) as InfrastructureObject[],
        pools: ofCluster(pools.cache.withLabel(LABEL_CLUSTER, name), ns) as MachinePoolObject[],
        controlPlane: all.filter((m) => m.spec.role === "control-plane"),
        machines: all,
        ...(cluster.spec.leaseName ? { lease: leases.cache.get(keyFor(ns, cluster.spec.leaseName)) } : {}),
        changedChildren: new Set<string>(),
      };
    },
    phases: clusterPhases,
    deletePhases: clusterDeletePhases,
    summarize: summarizeCluster,
    // A step's start or end, a machine counted: at most one write a second while steps follow each other.
    progressOnly: clusterProgressOnly,
    afterStatusWrite: async (ctx, _scope, previous, written) => {
      for (const e of stepEvents(previous.status?.steps, written.status?.steps)) await ctx.event(written, e.type, e.reason, e.message);
      const [was, is] = [previous.status?.version, written.status?.version];
      if (was && is && was !== is) await ctx.event(written, "Normal", "ControlPlaneUpgraded", `every control-plane node runs ${is} (was ${was}); the worker pools follow`);
      const phase = written.status?.phase;
      // Pending from its create on: a cluster that then waits (for its lease) says so when it starts to, and why.
      if (phase !== previous.status?.phase || (phase === "Pending" && written.status?.reason !== previous.status?.reason)) {
        const failed = phase === "Failed";
        await ctx.event(written, failed ? "Warning" : "Normal", failed ? (written.status?.reason ?? "Failed") : `Cluster${phase}`, written.status?.message ?? `cluster is ${phase}`);
      }
    },
  });

  // A registered cluster has nothing of Slipway's to build: the registration controller looks after it.
  const unlessClusterPaused: typeof reconcile = async (ctx) => {
    const cluster = clusters.cache.get(ctx.key);
    return cluster && (heldByPause(cluster, cluster) || isRegistered(cluster)) ? {} : reconcile(ctx);
  };
  const controller = manager.add<ClusterObject>({
    name: "cluster",
    component: CLUSTER_COMPONENT,
    informer: clusters,
    reconcile: unlessClusterPaused,
    concurrency: options.concurrency ?? 8,
    // Only this controller writes a cluster's status, from what its children say: its own status writes
    // (a dozen while a cluster is built) need no second look.
    changed: notStatusOnly,
    priority: olderClustersFirst(clusters.cache, (key) => key),
  });
  const ownerKey = (o: { metadata: { namespace?: string; labels?: Record<string, string> } }) => {
    const cluster = o.metadata.labels?.[LABEL_CLUSTER];
    return cluster ? [keyFor(o.metadata.namespace, cluster)] : [];
  };
  // A cluster being deleted waits for its children to go (deletion.ts).
  const leavingWithCluster = (previous: MachineObject | MachinePoolObject | InfrastructureObject) => leavingWithParent(previous, clusters.cache.get(ownerKey(previous)[0] ?? ""));
  controller.watch(infrastructures, ownerKey, (previous) => !leavingWithCluster(previous));
  // Of a pool and of a machine, the cluster reads a few fields (status.ts, phases.ts): a change of any
  // other (a machine passes half a dozen conditions on its way) does not requeue it.
  controller.watch(pools, ownerKey, (previous, pool) => !leavingWithCluster(previous) && poolView(previous) !== poolView(pool));
  controller.watch(machines, ownerKey, (previous, machine) => !leavingWithCluster(previous) && machineView(previous) !== machineView(machine));
  controller.watch(connections, (c) =>
    clusters.cache
      .list()
      .filter((cl) => cl.metadata.namespace === c.metadata.namespace && clusterConnections(cl.spec).includes(c.metadata.name!))
      .map((cl) => keyFor(cl.metadata.namespace, cl.metadata.name!)),
  );
  // A cluster waits on its lease: every change of the lease (Active, Expired) requeues it.
  controller.watch(leases, (l) =>
    clusters.cache
      .list()
      .filter((cl) => cl.metadata.namespace === l.metadata.namespace && cl.spec.leaseName === l.metadata.name)
      .map((cl) => keyFor(cl.metadata.namespace, cl.metadata.name!)),
  );
  return controller;
}
