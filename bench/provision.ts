// How close Slipway gets to the critical path when it builds the quickstart cluster.
//
// A sim cloud (its own process, `realistic` latencies, time-scaled so the run is short) and `slipway up`
// against it; `examples/quickstart.yaml` is applied and the time to phase Running measured. Next to it:
// - the critical path of the cluster's dependency graph under the same (mean) latencies: what no
//   scheduler of this graph can beat;
// - a strictly sequential flow, each resource and each machine one after another, as CB-Ladybug's
//   bootstrap loop does.
// Then the Running cluster is upgraded one minor version (spec.kubernetesVersion) and the time until its
// Upgrade operation succeeds is measured next to the critical path of the upgrade.
// Usage: npm run bench:provision [-- --time-scale 0.2 --runs 3]
import { readFileSync } from "node:fs";
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
  const cpConn = shape.controlPlane.connection;
  const lbReady = net + subnet + lb;
  const infraReady = (c: string) => net + subnet + Math.max(sg, c === cpConn ? lb : 0);
  // The control plane: the first machine initialises, the others join one at a time.
  let start = infraReady(cpConn);
  const initDone = start + boot + init + healthChecks;
  let ready = initDone + cni;
  let finish = ready;
  for (let k = 1; k < shape.controlPlane.replicas; k++) {
    start = ready;
    ready = start + boot + join + cni;
    finish = Math.max(finish, ready);
  }
  // Workers boot as soon as their connection and the API endpoint exist, and join once init is done.
  for (const pool of shape.workers) {
    if (pool.replicas === 0) continue;
    const booted = Math.max(infraReady(pool.connection), lbReady) + boot;
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

async function main(): Promise<void> {
  const timeScale = flag("time-scale", 0.2);
  const runs = flag("runs", 3);
  const profile = PROFILES.realistic;
  const shape = quickstartShape();
  const critical = criticalPath(profile, shape) * timeScale;
  const sequential = sequentialFlow(profile, shape) * timeScale;
  const upgradeCritical = upgradeCriticalPath(profile, shape) * timeScale;
  const results: number[] = [];
  const upgrades: number[] = [];
  for (let run = 0; run < runs; run++) {
    const sim = await startSimCloud({ profile: "realistic", timeScale, seed: 100 + run });
    const plane = await startSlipway({ args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "100ms"] });
    try {
      const started = performance.now();
      const applied = kubectl(plane.kubeconfig, ["apply", "-f", join(REPO, "examples/quickstart.yaml")]);
      if (applied.status !== 0) throw new Error(applied.stderr);
      await eventually(
        () => {
          const phase = kubectl(plane.kubeconfig, ["get", "cluster", "quickstart", "-o", "jsonpath={.status.phase}"]).stdout;
          if (phase === "Failed") throw new Error("the cluster failed");
          return phase === "Running";
        },
        { timeoutMs: 600_000, intervalMs: 50, what: "the quickstart cluster to be Running" },
      );
      results.push(performance.now() - started);
      process.stderr.write(`run ${run + 1}: ${((performance.now() - started) / 1000).toFixed(2)} s\n`);
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
  }
  const sorted = [...results].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  const upgradeSorted = [...upgrades].sort((a, b) => a - b);
  const upgradeMedian = upgradeSorted[Math.floor(upgradeSorted.length / 2)]!;
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const real = (ms: number) => `${((ms / timeScale) / 1000).toFixed(0)} s`;
  console.log(formatMachine(describeMachine()));
  console.log(`quickstart cluster (3 control-plane, 2+2 workers in two regions), realistic profile × ${timeScale}, ${runs} runs\n`);
  console.log(
    formatTable([
        ["measure", "time (scaled)", "time at realistic pace"],
        ["time to Running, median", s(median), real(median)],
        ["time to Running, best / worst", `${s(sorted[0]!)} / ${s(sorted[sorted.length - 1]!)}`, ""],
        ["critical path of the dependency graph", s(critical), real(critical)],
        ["strictly sequential flow", s(sequential), real(sequential)],
        [`time to upgrade to ${UPGRADE_TO}, median`, s(upgradeMedian), real(upgradeMedian)],
        ["critical path of the upgrade", s(upgradeCritical), real(upgradeCritical)],
    ]),
  );
  console.log(`\ntime to Running ÷ critical path: ${(median / critical).toFixed(3)} (goal ≤ 1.10)`);
  console.log(`time to upgrade ÷ critical path of the upgrade: ${(upgradeMedian / upgradeCritical).toFixed(3)}`);
  console.log(`sequential flow ÷ time to Running: ${(sequential / median).toFixed(2)}× faster than one step at a time`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e: unknown) => {
    console.error(`FAIL ${(e as Error).message}`);
    process.exit(1);
  });
}
