// ClusterPlan: what applying a Cluster would do, asked of the API before anything is built. It is posted
// to the Cluster's `plan` subresource (POST .../namespaces/NS/clusters/NAME/plan), as a TokenRequest is
// posted to a ServiceAccount's `token`: never stored, answered with its status filled in. The request may
// carry Connections that the same manifest declares, so a file is planned before any of it exists.
import type { ClusterObject, ConnectionObject } from "../kinds.ts";

export const CLUSTER_PLAN_KIND = "ClusterPlan";

/** What happens to one thing the cluster is made of. */
export type PlannedChange = "Create" | "Reuse" | "Keep" | "Replace" | "Remove";

export interface PlannedConnection {
  name: string;
  provider: string;
  region: string;
  /** False when the Connection came with the request rather than from the API. */
  exists: boolean;
  zones: string[];
  machineTypes: { name: string; vcpus: number; memoryMiB: number; hourlyPrice?: number }[];
  images: string[];
  /** Why the connection cannot be used, when it cannot. */
  unusable?: string;
}

export interface PlannedResource {
  connection: string;
  /** network, subnet, securityGroup, keyPair, loadBalancer, publicIp */
  kind: string;
  change: PlannedChange;
  /** The cloud's id, for what exists. */
  id?: string;
  detail?: string;
}

export interface PlannedMachine {
  name: string;
  role: "control-plane" | "worker";
  pool?: string;
  connection: string;
  machineType: string;
  zone?: string;
  vcpus?: number;
  hourlyPrice?: number;
  change: PlannedChange;
}

export interface PlannedQuota {
  connection: string;
  /** vcpus, instances, networks, loadBalancers, publicIps */
  resource: string;
  /** What the plan takes beyond what the cluster already holds (negative: gives back). */
  needed: number;
  inUse: number;
  limit: number;
  free: number;
  sufficient: boolean;
}

export interface PlanProblem {
  field: string;
  reason: string;
  message: string;
}

export interface CostLine {
  /** machines, loadBalancers, publicIps */
  item: string;
  connection: string;
  /** The machine type, for machines. */
  type?: string;
  count: number;
  unitHourly: number;
  hourly: number;
}

export interface PlanCost {
  currency: "USD";
  hourly: number;
  monthly: number;
  lines: CostLine[];
  /** Things whose price the provider does not publish (left out of the sums). */
  unpriced: string[];
  /** For a change: the cluster as it runs now, and the difference. */
  before?: { hourly: number; monthly: number };
  delta?: { hourly: number; monthly: number };
}

export interface PlanEstimate {
  /** Expected seconds until Running (for a change: until the change is done). */
  seconds: number;
  /** Where the durations come from, e.g. "sim-east: latency profile demo". */
  basis: string[];
  /** The steps of the physical critical path, in order, with their expected seconds. */
  criticalPath: { step: string; seconds: number }[];
}

export interface ClusterPlanStatus {
  action: "Create" | "Update" | "Unchanged";
  connections: PlannedConnection[];
  resources: PlannedResource[];
  machines: PlannedMachine[];
  /** For a change: how many machines stay as they are (they are not listed). */
  unchangedMachines?: number;
  quota: PlannedQuota[];
  problems: PlanProblem[];
  cost: PlanCost;
  estimate: PlanEstimate;
}

export interface ClusterPlanObject {
  apiVersion: "slipway.dev/v1alpha1";
  kind: "ClusterPlan";
  metadata: { name?: string; namespace?: string; creationTimestamp?: string };
  spec: { cluster: ClusterObject; connections?: ConnectionObject[] };
  status?: ClusterPlanStatus;
}

/** Hours in an average month (365 × 24 / 12), as cloud price lists count them. */
export const HOURS_PER_MONTH = 730;
