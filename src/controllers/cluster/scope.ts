// What every phase of the cluster controller works with: its dependencies, its timings, what the
// controller remembers between reconciles, and one reconcile's scope (the cluster and its children as
// the informer caches show them), with the few helpers the phase files share.
import type { ClusterObject, ConnectionObject, InfrastructureObject, LeaseObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { CertificateMaker } from "../../bootstrap/pki-workers.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Scope } from "../../runtime/reconciler.ts";
import { controllerRef } from "../contract.ts";
import type { ProviderResolver } from "../providers.ts";
import type { WorkloadClients } from "../workload.ts";
import type { KubeconfigTargets } from "./kubeconfig.ts";
import type { RecentChecks } from "./recent-checks.ts";

export interface ClusterDeps {
  providers: ProviderResolver;
  workloads: WorkloadClients;
  /** Where certificates are made (default: on this thread). */
  pki?: CertificateMaker;
}

export interface ClusterTiming {
  /** Requeue delay while waiting on children (default 1000 ms). */
  pollMs: number;
  /**
   * Requeue delay of a cluster that is not Ready yet or is being deleted (default 120 × pollMs), as an
   * idle check. Every change of a child requeues the cluster anyway; this only catches what no watch
   * reports. It is slow because idle checks are idle only within one controller's queue: with 10,000
   * clusters waiting, one every 30 s was a quarter of all reconciles, on the same CPU as the work.
   */
  recheckMs: number;
  /** Requeue delay after a failed validation, to notice a raised quota (default 30 poll intervals: 30 s). */
  revalidateMs: number;
}

/** What one cluster controller remembers between reconciles, made when it is registered. */
export interface ClusterMemory {
  /** Secrets and kubeconfigs found in place lately, not read again for a while. */
  checks: RecentChecks;
  /** The server each kubeconfig Secret version points at. */
  kubeconfigs: KubeconfigTargets;
}

export interface ClusterScope extends Scope<ClusterObject> {
  deps: ClusterDeps;
  timing: ClusterTiming;
  memory: ClusterMemory;
  connections: Map<string, ConnectionObject | undefined>;
  infrastructures: InfrastructureObject[];
  pools: MachinePoolObject[];
  controlPlane: MachineObject[];
  /** Every machine of the cluster, control plane and pools. */
  machines: MachineObject[];
  /** The Lease the cluster names (spec.leaseName), from the informer cache. */
  lease?: LeaseObject;
  /** Set while the cluster waits before building (e.g. for its lease to be Active): its phase stays Pending. */
  pending?: { reason: string; message: string };
  /** Set by a phase that learned something the summary should say (e.g. validation problems). */
  problem?: { reason: string; message: string };
  /** Waiting is normal while provisioning; this says on what. */
  waitingOn?: string;
  /** Names of the children (infrastructures, pools) whose spec this reconcile changed. */
  changedChildren: Set<string>;
}

export function now(ctx: ReconcileContext): string {
  return nowTimestamp(new Date(ctx.clock.now()));
}

export function clusterStatus(scope: ClusterScope): NonNullable<ClusterObject["status"]> {
  scope.object.status ??= {};
  return scope.object.status;
}

/** Metadata of an object made for the cluster: in its namespace, labelled with it, owned by it. */
export function childMeta(cluster: ClusterObject, name: string, labels: Record<string, string> = {}) {
  return {
    name,
    namespace: cluster.metadata.namespace,
    labels: { [LABEL_CLUSTER]: cluster.metadata.name!, ...labels },
    ownerReferences: [controllerRef(cluster)],
  };
}

/** The Infrastructure holding the control plane's load balancer. */
export function controlPlaneInfrastructure(scope: ClusterScope): InfrastructureObject | undefined {
  return scope.infrastructures.find((i) => i.spec.controlPlane && i.spec.connection === scope.object.spec.controlPlane.connection);
}
