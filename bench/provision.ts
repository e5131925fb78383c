// How close Slipway gets to the critical path when it builds the quickstart cluster.
//
// A sim cloud (its own process, `realistic` latencies, time-scaled so the run is short) and `slipway up`
// against it; `examples/quickstart.yaml` is applied and the time to phase Running measured. Next to it:
// - the physical critical path under the same (mean) latencies: what no scheduler can beat, whatever
//   graph it chooses — every machine created as soon as its connection's network exists, `kubeadm init`
//   waiting only for the load balancer to route, control-plane joins one at a time (etcd), worker joins
//   only for init. It is the graph Slipway schedules, and `slipway plan`'s (estimate.ts);
// - a strictly sequential flow, each resource and each machine one after another, as CB-Ladybug's
//   bootstrap loop does;
// - Terraform (if `terraform` is on the PATH) running the physical graph with its default parallelism of
//   10, each resource a `terraform_data` whose creation takes the step's mean latency.
// Then the Running cluster is upgraded one minor version (spec.kubernetesVersion) and the time until its
// Upgrade operation succeeds is measured next to the critical path of the upgrade. Last, a cluster of
// `--large` machines (3 control-plane, the workers in two pools in two regions) is built the same way.
// Usage: npm run bench:provision [-- --time-scale 0.2 --runs 3 --large 100]
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { buildSteps } from "../src/controllers/plan/estimate.ts";
import { PROFILES, type DelayRange, type LatencyProfile } from "../src/simcloud/profiles.ts";
import { eventually, kubectl, removeDir, REPO, startSlipway } from "../test/support/slipway.ts";
import { SIM_TOKEN, startSimCloud } from "../test/support/simcloud.ts";
import { describeMachine, formatMachine, formatTable } from "./support/report.ts";

interface Shape {
  controlPlane: { connection: string; replicas: number };
  workers: { connection: string; replicas: number; scaleSet?: { maxSize?: number } }[];
}

const mean = (r: DelayRange) => (r[0] + r[1]) / 2;
/** The version the quickstart cluster (v1.31.2) is upgraded to. */
const UPGRADE_TO = "v1.32.9";

/**
 * The critical path of an upgrade: the control plane one machine at a time — a new one boots, joins and
 * turns Ready, then the old one leaves etcd and the load balancer and the next can start (etcd changes by
 * one member at a time) — and the last old one gone (terminated) before any worker moves (kubelets never
 * newer than an API server); then the pools in parallel, each rolled with surge 1 and none unavailable: a
 * new machine Ready, then the old one drained and terminated (its instance counts against the surge
 * until it is gone) before the next.
 */
export function upgradeCriticalPath(p: LatencyProfile, shape: Shape): number {
  const ready = mean(p.instanceBoot) + mean(p.kubeadmJoin) + mean(p.kubeadmJoin) / 2;
  const terminate = mean(p.instanceTerminate);
  const controlPlane = shape.controlPlane.replicas * ready + terminate;
  const pools = Math.max(0, ...shape.workers.map((w) => w.replicas * (ready + terminate)));
  return controlPlane + pools;
}

/**
 * Finishing time (ms) of the last node Ready under the physical rule, which is the graph Slipway
 * schedules: every machine is created as soon as its connection's network, subnet and security group
 * exist, and boots while the load balancer is provisioned; `kubeadm init` ends once the load balancer
 * routes to its API server (the load balancer active and the target's health checks passed); each
 * control-plane join waits for the previous one (etcd takes one learner at a time), worker joins only for
 * init.
 */
export function physicalCriticalPath(p: LatencyProfile, shape: Shape): number {
  return physicalSteps(p, shape).reduce((end, s) => Math.max(end, s.end), 0);
}

interface Step {
  name: string;
  after: string[];
  ms: number;
  end: number;
}

/**
 * The physical graph's steps, each with what it waits for, its mean duration and its finishing time:
 * `slipway plan`'s graph (src/controllers/plan/estimate.ts) under the profile's mean latencies, and last
 * the network plugin starting on the last node joined (half a join, as the sim cloud times it), which
 * turns it Ready.
 */
export function physicalSteps(p: LatencyProfile, shape: Shape): Step[] {
  const durations = Object.fromEntries(
    (["networkCreate", "subnetCreate", "securityGroupCreate", "loadBalancerProvision", "targetHealthy", "instanceBoot", "kubeadmInit", "kubeadmJoin"] as const).map((op) => [op, mean(p[op])]),
  );
  const connections = [...new Set([shape.controlPlane.connection, ...shape.workers.filter((w) => w.replicas > 0).map((w) => w.connection)])];
  const machines = (prefix: string, connection: string, n: number, scaleSet = false) => Array.from({ length: n }, (_, k) => ({ name: `${prefix}${k}`, connection, exists: false, scaleSet }));
  const { steps, last } = buildSteps({
    connections: new Map(connections.map((c) => [c, { durations, built: false }])),
    controlPlaneConnection: shape.controlPlane.connection,
    controlPlane: machines("cp", shape.controlPlane.connection, shape.controlPlane.replicas),
    workers: shape.workers.flatMap((w, i) => machines(`w${i}_`, w.connection, w.replicas, w.scaleSet !== undefined)),
  });
  const graph = [...steps, { id: "ready", label: "last node Ready", durationMs: mean(p.kubeadmJoin) / 2, after: [last] }];
  const id = (s: string) => s.replace(/[^A-Za-z0-9_]/g, "_");
  const ends = new Map<string, number>();
  const end = (s: string): number => {
    const known = ends.get(s);
    if (known !== undefined) return known;
    const step = graph.find((g) => g.id === s)!;
    const value = Math.max(0, ...step.after.map(end)) + step.durationMs;
    ends.set(s, value);
    return value;
  };
  return graph.map((s) => ({ name: id(s.id), after: s.after.map(id), ms: s.durationMs, end: end(s.id) }));
}

/**
 * Terraform's time (ms) on the physical graph: one `terraform_data` per step whose creation sleeps the
 * step's (scaled) mean latency, applied with Terraform's default parallelism of 10. Undefined when
 * `terraform` is not on the PATH.
 */
export function terraformTime(p: LatencyProfile, shape: Shape, timeScale: number): number | undefined {
  if (spawnSync("terraform", ["version"], { encoding: "utf8" }).status !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), "slipway-bench-tf-"));
  try {
    const blocks = physicalSteps(p, shape).map((s) => {
      const deps = s.after.length === 0 ? "" : `  depends_on = [${s.after.map((a) => `terraform_data.${a}`).join(", ")}]\n`;
      const sleep = s.ms === 0 ? "" : `  provisioner "local-exec" {\n    command = "sleep ${((s.ms * timeScale) / 1000).toFixed(3)}"\n  }\n`;
      return `resource "terraform_data" "${s.name}" {\n${deps}${sleep}}\n`;
    });
    writeFileSync(join(dir, "main.tf"), blocks.join("\n"));
    const env = { ...process.env, TF_IN_AUTOMATION: "1", TF_CLI_CONFIG_FILE: "/dev/null", TF_DATA_DIR: join(dir, ".terraform") };
    const init = spawnSync("terraform", ["init", "-input=false"], { cwd: dir, env, encoding: "utf8" });
    if (init.status !== 0) throw new Error(`terraform init: ${init.stderr}`);
    const started = performance.now();
    const apply = spawnSync("terraform", ["apply", "-auto-approve", "-input=false", "-parallelism=10"], { cwd: dir, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    if (apply.status !== 0) throw new Error(`terraform apply: ${apply.stderr}`);
    return performance.now() - started;
  } finally {
    removeDir(dir);
  }
}

/** Every resource and every machine one after another. */
export function sequentialFlow(p: LatencyProfile, shape: Shape): number {
  const connections = new Set([shape.controlPlane.connection, ...shape.workers.map((w) => w.connection)]);
  let total = 0;
  for (const c of connections) total += mean(p.networkCreate) + mean(p.subnetCreate) + mean(p.securityGroupCreate) + (c === shape.controlPlane.connection ? mean(p.loadBalancerProvision) : 0);
  const machines = shape.controlPlane.replicas + shape.workers.reduce((s, w) => s + w.replicas, 0);
  total += machines * mean(p.instanceBoot) + mean(p.kubeadmInit) + mean(p.targetHealthy) + (machines - 1) * mean(p.kubeadmJoin) + mean(p.kubeadmJoin) / 2;
  return total;
}

function quickstartShape(): Shape {
  const docs = readFileSync(join(REPO, "examples/quickstart.yaml"), "utf8").split(/^---$/m).map((d) => parse(d) as { kind: string; spec: Shape });
  const cluster = docs.find((d) => d.kind === "Cluster")!;
  return { controlPlane: cluster.spec.controlPlane, workers: cluster.spec.workers };
}

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

/** A cluster of `machines` machines: 3 control-plane, the workers in two pools in the quickstart's two regions (on scale sets where its pools are). */
function largeShape(machines: number, quickstart: Shape): Shape {
  const workers = machines - 3;
  const scaleSet = (i: number) => (quickstart.workers[i]?.scaleSet ? { scaleSet: quickstart.workers[i].scaleSet } : {});
  return {
    controlPlane: { connection: "sim-east", replicas: 3 },
    workers: [
      { connection: "sim-east", replicas: Math.ceil(workers / 2), ...scaleSet(0) },
      { connection: "sim-west", replicas: Math.floor(workers / 2), ...scaleSet(1) },
    ],
  };
}

function largeManifest(shape: Shape): string {
  const quickstart = readFileSync(join(REPO, "examples/quickstart.yaml"), "utf8");
  return quickstart
    .replace("name: quickstart", "name: large")
    .replace(/replicas: 3\n/, `replicas: ${shape.controlPlane.replicas}\n`)
    .replace(/(name: east[\s\S]*?replicas: )2/, `$1${shape.workers[0]!.replicas}`)
    .replace(/(name: west[\s\S]*?replicas: )2/, `$1${shape.workers[1]!.replicas}`)
    .replace(/maxSize: \d+/g, (limit) => `maxSize: ${Math.max(Number(limit.slice("maxSize: ".length)), ...shape.workers.map((w) => w.replicas))}`);
}

/** Applies a manifest and waits for its cluster to be Running: the time it took (ms). */
async function timeToRunning(kubeconfig: string, file: string, cluster: string): Promise<number> {
  const started = performance.now();
  const applied = kubectl(kubeconfig, ["apply", "-f", file]);
  if (applied.status !== 0) throw new Error(applied.stderr);
  await eventually(
    () => {
      const phase = kubectl(kubeconfig, ["get", "cluster", cluster, "-o", "jsonpath={.status.phase}"]).stdout;
      if (phase === "Failed") throw new Error(`the ${cluster} cluster failed`);
      return phase === "Running";
    },
    { timeoutMs: 900_000, intervalMs: 50, what: `the ${cluster} cluster to be Running` },
  );
  return performance.now() - started;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const timeScale = flag("time-scale", 0.2);
  const runs = flag("runs", 3);
  const large = flag("large", 100);
  const profile = PROFILES.realistic;
  const shape = quickstartShape();
  const bigShape = largeShape(large, shape);
  const physical = physicalCriticalPath(profile, shape) * timeScale;
  const bigPhysical = physicalCriticalPath(profile, bigShape) * timeScale;
  const sequential = sequentialFlow(profile, shape) * timeScale;
  const upgradeCritical = upgradeCriticalPath(profile, shape) * timeScale;
  const scratch = mkdtempSync(join(tmpdir(), "slipway-bench-provision-"));
  const bigFile = join(scratch, "large.yaml");
  writeFileSync(bigFile, largeManifest(bigShape));
  const results: number[] = [];
  const upgrades: number[] = [];
  const bigResults: number[] = [];
  try {
    for (let run = 0; run < runs; run++) {
      const sim = await startSimCloud({ profile: "realistic", timeScale, seed: 100 + run });
      const plane = await startSlipway({ args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "100ms"] });
      try {
        const took = await timeToRunning(plane.kubeconfig, join(REPO, "examples/quickstart.yaml"), "quickstart");
        results.push(took);
        process.stderr.write(`run ${run + 1}: ${(took / 1000).toFixed(2)} s\n`);
        // The upgrade: one minor version up, until its Upgrade operation succeeds.
        const upgradeStarted = performance.now();
        const patched = kubectl(plane.kubeconfig, ["patch", "cluster", "quickstart", "--type", "merge", "-p", JSON.stringify({ spec: { kubernetesVersion: UPGRADE_TO } })]);
        if (patched.status !== 0) throw new Error(patched.stderr);
        await eventually(
          () => {
            const phase = kubectl(plane.kubeconfig, ["get", "operation", "quickstart-upgrade-2", "-o", "jsonpath={.status.phase}"]).stdout;
            if (phase === "Failed" || phase === "Canceled") throw new Error(`the upgrade ended ${phase}`);
            return phase === "Succeeded";
          },
          { timeoutMs: 900_000, intervalMs: 50, what: "the quickstart cluster's upgrade to succeed" },
        );
        upgrades.push(performance.now() - upgradeStarted);
        process.stderr.write(`run ${run + 1}: upgrade ${((performance.now() - upgradeStarted) / 1000).toFixed(2)} s\n`);
      } finally {
        await plane.stop("SIGTERM");
        await sim.stop();
        removeDir(plane.dataDir);
      }
      if (large > 0) bigResults.push(await timeLargeCluster(timeScale, run, bigFile, large));
    }
  } finally {
    removeDir(scratch);
  }
  const terraform = terraformTime(profile, shape, timeScale);
  const bigTerraform = large > 0 ? terraformTime(profile, bigShape, timeScale) : undefined;
  const s = (ms: number | undefined) => (ms === undefined ? "-" : `${(ms / 1000).toFixed(2)} s`);
  const real = (ms: number | undefined) => (ms === undefined ? "-" : `${((ms / timeScale) / 1000).toFixed(0)} s`);
  const sorted = [...results].sort((a, b) => a - b);
  console.log(formatMachine(describeMachine()));
  console.log(`quickstart cluster (3 control-plane, 2+2 workers in two regions), realistic profile × ${timeScale}, ${runs} runs\n`);
  console.log(
    formatTable([
        ["measure", "time (scaled)", "time at realistic pace"],
        ["time to Running, median", s(median(results)), real(median(results))],
        ["time to Running, best / worst", `${s(sorted[0]!)} / ${s(sorted[sorted.length - 1]!)}`, ""],
        ["physical critical path", s(physical), real(physical)],
        ["Terraform on the physical graph", s(terraform), real(terraform)],
        ["strictly sequential flow", s(sequential), real(sequential)],
        [`time to upgrade to ${UPGRADE_TO}, median`, s(median(upgrades)), real(median(upgrades))],
        ["critical path of the upgrade", s(upgradeCritical), real(upgradeCritical)],
        ...(large > 0
          ? [
              [`${large}-machine cluster: time to Running, median`, s(median(bigResults)), real(median(bigResults))],
              [`${large}-machine cluster: physical critical path`, s(bigPhysical), real(bigPhysical)],
              [`${large}-machine cluster: Terraform on the physical graph`, s(bigTerraform), real(bigTerraform)],
            ]
          : []),
    ]),
  );
  console.log(`\ntime to Running ÷ physical critical path: ${(median(results) / physical).toFixed(3)} (goal ≤ 1.10)`);
  if (large > 0) console.log(`${large}-machine cluster: time to Running ÷ physical critical path: ${(median(bigResults) / bigPhysical).toFixed(3)} (goal ≤ 1.10)`);
  if (terraform === undefined) console.log("Terraform: skipped, `terraform` is not on the PATH");
  else console.log(`Terraform (parallelism 10) ÷ physical critical path: ${(terraform / physical).toFixed(3)}${bigTerraform === undefined ? "" : `, ${large}-machine cluster ${(bigTerraform / bigPhysical).toFixed(3)}`}`);
  console.log(`time to upgrade ÷ critical path of the upgrade: ${(median(upgrades) / upgradeCritical).toFixed(3)}`);
  console.log(`sequential flow ÷ time to Running: ${(sequential / median(results)).toFixed(2)}× faster than one step at a time`);
}

/** One run of the large cluster on a fresh sim cloud whose quotas and capacity hold it. */
async function timeLargeCluster(timeScale: number, run: number, file: string, machines: number): Promise<number> {
  const sim = await startSimCloud({ profile: "realistic", timeScale, seed: 200 + run });
  const plenty = 10 * machines;
  for (const region of ["sim-east-1", "sim-west-1"]) {
    await sim.admin.setQuota("default", region, { vcpus: 4 * plenty, instances: plenty, networks: 5, loadBalancers: 5, publicIps: plenty });
    for (const zone of await sim.api.describeZones(region)) {
      for (const type of ["s1.medium", "s1.large"]) await sim.admin.setCapacity(region, zone.name, type, plenty);
    }
  }
  const plane = await startSlipway({ args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "100ms"] });
  try {
    const took = await timeToRunning(plane.kubeconfig, file, "large");
    process.stderr.write(`run ${run + 1}: ${machines}-machine cluster ${(took / 1000).toFixed(2)} s\n`);
    return took;
  } finally {
    await plane.stop("SIGTERM");
    await sim.stop();
    removeDir(plane.dataDir);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e: unknown) => {
    console.error(`FAIL ${(e as Error).message}`);
    process.exit(1);
  });
}
