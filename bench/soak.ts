// The fault soak: for a fixed time, clusters are created, scaled, upgraded and deleted while the sim cloud
// fails 10 % of its calls (internal errors and throttling), instances are killed as host failures would,
// and `slipway up` is killed with SIGKILL and started again on the same data directory at random moments.
// Then the faults stop, and the run waits until every cluster matches its spec and the cloud holds
// exactly what the remaining objects own: nothing leaked, nothing duplicated. Every random choice comes
// from --seed, so a run that finds a fault can be replayed (the processes' own timing still varies).
//
//   npm run bench:soak [-- --minutes 10 --clusters 4 --seed 1 --profile fast --time-scale 1]
//                         [--action-every 4 --restart-every 45 --kill-every 20 --converge-timeout 10]
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import { Prng } from "../src/simcloud/random.ts";
import type { FaultConfig } from "../src/simcloud/faults.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "../test/support/simcloud.ts";
import { freePort, startSlipway, type RunningSlipway } from "../test/support/slipway.ts";
import { BenchClient, UnexpectedStatusError } from "./support/client.ts";
import { onTeardown, removeOnTeardown, runBenchmark } from "./support/processes.ts";
import { describeMachine, fixed, formatMachine, formatTable } from "./support/report.ts";
import { auditCloud, clusterMismatch, isLive, survivableVictims, type CloudAudit, type SoakCluster, type SoakResource } from "./support/soak-check.ts";

const GROUP = "/apis/slipway.dev/v1alpha1/namespaces/default";
const CLUSTERS = `${GROUP}/clusters`;
const REGIONS = [
  { connection: "soak-east", region: "sim-east-1" },
  { connection: "soak-west", region: "sim-west-1" },
];
const CONTROL_PLANE_TYPE = "s1.medium";
const WORKER_TYPE = "s1.small";
const PLENTY = 100_000;
/** Kinds whose objects own cloud resources (the owner tag names them), with their collections. */
const OWNER_KINDS = [["Cluster", "clusters"], ["Infrastructure", "infrastructures"], ["Machine", "machines"], ["MachinePool", "machinepools"]] as const;
const MAX_MINOR = 32;
const MAX_POOL = 4;

/**
 * The faults of the soak: 10 % of every cloud call fails, half with an internal error (half of those after
 * the change took effect), half throttled. Instances are killed by the benchmark instead of the cloud's
 * random deaths, so that no kill takes a cluster's only control-plane machine or its etcd quorum: no
 * controller can bring that back (the cluster's state is gone with it).
 */
export const SOAK_FAULTS: FaultConfig = {
  errors: { "*": { InternalError: 0.05, Throttling: 0.05 } },
  retryAfterMs: 1000,
};

interface Plan {
  seed: number;
  minutes: number;
  clusters: number;
  profile: string;
  timeScale: number;
  actionEveryS: number;
  restartEveryS: number;
  killEveryS: number;
  convergeTimeoutMin: number;
}

function readPlan(argv: string[]): Plan {
  const number = (name: string, fallback: number, min = 0): number => {
    const i = argv.indexOf(`--${name}`);
    if (i < 0) return fallback;
    const n = Number(argv[i + 1]);
    if (!Number.isFinite(n) || n <= min) throw new Error(`--${name} must be a number above ${min} (got "${argv[i + 1]}")`);
    return n;
  };
  const profileAt = argv.indexOf("--profile");
  return {
    seed: Math.trunc(number("seed", 1, -1)),
    minutes: number("minutes", 10),
    clusters: Math.trunc(number("clusters", 4)),
    profile: profileAt >= 0 ? argv[profileAt + 1]! : "fast",
    timeScale: number("time-scale", 1),
    actionEveryS: number("action-every", 4),
    restartEveryS: number("restart-every", 45),
    killEveryS: number("kill-every", 20),
    convergeTimeoutMin: number("converge-timeout", 10),
  };
}

const progress = (message: string) => process.stderr.write(`bench:soak: ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => `${fixed(ms / 1000, 1)} s`;

type OpKind = "create" | "scale up" | "scale down" | "upgrade" | "delete";
const OP_KINDS: OpKind[] = ["create", "scale up", "scale down", "upgrade", "delete"];

/** What the benchmark asked of one cluster, and the operation it waits to see finished. */
interface Wanted {
  name: string;
  connection: string;
  controlPlane: number;
  pool: number;
  minor: number;
  deleted: boolean;
  /** The cluster's uid, once created. */
  uid?: string;
  pending?: { kind: OpKind; since: number };
}

const versionOf = (minor: number) => `v1.${minor}.${minor % 7}`;

function clusterBody(w: Wanted): unknown {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: w.name },
    spec: {
      kubernetesVersion: versionOf(w.minor),
      controlPlane: { connection: w.connection, machineType: CONTROL_PLANE_TYPE, replicas: w.controlPlane },
      workers: [{ name: "pool", connection: w.connection, machineType: WORKER_TYPE, replicas: w.pool }],
    },
  };
}

/** `slipway up` on one data directory and port, killed and started again at will. */
class Plane {
  private running?: RunningSlipway;
  api!: BenchClient;
  restarts = 0;
  readonly dataDir: string;

  constructor(
    root: string,
    private readonly port: number,
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.dataDir = join(root, "slipway");
  }

  async start(): Promise<void> {
    this.running = await startSlipway({ dataDir: this.dataDir, port: this.port, args: this.args, env: this.env, timeoutMs: 120_000 });
    const kubeconfig = parseKubeconfig(readFileSync(this.running.kubeconfig, "utf8"));
    this.api?.close();
    this.api = new BenchClient({ server: kubeconfig.server, caCertPem: kubeconfig.caCertPem, token: kubeconfig.token }, 4);
  }

  /** SIGKILL, as a crash or an OOM kill would, then the same command again. */
  async crashAndRestart(): Promise<void> {
    await this.running?.stop("SIGKILL");
    this.restarts++;
    await this.start();
  }

  async stop(): Promise<void> {
    this.api?.close();
    await this.running?.stop("SIGTERM");
  }
}

/** Retries what a retry may cure (the sim cloud's own faults on the benchmark's calls, a busy server). */
async function retried<T>(what: string, call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const status = error instanceof UnexpectedStatusError ? error.status : 0;
      if ((status !== 0 && status !== 429 && status < 500) || attempt >= 10) throw new Error(`${what}: ${(error as Error).message}`);
      await sleep(200 * attempt);
    }
  }
}

async function main(): Promise<void> {
  const plan = readPlan(process.argv.slice(2));
  const machine = describeMachine();
  const root = mkdtempSync(join(tmpdir(), "slipway-soak-"));
  removeOnTeardown(root);
  const rng = new Prng(plan.seed, 7);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rng.next() * items.length)]!;
  const jitter = (meanS: number) => meanS * 1000 * rng.between(0.5, 1.5);

  progress(`seed ${plan.seed}, ${plan.minutes} min, up to ${plan.clusters} clusters, profile ${plan.profile} × ${plan.timeScale}`);
  // A busy machine may take longer to start the sim cloud than the helper waits: try again.
  let sim: RunningSimCloud | undefined;
  for (let attempt = 1; !sim; attempt++) {
    sim = await startSimCloud({ profile: plan.profile, timeScale: plan.timeScale, seed: plan.seed, state: join(root, `sim-${attempt}.db`) }).catch((error: unknown) => {
      if (attempt >= 3) throw error;
      progress(`the sim cloud did not start (attempt ${attempt}), trying again`);
      return undefined;
    });
  }
  onTeardown(() => sim.stop());
  for (const { region } of REGIONS) {
    await sim.admin.setQuota("default", region, { vcpus: PLENTY, instances: PLENTY, networks: PLENTY, loadBalancers: PLENTY, publicIps: PLENTY });
  }
  const plane = new Plane(
    root,
    await freePort(),
    ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "250ms", "--orphan-sweep-interval", "10s", "--orphan-grace", "30s"],
    { SLIPWAY_ENCRYPTION_KEY: Buffer.alloc(32, plan.seed & 0xff).toString("base64") },
  );
  await plane.start();
  onTeardown(() => plane.stop());
  const keepLog = () => {
    const log = join(plane.dataDir, "slipway.log");
    const kept = join(tmpdir(), `slipway-soak-seed-${plan.seed}.log`);
    if (existsSync(log)) copyFileSync(log, kept);
    progress(`slipway.log kept as ${kept}`);
  };
  for (const { connection, region } of REGIONS) {
    await plane.api.send("POST", `${GROUP}/connections`, { body: { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: connection }, spec: { provider: "sim", region } }, expect: [201] });
  }

  // ---- what the benchmark asked for, and what it saw ----
  const wanted = new Map<string, Wanted>();
  const samples = new Map<string, number[]>();
  const counts = new Map<string, number>();
  const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  const sample = (key: string, ms: number) => samples.set(key, [...(samples.get(key) ?? []), ms]);
  const failures: string[] = [];
  let clustersSeen: SoakCluster[] = [];
  let cloudSeen: SoakResource[] = [];
  let instancesKilled = 0;
  let polling = true;

  const opKey = (kind: OpKind, w: Wanted) => `${kind}, ${w.controlPlane} cp`;

  /** One look at the API and the cloud: records operations whose effect is complete. */
  const observe = async (): Promise<void> => {
    const list = await plane.api.json<{ items: SoakCluster[] }>("GET", CLUSTERS);
    clustersSeen = list.items;
    cloudSeen = (await sim.api.listResources()) as unknown as SoakResource[];
    const byName = new Map(clustersSeen.map((c) => [c.metadata.name, c]));
    const now = performance.now();
    for (const w of wanted.values()) {
      const seen = byName.get(w.name);
      if (seen && !w.uid) w.uid = seen.metadata.uid;
      if (!w.pending) continue;
      const done = w.deleted
        ? !seen && !cloudSeen.some((r) => isLive(r) && r.tags["slipway.dev/cluster-uid"] === w.uid)
        : seen !== undefined && clusterMismatch(seen) === undefined && seen.spec.kubernetesVersion === versionOf(w.minor);
      if (done) {
        sample(opKey(w.pending.kind, w), now - w.pending.since);
        w.pending = undefined;
      }
    }
  };
  const poller = (async () => {
    while (polling) {
      await observe().catch(() => undefined); // `slipway up` may be down for a moment
      await sleep(500);
    }
  })();
  onTeardown(async () => {
    polling = false;
    await poller;
  });

  /** Sends one change for `w` and marks the operation pending (an earlier one still pending is superseded). */
  const act = async (kind: OpKind, w: Wanted): Promise<boolean> => {
    const previous = w.pending;
    try {
      if (kind === "create") {
        await retried(`create ${w.name}`, () => plane.api.send("POST", CLUSTERS, { body: clusterBody(w), expect: [201, 409] }));
      } else if (kind === "delete") {
        await retried(`delete ${w.name}`, () => plane.api.send("DELETE", `${CLUSTERS}/${w.name}`, { expect: [200, 202, 404] }));
      } else {
        const spec = (clusterBody(w) as { spec: unknown }).spec;
        await retried(`${kind} ${w.name}`, () =>
          plane.api.send("PATCH", `${CLUSTERS}/${w.name}`, { body: { spec }, contentType: "application/merge-patch+json" }),
        );
      }
    } catch (error) {
      failures.push(`${kind} ${w.name}: ${(error as Error).message}`);
      return false;
    }
    count(kind);
    if (previous) count("superseded");
    w.pending = { kind, since: performance.now() };
    return true;
  };

  const waitSettled = async (names: string[], timeoutMs: number, what: string): Promise<void> => {
    const deadline = performance.now() + timeoutMs;
    while (names.some((n) => wanted.get(n)!.pending)) {
      if (performance.now() > deadline) throw new Error(`${what}: not done after ${seconds(timeoutMs)}`);
      await sleep(200);
    }
  };

  // ---- fault-free baseline: every kind of operation on one cluster per control-plane size ----
  progress("fault-free baseline");
  for (const cp of [1, 3]) {
    const w: Wanted = { name: `baseline-${cp}`, connection: REGIONS[0]!.connection, controlPlane: cp, pool: 2, minor: 30, deleted: false };
    wanted.set(w.name, w);
    const steps: [OpKind, () => void][] = [
      ["create", () => {}],
      ["scale up", () => w.pool++],
      ["scale down", () => w.pool--],
      ["upgrade", () => w.minor++],
      ["delete", () => (w.deleted = true)],
    ];
    for (const [kind, change] of steps) {
      change();
      if (!(await act(kind, w))) throw new Error(`baseline ${kind} failed: ${failures.at(-1)}`);
      await waitSettled([w.name], 5 * 60_000, `baseline ${kind} of ${w.name}`);
    }
    wanted.delete(w.name);
  }
  const baseline = new Map([...samples].map(([key, values]) => [key, values[0]!]));
  samples.clear();
  counts.clear();
  progress(`baseline: ${[...baseline].map(([k, v]) => `${k} ${seconds(v)}`).join("; ")}`);

  // ---- the soak ----
  const faultsBefore = await sim.admin.getFaultCounts();
  await sim.admin.setFaults(SOAK_FAULTS);
  const soakStart = performance.now();
  const soakEnd = soakStart + plan.minutes * 60_000;
  let nextRestart = soakStart + jitter(plan.restartEveryS);
  let nextKill = soakStart + jitter(plan.killEveryS);
  let created = 0;
  let lastReport = soakStart;
  progress(`faults on: ${JSON.stringify(SOAK_FAULTS)}`);
  while (performance.now() < soakEnd) {
    await sleep(jitter(plan.actionEveryS));
    const now = performance.now();
    if (now >= soakEnd) break;
    if (now - lastReport > 20_000) {
      lastReport = now;
      const phases = clustersSeen.map((c) => `${c.metadata.name} ${c.metadata.deletionTimestamp ? "Deleting" : (c.status?.phase ?? "-")}${c.status?.reason ? ` (${c.status.reason})` : ""}`).join(", ");
      progress(`[${fixed((now - soakStart) / 1000, 0)} s] ${[...counts].map(([k, v]) => `${k} ${v}`).join(", ")}; restarts ${plane.restarts}; killed ${instancesKilled}; ${phases}`);
    }
    if (now >= nextRestart) {
      nextRestart = now + jitter(plan.restartEveryS);
      progress(`kill -9 slipway up (restart ${plane.restarts + 1})`);
      await plane.crashAndRestart();
      continue;
    }
    if (now >= nextKill) {
      nextKill = now + jitter(plan.killEveryS);
      const instances = survivableVictims(cloudSeen, clustersSeen);
      if (instances.length > 0) {
        const victim = pick(instances);
        await sim.admin.killInstance(victim.id, "killed by the soak").then(
          () => void instancesKilled++,
          () => undefined,
        );
      }
      continue;
    }
    const alive = [...wanted.values()].filter((w) => !w.deleted);
    // Mostly clusters that finished what they were last asked; now and then one still busy (a scale in
    // the middle of a create or an upgrade). Upgrades wait: a cluster moves one minor version at a time.
    const anyBusy = rng.chance(0.25);
    const settled = alive.filter((w) => !w.pending);
    const scalable = anyBusy ? alive : settled;
    const choices: OpKind[] = [];
    if (alive.length < plan.clusters) choices.push("create", "create");
    if (scalable.some((w) => w.pool < MAX_POOL)) choices.push("scale up", "scale up");
    if (scalable.some((w) => w.pool > 1)) choices.push("scale down", "scale down");
    if (settled.some((w) => w.minor < MAX_MINOR)) choices.push("upgrade");
    if (alive.length > 0 && alive.length >= plan.clusters / 2) choices.push("delete");
    if (choices.length === 0) continue;
    const kind = pick(choices);
    let w: Wanted;
    if (kind === "create") {
      w = { name: `soak-${String(++created).padStart(3, "0")}`, connection: pick(REGIONS).connection, controlPlane: pick([1, 1, 3]), pool: 1 + Math.floor(rng.next() * 3), minor: 28 + Math.floor(rng.next() * 4), deleted: false };
      wanted.set(w.name, w);
    } else if (kind === "delete") {
      // Any cluster, also one still being built or changed.
      w = pick(alive);
      w.deleted = true;
    } else {
      const fits = (kind === "upgrade" ? settled : scalable).filter((c) => (kind === "scale up" ? c.pool < MAX_POOL : kind === "scale down" ? c.pool > 1 : c.minor < MAX_MINOR));
      w = pick(fits);
      if (kind === "scale up") w.pool++;
      else if (kind === "scale down") w.pool--;
      else w.minor++;
    }
    await act(kind, w);
  }

  // ---- faults off; wait for convergence ----
  await sim.admin.setFaults({});
  const calmAt = performance.now();
  const faultsAfter = await sim.admin.getFaultCounts();
  const injected = (key: keyof typeof faultsAfter) => faultsAfter[key] - faultsBefore[key];
  progress(`faults off after ${seconds(calmAt - soakStart)}; waiting for convergence`);
  const ownersOf = async (): Promise<Set<string>> => {
    const owners = new Set<string>();
    for (const [kind, plural] of OWNER_KINDS) {
      const list = await plane.api.json<{ items: { metadata: { name: string; uid: string } }[] }>("GET", `${GROUP}/${plural}`);
      for (const o of list.items) owners.add(`${kind}/${o.metadata.name} ${o.metadata.uid}`);
    }
    return owners;
  };
  const audit = async (): Promise<{ cloud: CloudAudit; unconverged: string[] }> => {
    await observe();
    const clusters = new Map(clustersSeen.map((c) => [`default/${c.metadata.name}`, c.metadata.uid]));
    const cloud = auditCloud(cloudSeen, clusters, await ownersOf());
    const unconverged: string[] = [];
    for (const w of wanted.values()) {
      const seen = clustersSeen.find((c) => c.metadata.name === w.name);
      if (w.deleted) {
        if (seen) unconverged.push(`${w.name}: still exists (${seen.status?.phase ?? "-"}${seen.status?.reason ? `, ${seen.status.reason}: ${seen.status.message}` : ""})`);
      } else if (!seen) unconverged.push(`${w.name}: missing`);
      else {
        const why = clusterMismatch(seen) ?? (seen.spec.kubernetesVersion !== versionOf(w.minor) ? `spec says ${seen.spec.kubernetesVersion}` : undefined);
        if (why) unconverged.push(`${w.name}: ${why}${seen.status?.reason ? ` — ${seen.status.reason}: ${seen.status.message ?? ""}` : ""}`);
      }
    }
    return { cloud, unconverged };
  };
  const deadline = calmAt + plan.convergeTimeoutMin * 60_000;
  let result = await retried("audit", audit);
  let lastShown = performance.now();
  while (result.unconverged.length + result.cloud.leaks.length + result.cloud.duplicates.length + result.cloud.settling.length > 0 && performance.now() < deadline) {
    if (performance.now() - lastShown > 15_000) {
      lastShown = performance.now();
      progress(`[${seconds(lastShown - calmAt)} after faults off] ${[...result.unconverged, ...result.cloud.leaks.map((l) => `leak ${l.key}`), ...result.cloud.duplicates.map((d) => `duplicate ${d.key}`), ...result.cloud.settling.map((r) => `${r.kind} ${r.id} ${r.state}`)].join("; ")}`);
    }
    await sleep(500);
    result = await retried("audit", audit);
  }
  const convergedAt = performance.now();
  const converged = result.unconverged.length === 0 && result.cloud.settling.length === 0;
  polling = false;
  await poller;

  // ---- the report ----
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const keys = [...new Set([...samples.keys(), ...baseline.keys()])].sort((a, b) => OP_KINDS.indexOf(a.split(",")[0] as OpKind) - OP_KINDS.indexOf(b.split(",")[0] as OpKind) || a.localeCompare(b));
  const opRows = keys.map((key) => {
    const values = samples.get(key) ?? [];
    const base = baseline.get(key);
    const mid = values.length ? median(values) : Number.NaN;
    return [key, String(values.length), values.length ? seconds(mid) : "-", values.length ? seconds(Math.max(...values)) : "-", base !== undefined ? seconds(base) : "-", values.length && base ? `${fixed(mid / base, 2)}×` : "-"];
  });
  const createBase = baseline.get("create, 1 cp")!;
  const convergeMs = convergedAt - calmAt;
  const leaks = result.cloud.leaks.length;
  const duplicates = result.cloud.duplicates.length;
  const live = [...wanted.values()].filter((w) => !w.deleted);
  const rows = [
    ["measure", "value"],
    ["soak", `${seconds(soakEnd - soakStart)}, seed ${plan.seed}, at most ${plan.clusters} clusters`],
    ["operations sent", `${[...counts].filter(([k]) => OP_KINDS.includes(k as OpKind)).reduce((s, [, v]) => s + v, 0)} (${OP_KINDS.map((k) => `${k} ${counts.get(k) ?? 0}`).join(", ")})`],
    ["operations sent before the previous one finished", String(counts.get("superseded") ?? 0)],
    ["operations the API did not take", String(failures.length)],
    ["slipway up killed (SIGKILL) and restarted", String(plane.restarts)],
    ["cloud errors injected", `${injected("InternalError") + injected("Throttling")} (InternalError ${injected("InternalError")}, ${injected("afterCommit")} of them after the change; Throttling ${injected("Throttling")})`],
    ["instances killed by the benchmark", String(instancesKilled)],
    ["clusters at the end (deleted during the soak)", `${live.length} (${wanted.size - live.length})`],
    ["converged after the faults stopped", converged ? seconds(convergeMs) : `not within ${plan.convergeTimeoutMin} min`],
    ["… ÷ fault-free create of a 1-cp cluster", converged ? `${fixed(convergeMs / createBase, 2)}×` : "-"],
    ["leaked cloud resources", String(leaks)],
    ["duplicated cloud resources", String(duplicates)],
  ];
  const output = [
    "",
    `slipway fault soak: sim cloud '${plan.profile}' × ${plan.timeScale}, ${plan.minutes} min, seed ${plan.seed}`,
    formatMachine(machine),
    "",
    formatTable(rows),
    "cloud faults during the soak: 10 % of calls fail (5 % InternalError, on calls that change something half of them",
    "after the change took effect; 5 % Throttling); instances killed as a host failure would (workers, and control-plane machines of clusters with",
    "three or more, all Ready); faults then off until everything converged.",
    "",
    "time from an operation until the cluster matched it (delete: until the cluster and its cloud resources were gone),",
    "during the soak and without faults (the baseline, one run before the soak):",
    formatTable([["operation", "done", "median", "worst", "fault-free", "median ÷ fault-free"], ...opRows]),
  ];
  for (const line of result.unconverged) output.push(`NOT CONVERGED ${line}`);
  for (const l of result.cloud.leaks) output.push(`LEAK ${l.key}: ${l.why}`);
  for (const d of result.cloud.duplicates) output.push(`DUPLICATE ${d.key}: ${d.ids.join(", ")} (${d.why})`);
  for (const r of result.cloud.settling) output.push(`NOT SETTLED ${r.kind} ${r.id} ${r.state}`);
  for (const f of failures) output.push(`API REFUSED ${f}`);
  process.stdout.write(output.join("\n") + "\n");
  if (!converged || leaks > 0 || duplicates > 0) {
    keepLog();
    process.exitCode = 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const plan = readPlan(process.argv.slice(2));
  runBenchmark(main, (plan.minutes + plan.convergeTimeoutMin + 15) * 60_000);
}
