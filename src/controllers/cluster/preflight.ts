// Dynamic validation of a cluster before any cloud resource exists (as ARO-RP validates quota and
// networks before installing): every connection, region, machine type and image must exist, the
// control-plane machines must meet kubeadm's preflight minimums, and quota in every connection must
// cover the whole cluster. Every problem is reported at once.
import { apiVisibilityOf, machineTypeOf, type ClusterSpec } from "../../api/slipway/cluster.ts";
import { DEFAULT_IMAGE } from "../../api/slipway/nodes.ts";
import type { ImageInfo, MachineTypeInfo, QuotaReport, QuotaResources } from "../../providers/provider.ts";

/** kubeadm's preflight minimums for control-plane machines. */
export const CONTROL_PLANE_MIN_VCPUS = 2;
export const CONTROL_PLANE_MIN_MEMORY_MIB = 1700;

export interface ConnectionFacts {
  /** Why the connection cannot be used at all (missing, unknown provider, unknown region, unreachable). */
  unusable?: string;
  machineTypes?: MachineTypeInfo[];
  images?: ImageInfo[];
  quota?: QuotaReport;
  /** What this cluster already holds in the connection (so a retry or a scale-up is not counted twice). */
  ownUsage?: QuotaResources;
  /** Which cloud the connection builds in (crosscloud.ts's cloudOf); two connections of one cloud share a network. */
  cloud?: string;
  /** Whether the connection's provider keeps DNS zones (where the API's names live); undefined when not asked. */
  dns?: boolean;
}

export interface PreflightProblem {
  field: string;
  reason: "ValidationFailed" | "QuotaExceeded";
  message: string;
}

const ZERO: QuotaResources = { vcpus: 0, instances: 0, networks: 0, loadBalancers: 0, publicIps: 0 };

interface MachineGroup {
  field: string;
  connection: string;
  machineType: string;
  image: string;
  replicas: number;
  controlPlane: boolean;
}

function groups(spec: ClusterSpec): MachineGroup[] {
  const cp = spec.controlPlane;
  return [
    { field: "spec.controlPlane", connection: cp.connection, machineType: machineTypeOf(cp), image: cp.image ?? DEFAULT_IMAGE, replicas: cp.replicas ?? 1, controlPlane: true },
    ...(spec.workers ?? []).map((w, i) => ({
      field: `spec.workers[${i}]`,
      connection: w.connection,
      machineType: machineTypeOf(w),
      image: w.image ?? DEFAULT_IMAGE,
      replicas: w.replicas ?? 1,
      controlPlane: false,
    })),
  ];
}

/** The connections a cluster uses, control plane's first. */
export function clusterConnections(spec: ClusterSpec): string[] {
  return [...new Set(groups(spec).map((g) => g.connection))];
}

/** What the whole cluster needs in each connection. */
export function clusterDemand(spec: ClusterSpec, machineTypes: (connection: string) => MachineTypeInfo[] | undefined): Map<string, QuotaResources> {
  const demand = new Map<string, QuotaResources>();
  for (const connection of clusterConnections(spec)) {
    demand.set(connection, { ...ZERO, networks: 1, loadBalancers: connection === spec.controlPlane.connection ? 1 : 0 });
  }
  for (const g of groups(spec)) {
    const d = demand.get(g.connection)!;
    const type = machineTypes(g.connection)?.find((t) => t.name === g.machineType);
    d.instances += g.replicas;
    d.vcpus += g.replicas * (type?.vcpus ?? 0);
  }
  return demand;
}

const QUOTA_NAMES: Record<keyof QuotaResources, string> = {
  vcpus: "vCPUs",
  instances: "instances",
  networks: "networks",
  loadBalancers: "load balancers",
  publicIps: "public IPs",
};

/** `checkedElsewhere`: connections of hosts, whose groups are checked host by host (host-preflight.ts). */
export function preflight(spec: ClusterSpec, facts: Map<string, ConnectionFacts>, checkedElsewhere: ReadonlySet<string> = new Set()): PreflightProblem[] {
  const problems: PreflightProblem[] = [];
  const invalid = (field: string, message: string) => problems.push({ field, reason: "ValidationFailed", message });
  const reported = new Set<string>();
  for (const g of groups(spec)) {
    if (checkedElsewhere.has(g.connection)) continue;
    const f = facts.get(g.connection);
    if (!f || f.unusable) {
      if (!reported.has(g.connection)) invalid(`${g.field}.connection`, f?.unusable ?? `connection "${g.connection}" does not exist`);
      reported.add(g.connection);
      continue;
    }
    const type = f.machineTypes?.find((t) => t.name === g.machineType);
    if (!type) {
      const offered = (f.machineTypes ?? []).map((t) => t.name).join(", ");
      invalid(`${g.field}.machineType`, `machine type "${g.machineType}" is not offered in connection "${g.connection}" (offered: ${offered})`);
    } else if (g.controlPlane && (type.vcpus < CONTROL_PLANE_MIN_VCPUS || type.memoryMiB < CONTROL_PLANE_MIN_MEMORY_MIB)) {
      invalid(
        `${g.field}.machineType`,
        `machine type "${g.machineType}" (${type.vcpus} vCPU, ${type.memoryMiB} MiB) is below kubeadm's control-plane minimum of ${CONTROL_PLANE_MIN_VCPUS} vCPU and ${CONTROL_PLANE_MIN_MEMORY_MIB} MiB`,
      );
    }
    if (!f.images?.some((i) => i.name === g.image)) {
      invalid(`${g.field}.image`, `image "${g.image}" is not available in connection "${g.connection}"`);
    }
  }
  const demand = clusterDemand(spec, (c) => facts.get(c)?.machineTypes);
  for (const [connection, need] of demand) {
    const f = facts.get(connection);
    if (!f?.quota) continue;
    const own = f.ownUsage ?? ZERO;
    for (const key of Object.keys(QUOTA_NAMES) as (keyof QuotaResources)[]) {
      const more = need[key] - own[key];
      const free = f.quota.limits[key] - f.quota.usage[key];
      if (more > 0 && more > free) {
        problems.push({
          field: `connection "${connection}"`,
          reason: "QuotaExceeded",
          message: `quota for ${QUOTA_NAMES[key]} in connection "${connection}" is short by ${more - free}: the cluster needs ${more} more, ${free} of ${f.quota.limits[key]} are free`,
        });
      }
    }
  }
  return problems;
}

/**
 * A private API is reached only from inside the control plane's cloud, at api-int in its DNS zone: the
 * control plane's provider must keep DNS, and every pool must be in that cloud (another cloud's machines
 * reach a cluster only through public addresses, and a private API has none). Hosts' connections
 * (`hostConnections`) have no cloud network to be private in.
 */
export function apiVisibilityProblems(spec: ClusterSpec, facts: Map<string, ConnectionFacts>, hostConnections: ReadonlySet<string> = new Set()): PreflightProblem[] {
  if (apiVisibilityOf(spec) !== "private") return [];
  const field = "spec.apiServer.visibility";
  const home = spec.controlPlane.connection;
  if (hostConnections.has(home)) {
    return [{ field, reason: "ValidationFailed", message: `private needs a cloud network with an internal load balancer; the control plane's connection "${home}" is of hosts, whose API is served where the hosts are` }];
  }
  const cp = facts.get(home);
  if (!cp || cp.unusable) return [];
  if (cp.dns === false) return [{ field, reason: "ValidationFailed", message: `private needs DNS for the name api-int.<cluster>.<zone>, and the provider of connection "${home}" keeps no DNS zones` }];
  const problems: PreflightProblem[] = [];
  (spec.workers ?? []).forEach((pool, i) => {
    const f = facts.get(pool.connection);
    const elsewhere = hostConnections.has(pool.connection) || (f?.cloud !== undefined && cp.cloud !== undefined && f.cloud !== cp.cloud);
    if (!elsewhere) return;
    problems.push({
      field: `spec.workers[${i}].connection`,
      reason: "ValidationFailed",
      message: `connection "${pool.connection}" is outside the cloud of the control plane's connection "${home}": its machines would reach the API only through a public address, and spec.apiServer.visibility is private`,
    });
  });
  return problems;
}

/** The cluster's reason when preflight fails: QuotaExceeded only when quota is all that is wrong. */
export function preflightReason(problems: PreflightProblem[]): "ValidationFailed" | "QuotaExceeded" {
  return problems.every((p) => p.reason === "QuotaExceeded") ? "QuotaExceeded" : "ValidationFailed";
}

export function preflightMessage(problems: PreflightProblem[]): string {
  return problems.map((p) => `${p.field}: ${p.message}`).join("; ");
}
