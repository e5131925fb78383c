// How close Slipway gets to the critical path when it builds the quickstart cluster.
//
// A sim cloud (its own process, `realistic` latencies, time-scaled so the run is short) and `slipway up`
// against it; `examples/quickstart.yaml` is applied and the time to phase Running measured. Next to it:
// - the critical path of the cluster's dependency graph under the same (mean) latencies: what no
//   scheduler of this graph can beat;
// - a strictly sequential flow, each resource and each machine one after another, as CB-Ladybug's
//   bootstrap loop does.
// - the physical critical path: what no scheduler can beat, whatever graph it chooses — every machine
//   created as soon as its connection's network exists, `kubeadm init` waiting only for the load balancer
//   to route, control-plane joins one at a time (etcd), worker joins only for init;
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
import { PROFILES, type DelayRange, type LatencyProfile } from "../src/simcloud/profiles.ts";
import { eventually, kubectl, removeDir, REPO, startSlipway } from "../test/support/slipway.ts";
import { SIM_TOKEN, startSimCloud } from "../test/support/simcloud.ts";
import { describeMachine, formatMachine, formatTable } from "./support/report.ts";

interface Shape {
  controlPlane: { connection: string; replicas: number };
  workers: { connection: string; replicas: number }[];
}

const mean = (r: DelayRange) => (r[0] + r[1]) / 2;
/** The version the quickstart cluster (v1.31.2) is upgraded to. */
const UPGRADE_TO = "v1.32.9";

/** Finishing times (ms) of every machine's node Ready under the graph Slipway schedules. */
export function criticalPath(p: LatencyProfile, shape: Shape): number {
  const net = mean(p.networkCreate);
  const subnet = mean(p.subnetCreate);
  const sg = mean(p.securityGroupCreate);
  const lb = mean(p.loadBalancerProvision);
  const boot = mean(p.instanceBoot);
  const init = mean(p.kubeadmInit);
  const join = mean(p.kubeadmJoin);
  const cni = join / 2;
  // kubeadm init finishes through the load balancer: once its API server is up, the target's health checks.
  const healthChecks = mean(p.targetHealthy);
  const lbReady = net + subnet + lb;
  // Machines are made once their connection's network, subnet and security group exist (and the load
  // balancer, whose address is known at once): they boot while the load balancer is provisioned.
  const infraReady = net + subnet + sg;
  // The control plane: the first machine initialises, the others join one at a time.
  let start = infraReady;
  const initDone = Math.max(start + boot + init + healthChecks, lbReady);
  let ready = initDone + cni;
  let finish = ready;
  for (let k = 1; k < shape.controlPlane.replicas; k++) {
    start = ready;
    ready = start + boot + join + cni;
    finish = Math.max(finish, ready);
  }
  // Workers boot as soon as their connection exists, and join once init is done.
  for (const pool of shape.workers) {
    if (pool.replicas === 0) continue;
    const booted = infraReady + boot;
    const joined = Math.max(booted, initDone) + join;
    finish = Math.max(finish, Math.max(joined, initDone) + cni);
  }
  return finish;
}

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
 * Finishing time (ms) of the last node Ready under the physical rule: every machine is created as soon
 * as its connection's network, subnet and security group exist, and boots while the load balancer is
 * provisioned; `kubeadm init` ends once the load balancer routes to its API server (the load balancer
 * active and the target's health checks passed); each control-plane join waits for the previous one
 * (etcd adds one member at a time), worker joins only for init.
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
 * The physical graph's steps, each with what it waits for, its mean duration and its finishing time.
 * The same rule as `slipway plan`'s estimate (`src/controllers/plan/estimate.ts`), timed as the sim cloud
 * times it: the target's health checks start once init's API server serves (not at boot), the security
 * group follows the subnet, and a node is Ready half a join after it joined (the network plugin).
 */
export function physicalSteps(p: LatencyProfile, shape: Shape): Step[] {
  const steps = new Map<string, Step>();
  const add = (name: string, after: string[], ms: number) =>
    steps.set(name, { name, after, ms, end: Math.max(0, ...after.map((a) => steps.get(a)!.end)) + ms });
  const connections = [...new Set([shape.controlPlane.connection, ...shape.workers.filter((w) => w.replicas > 0).map((w) => w.connection)])];
  for (const c of connections) {
    add(`network_${c}`, [], mean(p.networkCreate));
    add(`subnet_${c}`, [`network_${c}`], mean(p.subnetCreate));
    add(`sg_${c}`, [`subnet_${c}`], mean(p.securityGroupCreate));
  }
  const cp = shape.controlPlane.connection;
  add("lb", [`subnet_${cp}`], mean(p.loadBalancerProvision));
  for (let k = 0; k < shape.controlPlane.replicas; k++) add(`cp_${k}`, [`sg_${cp}`], mean(p.instanceBoot));
  // init ends when the load balancer routes: it is active and the API server, up on the first machine,
  // has passed the target's health checks.
  add("init_api", ["cp_0"], mean(p.kubeadmInit) + mean(p.targetHealthy));
  add("init", ["init_api", "lb"], 0);
  add("cp_ready_0", ["init"], mean(p.kubeadmJoin) / 2);
  let previous = "init";
  for (let k = 1; k < shape.controlPlane.replicas; k++) {
    add(`cp_join_${k}`, [`cp_${k}`, previous], mean(p.kubeadmJoin));
    add(`cp_ready_${k}`, [`cp_join_${k}`], mean(p.kubeadmJoin) / 2);
    previous = `cp_join_${k}`;
  }
  shape.workers.forEach((pool, i) => {
    for (let k = 0; k < pool.replicas; k++) {
      add(`w${i}_${k}`, [`sg_${pool.connection}`], mean(p.instanceBoot));
      add(`w${i}_ready_${k}`, [`w${i}_${k}`, "init"], mean(p.kubeadmJoin) * 1.5);
    }
  });
  return [...steps.values()];
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
  const docs = readFileSync(join(REPO, "examples/quickstart.yaml"), "utf8").split(/^---$/m).map((d) => parse(d) as { kind: string; spec: { controlPlane: { connection: string; replicas: number }; workers: { connection: string; replicas: number }[] } });
  const cluster = docs.find((d) => d.kind === "Cluster")!;
  return { controlPlane: cluster.spec.controlPlane, workers: cluster.spec.workers };
}

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

/** A cluster of `machines` machines: 3 control-plane, the workers in two pools in the quickstart's two regions. */
function largeShape(machines: number): Shape {
  const workers = machines - 3;
  return {
    controlPlane: { connection: "sim-east", replicas: 3 },
    workers: [
      { connection: "sim-east", replicas: Math.ceil(workers / 2) },
      { connection: "sim-west", replicas: Math.floor(workers / 2) },
    ],
  };
}

function largeManifest(shape: Shape): string {
  const quickstart = readFileSync(join(REPO, "examples/quickstart.yaml"), "utf8");
  return quickstart
    .replace("name: quickstart", "name: large")
    .replace(/replicas: 3\n/, `replicas: ${shape.controlPlane.replicas}\n`)
    .replace(/(name: east[\s\S]*?replicas: )2/, `$1${shape.workers[0]!.replicas}`)
    .replace(/(name: west[\s\S]*?replicas: )2/, `$1${shape.workers[1]!.replicas}`);
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
  const bigShape = largeShape(large);
  const critical = criticalPath(profile, shape) * timeScale;
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
        ["critical path of the dependency graph", s(critical), real(critical)],
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
  console.log(`\ntime to Running ÷ critical path: ${(median(results) / critical).toFixed(3)}`);
  console.log(`time to Running ÷ physical critical path: ${(median(results) / physical).toFixed(3)} (goal ≤ 1.10)`);
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
