// Readiness as the views show it: a condition looked up by type, whether the controllers saw a
// cluster's latest spec, when a cluster is Ready or Failed, and a cluster's machines counted by how far
// they got.
import type { ClusterObject, MachineObject } from "../api/kinds.ts";
import type { ConditionT } from "../api/meta.ts";

export function condition(conditions: readonly ConditionT[] | undefined, type: string): ConditionT | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether the controllers have looked at the cluster's latest spec (when they say which one they saw). */
export function observedLatest(cluster: ClusterObject): boolean {
  const observed = cluster.status?.observedGeneration;
  const generation = cluster.metadata.generation;
  return observed === undefined || generation === undefined || observed >= generation;
}

export function isClusterReady(cluster: ClusterObject): boolean {
  return cluster.status?.phase === "Running" && condition(cluster.status.conditions, "Ready")?.status === "True" && observedLatest(cluster);
}

export function isClusterFailed(cluster: ClusterObject): boolean {
  return cluster.status?.phase === "Failed" && observedLatest(cluster);
}

/**
 * Reasons of a Failed cluster that only its owner can clear — a spec the checks or the cloud refuse, a
 * lease that ended, a defect in the controllers — so waiting longer does not help. The controllers retry
 * every other failure (quota, cloud capacity, a cloud error), and it may clear by itself as they do.
 */
const FAILED_UNTIL_CHANGED: ReadonlySet<string> = new Set(["ValidationFailed", "CreateMachineFailed", "LeaseFailed", "ControlPlaneLost", "InternalError"]);

/** Whether a Failed cluster stays so until someone changes something (its reason says so). */
export function failsUntilChanged(reason: string | undefined): boolean {
  return reason === undefined || FAILED_UNTIL_CHANGED.has(reason);
}

/** Whether the machine's node is Ready. */
export function isNodeReady(machine: MachineObject): boolean {
  return machine.status?.nodeReady === true;
}

/** Machines of a cluster counted by how far they got. */
export interface MachineCounts {
  desired: number;
  /** Machine objects that exist. */
  created: number;
  /** Instances that run (instance ID known, past provisioning). */
  booted: number;
  /** Machines whose kubeadm init or join completed. */
  joined: number;
  /** Machines whose node is Ready. */
  ready: number;
}

export function desiredMachines(cluster: ClusterObject): number {
  const controlPlane = cluster.status?.controlPlane?.desired ?? cluster.spec.controlPlane?.replicas ?? 1;
  const workers = cluster.status?.workers?.desired ?? (cluster.spec.workers ?? []).reduce((sum, pool) => sum + (pool.replicas ?? 1), 0);
  return controlPlane + workers;
}

export function countMachines(cluster: ClusterObject, machines: readonly MachineObject[]): MachineCounts {
  const booted = (m: MachineObject) => m.status?.instanceId !== undefined && (m.status.phase === "Provisioned" || m.status.phase === "Running");
  return {
    desired: desiredMachines(cluster),
    created: machines.length,
    booted: machines.filter(booted).length,
    joined: machines.filter((m) => m.status?.bootstrapped === true).length,
    ready: machines.filter(isNodeReady).length,
  };
}
