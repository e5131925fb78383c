// What the fault soak checks at its end, as pure functions of what the API and the sim cloud list:
// whether a cluster's status matches its spec, and which cloud resources are leaked (their cluster or
// their owner is gone) or duplicated (two live resources for one thing, e.g. two instances of one Machine).

const TAG_CLUSTER = "slipway.dev/cluster";
const TAG_CLUSTER_UID = "slipway.dev/cluster-uid";
const TAG_OWNER = "slipway.dev/owner";
const TAG_OWNER_UID = "slipway.dev/owner-uid";
const TAG_ROLE = "slipway.dev/role";
const TAG_ZONE = "slipway.dev/zone";

export interface SoakCluster {
  metadata: { name: string; uid: string; generation?: number; deletionTimestamp?: string };
  spec: {
    kubernetesVersion: string;
    controlPlane: { replicas: number };
    workers?: { name: string; replicas: number }[];
  };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    observedGeneration?: number;
    version?: string;
    controlPlane?: { desired?: number; ready?: number; replicas?: number };
    workers?: { desired?: number; ready?: number; replicas?: number };
    nodes?: { name: string; role: string; ready: boolean; version?: string }[];
  };
}

export const workerCount = (c: SoakCluster) => (c.spec.workers ?? []).reduce((sum, pool) => sum + pool.replicas, 0);

/** Why the cluster's status does not (yet) show its spec, or undefined when it does. */
export function clusterMismatch(c: SoakCluster): string | undefined {
  const s = c.status;
  if (c.metadata.deletionTimestamp) return "being deleted";
  if (!s) return "no status";
  if (s.phase !== "Running") return `phase ${s.phase ?? "none"}${s.reason ? ` (${s.reason})` : ""}`;
  if (s.observedGeneration !== c.metadata.generation) return `status of generation ${s.observedGeneration}, spec is ${c.metadata.generation}`;
  const cp = c.spec.controlPlane.replicas;
  const workers = workerCount(c);
  if (s.controlPlane?.ready !== cp || (s.controlPlane.replicas ?? cp) !== cp) {
    return `control plane ${s.controlPlane?.ready ?? 0} ready of ${s.controlPlane?.replicas ?? 0} machines, spec ${cp}`;
  }
  if ((s.workers?.ready ?? 0) !== workers || (s.workers?.replicas ?? workers) !== workers) {
    return `workers ${s.workers?.ready ?? 0} ready of ${s.workers?.replicas ?? 0} machines, spec ${workers}`;
  }
  if (s.version !== c.spec.kubernetesVersion) return `runs ${s.version ?? "no version"}, spec ${c.spec.kubernetesVersion}`;
  const nodes = s.nodes ?? [];
  if (nodes.length !== cp + workers) return `${nodes.length} nodes, spec ${cp + workers}`;
  const off = nodes.find((n) => !n.ready || n.version !== c.spec.kubernetesVersion);
  if (off) return `node ${off.name} ${off.ready ? `runs ${off.version}` : "not Ready"}`;
  return undefined;
}

export interface SoakResource {
  kind: string;
  id: string;
  state: string;
  tags: Record<string, string>;
  /** A DNS record's name: one owner holds several records, one per name. */
  name?: string;
}

/** States in which a resource no longer exists (or is on its way out with nothing left to do). */
const GONE = new Set(["terminated", "gone", "deleted"]);
/** States a resource passes through on its own: the audit waits for them to settle. */
const PASSING = new Set(["pending", "stopping", "provisioning", "deleting", "shutting-down"]);

export const isLive = (r: SoakResource) => !GONE.has(r.state);

export interface Finding {
  key: string;
  ids: string[];
  why: string;
}

export interface CloudAudit {
  /** Live resources of Slipway's clusters whose cluster or owner no longer exists. */
  leaks: Finding[];
  /** Groups of live resources that stand for one thing. */
  duplicates: Finding[];
  /** Live resources still changing state on their own. */
  settling: SoakResource[];
}

/**
 * Audits the cloud against the objects that exist: `clusters` maps namespace/name to uid, `owners` holds
 * "Kind/name uid" of every object that may own a resource (Infrastructure, Machine, …).
 */
export function auditCloud(resources: readonly SoakResource[], clusters: ReadonlyMap<string, string>, owners: ReadonlySet<string>): CloudAudit {
  const leaks: Finding[] = [];
  const groups = new Map<string, SoakResource[]>();
  const settling: SoakResource[] = [];
  for (const r of resources) {
    const cluster = r.tags[TAG_CLUSTER];
    if (!isLive(r) || cluster === undefined) continue;
    if (PASSING.has(r.state)) settling.push(r);
    const owner = r.tags[TAG_OWNER];
    if (clusters.get(cluster) !== r.tags[TAG_CLUSTER_UID]) {
      leaks.push({ key: `${r.kind} ${r.id}`, ids: [r.id], why: `cluster ${cluster} (uid ${r.tags[TAG_CLUSTER_UID]}) no longer exists` });
      continue;
    }
    if (owner !== undefined && !owners.has(`${owner} ${r.tags[TAG_OWNER_UID]}`)) {
      leaks.push({ key: `${r.kind} ${r.id}`, ids: [r.id], why: `its owner ${owner} (uid ${r.tags[TAG_OWNER_UID]}) no longer exists` });
      continue;
    }
    const key = [r.kind, owner ?? cluster, r.tags[TAG_OWNER_UID] ?? r.tags[TAG_CLUSTER_UID], r.tags[TAG_ROLE] ?? "", r.tags[TAG_ZONE] ?? "", r.name ?? ""].join(" ").trim();
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const duplicates = [...groups]
    .filter(([, rs]) => rs.length > 1)
    .map(([key, rs]) => ({ key, ids: rs.map((r) => r.id), why: `${rs.length} live ${rs[0]!.kind}s for one ${rs[0]!.tags[TAG_OWNER] ?? "cluster"}` }));
  return { leaks, duplicates, settling };
}

/**
 * The running instances a host failure may take without losing a cluster: any worker, and a
 * control-plane machine of a cluster whose control plane has three or more members, all Ready.
 */
export function survivableVictims(resources: readonly SoakResource[], clusters: readonly SoakCluster[]): SoakResource[] {
  const byName = new Map(clusters.map((c) => [`default/${c.metadata.name}`, c]));
  return resources.filter((r) => {
    const cluster = byName.get(r.tags[TAG_CLUSTER] ?? "");
    if (r.kind !== "instance" || r.state !== "running" || !cluster || cluster.metadata.deletionTimestamp) return false;
    if (r.tags[TAG_ROLE] !== "control-plane") return true;
    const cp = cluster.status?.controlPlane;
    return cp !== undefined && (cp.ready ?? 0) >= 3 && cp.ready === cp.replicas;
  });
}
