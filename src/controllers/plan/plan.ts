// A cluster's plan from what the clouds answered: the cloud resources per connection, the machines with
// their types and zones, the quota taken next to what is free, every problem dynamic validation would
// report (the same preflight the cluster controller runs), the cost from the catalogue's prices and the
// expected time. For a cluster that exists, only the difference: what is added, replaced or removed.
import type { ClusterObject, InfrastructureObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import {
  HOURS_PER_MONTH,
  type ClusterPlanStatus,
  type CostLine,
  type PlanCost,
  type PlannedConnection,
  type PlannedMachine,
  type PlannedQuota,
  type PlannedResource,
} from "../../api/slipway/clusterplan.ts";
import { machineTypeOf } from "../../api/slipway/cluster.ts";
import { ROLE_CONTROL_PLANE } from "../../api/slipway/machine.ts";
import { names } from "../../api/slipway/names.ts";
import type { QuotaResources } from "../../providers/provider.ts";
import { apiVisibilityProblems, clusterConnections, clusterDemand, preflight } from "../cluster/preflight.ts";
import { cloudOf } from "../infrastructure/crosscloud.ts";
import { lowestFreeIndexes, scaleDownVictims } from "../machinepool/phases.ts";
import { estimateBuild } from "./estimate.ts";
import type { PlanConnectionFacts } from "./facts.ts";

/** The cluster as it is now: what a change is planned against. */
export interface ExistingCluster {
  cluster: ClusterObject;
  infrastructures: InfrastructureObject[];
  pools: MachinePoolObject[];
  machines: MachineObject[];
}

export interface PlanInput {
  /** The cluster as it would be stored: admitted, with defaults. */
  cluster: ClusterObject;
  existing?: ExistingCluster;
  facts: Map<string, PlanConnectionFacts>;
}

const QUOTA_KEYS: (keyof QuotaResources)[] = ["vcpus", "instances", "networks", "loadBalancers", "publicIps"];
const ZERO: QuotaResources = { vcpus: 0, instances: 0, networks: 0, loadBalancers: 0, publicIps: 0 };

interface MachineIntent {
  name: string;
  role: "control-plane" | "worker";
  pool?: string;
  connection: string;
  machineType: string;
  /** Launched by its pool's scale set, once the control plane can issue its join. */
  scaleSet?: boolean;
}

function round(dollars: number): number {
  return Math.round(dollars * 1e6) / 1e6;
}

function live(m: MachineObject): boolean {
  return !m.metadata.deletionTimestamp;
}

/** The machines the cluster is to have, named as the controllers will name them (a scale set's new ones by a placeholder: the cloud has not launched their instances yet). */
function desiredMachines(cluster: ClusterObject, existing: ExistingCluster | undefined): { wanted: MachineIntent[]; removed: MachineObject[] } {
  const name = cluster.metadata.name!;
  const cp = cluster.spec.controlPlane;
  const wanted: MachineIntent[] = [];
  const removed: MachineObject[] = [];
  for (let i = 0; i < (cp.replicas ?? 1); i++) {
    wanted.push({ name: names.controlPlaneMachine(name, i), role: "control-plane", connection: cp.connection, machineType: machineTypeOf(cp) });
  }
  const machines = (existing?.machines ?? []).filter(live);
  const cpNames = new Set(wanted.map((m) => m.name));
  removed.push(...machines.filter((m) => m.spec.role === ROLE_CONTROL_PLANE && !cpNames.has(m.metadata.name!)));
  const declared = new Set<string>();
  for (const worker of cluster.spec.workers ?? []) {
    const pool = names.machinePool(name, worker.name);
    declared.add(pool);
    const current = machines.filter((m) => m.spec.pool === pool);
    const replicas = worker.replicas ?? 1;
    const victims = scaleDownVictims(pool, current, current.length - replicas);
    removed.push(...victims);
    const staying = current.filter((m) => !victims.includes(m));
    const missing = Math.max(0, replicas - staying.length);
    // A scale set's machines are named after instances the cloud has not launched yet.
    const added = worker.scaleSet
      ? Array.from({ length: missing }, (_, k) => `${pool}-(new-${k + 1})`)
      : lowestFreeIndexes(new Set(staying.map((m) => Number(m.metadata.name!.slice(pool.length + 1)))), missing).map((i) => names.poolMachine(pool, i));
    for (const machineName of [...staying.map((m) => m.metadata.name!), ...added].sort((a, b) => a.localeCompare(b, "en", { numeric: true }))) {
      wanted.push({ name: machineName, role: "worker", pool: worker.name, connection: worker.connection, machineType: machineTypeOf(worker), ...(worker.scaleSet ? { scaleSet: true } : {}) });
    }
  }
  removed.push(...machines.filter((m) => m.spec.role !== ROLE_CONTROL_PLANE && (!m.spec.pool || !declared.has(m.spec.pool))));
  return { wanted, removed };
}

/** What the cluster already holds in a connection (so a change is not counted twice against quota). */
function heldIn(existing: ExistingCluster | undefined, connection: string): QuotaResources {
  if (!existing) return ZERO;
  const infra = existing.infrastructures.find((i) => i.spec.connection === connection);
  const machines = existing.machines.filter((m) => m.spec.connection === connection && m.status?.instanceId && m.status.phase !== "Failed");
  return {
    vcpus: machines.reduce((sum, m) => sum + (infra?.status?.machineTypes?.[m.spec.machineType]?.vcpu ?? 0), 0),
    instances: machines.length,
    networks: infra?.status?.networkId ? 1 : 0,
    loadBalancers: infra?.status?.loadBalancer ? 1 : 0,
    publicIps: 0,
  };
}

function plannedConnections(input: PlanInput): PlannedConnection[] {
  return [...input.facts].map(([name, f]) => ({
    name,
    provider: f.connection?.spec.provider ?? "",
    region: f.connection?.spec.region ?? "",
    exists: f.connection?.metadata.uid !== undefined && f.connection.metadata.resourceVersion !== undefined,
    zones: f.zones ?? [],
    machineTypes: (f.machineTypes ?? []).map((t) => ({ name: t.name, vcpus: t.vcpus, memoryMiB: t.memoryMiB, ...(t.hourlyPrice === undefined ? {} : { hourlyPrice: t.hourlyPrice }) })),
    images: (f.images ?? []).map((i) => i.name),
    ...(f.unusable ? { unusable: f.unusable } : {}),
  }));
}

const RESOURCE_KINDS = ["network", "subnet", "securityGroup", "keyPair"] as const;

function recordedId(infra: InfrastructureObject | undefined, kind: string): string | undefined {
  const st = infra?.status;
  switch (kind) {
    case "network":
      return st?.networkId;
    case "subnet":
      return st?.subnetId;
    case "securityGroup":
      return st?.securityGroupId;
    case "keyPair":
      return st?.keyPairId;
    case "loadBalancer":
      return st?.loadBalancer?.id;
    default:
      return undefined;
  }
}

/** Cloud resources per connection: made, reused (listed for a new cluster only), or removed. */
function plannedResources(input: PlanInput, zoneOf: (connection: string) => string | undefined): PlannedResource[] {
  const { cluster, existing } = input;
  const resources: PlannedResource[] = [];
  const wanted = clusterConnections(cluster.spec);
  for (const connection of wanted) {
    const infra = existing?.infrastructures.find((i) => i.spec.connection === connection && !i.metadata.deletionTimestamp);
    const kinds: string[] = [...RESOURCE_KINDS, ...(connection === cluster.spec.controlPlane.connection ? ["loadBalancer"] : [])];
    for (const kind of kinds) {
      const id = recordedId(infra, kind);
      if (id && existing) continue;
      const detail = kind === "subnet" ? `zone ${zoneOf(connection) ?? "?"}` : kind === "loadBalancer" ? "fronts the Kubernetes API (port 6443), internet-facing" : undefined;
      resources.push({ connection, kind, change: id ? "Reuse" : "Create", ...(id ? { id } : {}), ...(detail ? { detail } : {}) });
    }
  }
  for (const infra of existing?.infrastructures ?? []) {
    if (wanted.includes(infra.spec.connection)) continue;
    for (const kind of ["loadBalancer", ...RESOURCE_KINDS]) {
      const id = recordedId(infra, kind);
      if (id) resources.push({ connection: infra.spec.connection, kind, change: "Remove", id });
    }
  }
  return resources;
}

interface Priced {
  connection: string;
  machineType: string;
}

/** Cost lines for machines (grouped by connection and type), load balancers and public addresses. */
function costOf(machines: Priced[], loadBalancers: string[], publicIps: string[], facts: Map<string, PlanConnectionFacts>): { lines: CostLine[]; hourly: number; unpriced: string[] } {
  const lines: CostLine[] = [];
  const unpriced = new Set<string>();
  const groups = new Map<string, Priced & { count: number }>();
  for (const m of machines) {
    const key = `${m.connection}/${m.machineType}`;
    const group = groups.get(key) ?? { ...m, count: 0 };
    group.count++;
    groups.set(key, group);
  }
  for (const g of groups.values()) {
    const price = facts.get(g.connection)?.machineTypes?.find((t) => t.name === g.machineType)?.hourlyPrice;
    if (price === undefined) unpriced.add(`machine type ${g.machineType} in ${g.connection}`);
    else lines.push({ item: "machines", connection: g.connection, type: g.machineType, count: g.count, unitHourly: price, hourly: round(price * g.count) });
  }
  const perConnection = (item: "loadBalancers" | "publicIps", where: string[], price: (f: PlanConnectionFacts | undefined) => number | undefined, noun: string) => {
    for (const connection of new Set(where)) {
      const count = where.filter((c) => c === connection).length;
      const unit = price(facts.get(connection));
      if (unit === undefined) unpriced.add(`${noun} in ${connection}`);
      else lines.push({ item, connection, count, unitHourly: unit, hourly: round(unit * count) });
    }
  };
  perConnection("loadBalancers", loadBalancers, (f) => f?.estimates?.prices.loadBalancerHourly, "load balancer");
  perConnection("publicIps", publicIps, (f) => f?.estimates?.prices.publicIpHourly, "public address");
  return { lines, hourly: round(lines.reduce((sum, l) => sum + l.hourly, 0)), unpriced: [...unpriced] };
}

function monthly(hourly: number): number {
  return Math.round(hourly * HOURS_PER_MONTH * 100) / 100;
}

export function makePlan(input: PlanInput): ClusterPlanStatus {
  const { cluster, existing, facts } = input;
  const spec = cluster.spec;
  const cpConnection = spec.controlPlane.connection;
  const infraOf = (connection: string) => existing?.infrastructures.find((i) => i.spec.connection === connection && !i.metadata.deletionTimestamp);
  const zoneOf = (connection: string) => infraOf(connection)?.status?.zones?.[0] ?? facts.get(connection)?.zones?.[0];
  const typeOf = (connection: string, type: string) => facts.get(connection)?.machineTypes?.find((t) => t.name === type);

  const { wanted, removed } = desiredMachines(cluster, existing);
  const current = new Map((existing?.machines ?? []).filter(live).map((m) => [m.metadata.name!, m]));
  const machines: PlannedMachine[] = [];
  let unchanged = 0;
  for (const m of wanted) {
    const now = current.get(m.name);
    const change = !now ? "Create" : now.spec.machineType !== m.machineType || now.spec.connection !== m.connection ? "Replace" : "Keep";
    if (change === "Keep" && existing) {
      unchanged++;
      continue;
    }
    const type = typeOf(m.connection, m.machineType);
    const zone = (change === "Keep" ? now?.status?.zone : undefined) ?? zoneOf(m.connection);
    machines.push({
      ...m,
      change,
      ...(zone ? { zone } : {}),
      ...(type ? { vcpus: type.vcpus } : {}),
      ...(type?.hourlyPrice === undefined ? {} : { hourlyPrice: type.hourlyPrice }),
    });
  }
  for (const m of removed) {
    const type = typeOf(m.spec.connection, m.spec.machineType);
    machines.push({
      name: m.metadata.name!,
      role: m.spec.role === ROLE_CONTROL_PLANE ? "control-plane" : "worker",
      ...(m.spec.pool ? { pool: m.spec.pool.slice(cluster.metadata.name!.length + 1) } : {}),
      connection: m.spec.connection,
      machineType: m.spec.machineType,
      ...(m.status?.zone ? { zone: m.status.zone } : {}),
      ...(type?.hourlyPrice === undefined ? {} : { hourlyPrice: type.hourlyPrice }),
      change: "Remove",
    });
  }

  // Quota: what the whole cluster needs, less what it already holds, next to what is free.
  const demand = clusterDemand(spec, (c) => facts.get(c)?.machineTypes);
  const quota: PlannedQuota[] = [];
  for (const [connection, need] of demand) {
    const report = facts.get(connection)?.quota;
    if (!report) continue;
    const held = heldIn(existing, connection);
    for (const key of QUOTA_KEYS) {
      const needed = need[key] - held[key];
      if (need[key] === 0 && held[key] === 0) continue;
      // A change lists only the quota it takes or gives back.
      if (existing && needed === 0) continue;
      const free = report.limits[key] - report.usage[key];
      quota.push({ connection, resource: key, needed, inUse: report.usage[key], limit: report.limits[key], free, sufficient: needed <= 0 || needed <= free });
    }
  }
  const asked = new Map([...facts].map(([name, f]) => [name, { ...f, ownUsage: heldIn(existing, name), ...(f.connection ? { cloud: cloudOf(f.connection) } : {}) }]));
  const problems = [...preflight(spec, asked), ...apiVisibilityProblems(spec, asked)].map((p) => ({ field: p.field, reason: p.reason, message: p.message }));

  // Cost of the cluster as declared, and for a change, of the cluster as it is.
  const after = costOf(wanted, [cpConnection], [], facts);
  const cost: PlanCost = { currency: "USD", hourly: after.hourly, monthly: monthly(after.hourly), lines: after.lines, unpriced: after.unpriced };
  if (existing) {
    const running = [...current.values()].map((m) => ({ connection: m.spec.connection, machineType: m.spec.machineType }));
    const balancers = existing.infrastructures.filter((i) => i.status?.loadBalancer).map((i) => i.spec.connection);
    const before = costOf(running, balancers, [], facts);
    cost.before = { hourly: before.hourly, monthly: monthly(before.hourly) };
    cost.delta = { hourly: round(after.hourly - before.hourly), monthly: Math.round((monthly(after.hourly) - monthly(before.hourly)) * 100) / 100 };
  }

  // Expected time: the physical critical path with each connection's usual durations.
  const connections = new Map(
    clusterConnections(spec).map((name) => [name, { durations: facts.get(name)?.estimates?.durationsMs ?? {}, built: Boolean(infraOf(name)?.status?.ready) }]),
  );
  const exists = (name: string) => {
    const m = current.get(name);
    return m !== undefined && machines.every((p) => p.name !== name || p.change === "Keep");
  };
  const chain = estimateBuild({
    connections,
    controlPlaneConnection: cpConnection,
    controlPlane: wanted.filter((m) => m.role === "control-plane").map((m) => ({ name: m.name, connection: m.connection, exists: exists(m.name) && (current.get(m.name)?.status?.bootstrapped ?? false) })),
    workers: wanted
      .filter((m) => m.role === "worker")
      .map((m) => ({ name: m.name, connection: m.connection, exists: exists(m.name) && (current.get(m.name)?.status?.bootstrapped ?? false), ...(m.scaleSet ? { scaleSet: true } : {}) })),
  });
  const basis = [...connections.keys()].map((name) => {
    const f = facts.get(name);
    const where = f?.connection ? `${f.connection.spec.provider} ${f.connection.spec.region}` : "unknown";
    return Object.keys(f?.estimates?.durationsMs ?? {}).length > 0 ? `${name}: usual durations published by ${where}` : `${name}: durations not published by ${where} (counted as none)`;
  });

  const resources = plannedResources(input, zoneOf);
  const changed = machines.length > 0 || resources.some((r) => r.change !== "Reuse");
  const sameSpec = existing !== undefined && JSON.stringify(existing.cluster.spec) === JSON.stringify(spec);
  return {
    action: !existing ? "Create" : !changed && sameSpec ? "Unchanged" : "Update",
    connections: plannedConnections(input),
    resources,
    machines,
    ...(existing ? { unchangedMachines: unchanged } : {}),
    quota,
    problems,
    cost,
    estimate: {
      seconds: Math.round(chain.totalMs / 100) / 10,
      basis,
      criticalPath: chain.path.map((s) => ({ step: s.label, seconds: Math.round(s.durationMs / 100) / 10 })),
    },
  };
}
