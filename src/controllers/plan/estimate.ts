// How long building takes, from the clouds' usual durations and the physical critical path — the graph
// Slipway schedules: every machine (control plane too) is made as soon as its connection's network,
// subnet and security group exist, and boots while the load balancer is provisioned; `kubeadm init` ends
// once the load balancer routes to the first control-plane machine (it is active, and the target's health
// checks pass once init's API server serves); control-plane joins go one at a time (etcd takes one learner
// at a time: slipway-join-turn); workers join once the control plane is initialised, a scale set's as
// much as single ones (the pool's join data needs only the cluster's PKI, its pre-generated token and the
// endpoint, so the cloud launches them while the control plane comes up). What exists already takes no time. The estimate is the
// longest chain through that graph; bench:provision times the same graph with the sim cloud's mean
// latencies.
import type { EstimatedOperation } from "../../providers/provider.ts";

export interface BuildStep {
  id: string;
  /** What a person reads, e.g. "boot quickstart-cp-0". */
  label: string;
  durationMs: number;
  after: string[];
}

export interface ChainResult {
  totalMs: number;
  /** The steps of the longest chain, first to last (steps that take no time left out). */
  path: { label: string; durationMs: number }[];
}

/** The earliest finish of every step, and the chain that decides the last one. */
export function longestChain(steps: readonly BuildStep[], last: string): ChainResult {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const finish = new Map<string, number>();
  const cause = new Map<string, string | undefined>();
  const visit = (id: string, trail: Set<string>): number => {
    const known = finish.get(id);
    if (known !== undefined) return known;
    const step = byId.get(id);
    if (!step) throw new Error(`build step ${id} is not defined`);
    if (trail.has(id)) throw new Error(`build steps form a cycle through ${id}`);
    trail.add(id);
    let start = 0;
    let by: string | undefined;
    for (const dep of step.after) {
      const end = visit(dep, trail);
      if (by === undefined || end > start) [start, by] = [end, dep];
    }
    trail.delete(id);
    finish.set(id, start + step.durationMs);
    cause.set(id, by);
    return start + step.durationMs;
  };
  const totalMs = visit(last, new Set());
  const path: { label: string; durationMs: number }[] = [];
  for (let id: string | undefined = last; id !== undefined; id = cause.get(id)) {
    const step = byId.get(id)!;
    if (step.durationMs > 0) path.unshift({ label: step.label, durationMs: step.durationMs });
  }
  return { totalMs, path };
}

export interface PlannedBuild {
  /** Connections by name: their usual durations, and whether their infrastructure exists already. */
  connections: Map<string, { durations: Partial<Record<EstimatedOperation, number>>; built: boolean }>;
  controlPlaneConnection: string;
  /** Control-plane machines in join order; `exists` ones are already joined. */
  controlPlane: { name: string; connection: string; exists: boolean }[];
  /** Workers; `scaleSet` ones are launched by their pool's scale set, on the same rule as single ones. */
  workers: { name: string; connection: string; exists: boolean; scaleSet?: boolean }[];
}

/** The graph of a build: what the physical rule above lets run side by side, and what waits on what. */
export function buildSteps(build: PlannedBuild): { steps: BuildStep[]; last: string } {
  const steps: BuildStep[] = [];
  const add = (id: string, label: string, durationMs: number, after: string[] = []) => steps.push({ id, label, durationMs, after });
  const duration = (connection: string, op: EstimatedOperation, done = false) => (done ? 0 : (build.connections.get(connection)?.durations[op] ?? 0));
  for (const [name, c] of build.connections) {
    add(`network/${name}`, `network ${name}`, duration(name, "networkCreate", c.built));
    add(`subnet/${name}`, `subnet ${name}`, duration(name, "subnetCreate", c.built), [`network/${name}`]);
    add(`securityGroup/${name}`, `security group ${name}`, duration(name, "securityGroupCreate", c.built), [`network/${name}`]);
    add(`placement/${name}`, `placement ${name}`, 0, [`subnet/${name}`, `securityGroup/${name}`]);
  }
  const cpConnection = build.controlPlaneConnection;
  const cpBuilt = build.connections.get(cpConnection)?.built ?? false;
  add("loadBalancer", `load balancer ${cpConnection}`, duration(cpConnection, "loadBalancerProvision", cpBuilt), [`subnet/${cpConnection}`]);
  const boot = (m: { name: string; connection: string; exists: boolean }, after: string[] = []) => {
    add(`boot/${m.name}`, `boot ${m.name}`, m.exists ? 0 : duration(m.connection, "instanceBoot"), [`placement/${m.connection}`, ...after]);
    return `boot/${m.name}`;
  };
  const [first, ...joining] = build.controlPlane;
  if (!first) throw new Error("a cluster has at least one control-plane machine");
  const firstBoot = boot(first);
  add("kubeadmInit", `kubeadm init ${first.name}`, first.exists ? 0 : duration(cpConnection, "kubeadmInit"), [firstBoot]);
  // The target's health checks pass once init's API server serves; the load balancer routes once active too.
  add("routes", `load balancer routes to ${first.name}`, first.exists ? 0 : duration(cpConnection, "targetHealthy"), ["kubeadmInit"]);
  add("initialized", "control plane initialised", 0, ["loadBalancer", "routes"]);
  let previous = "initialized";
  for (const m of joining) {
    const id = `join/${m.name}`;
    add(id, `join ${m.name}`, m.exists ? 0 : duration(m.connection, "kubeadmJoin"), [previous, boot(m)]);
    previous = id;
  }
  const ends = [previous];
  for (const m of build.workers) {
    const id = `join/${m.name}`;
    add(id, `join ${m.name}`, m.exists ? 0 : duration(m.connection, "kubeadmJoin"), ["initialized", boot(m)]);
    ends.push(id);
  }
  add("running", "Running", 0, ends);
  return { steps, last: "running" };
}

/** Expected time until the build is done, and its critical path. */
export function estimateBuild(build: PlannedBuild): ChainResult {
  const { steps, last } = buildSteps(build);
  return longestChain(steps, last);
}
