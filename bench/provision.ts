// How close Slipway gets to the critical path when it builds the quickstart cluster.
//
// A sim cloud (its own process, `realistic` latencies, time-scaled so the run is short) and `slipway up`
// against it; `examples/quickstart.yaml` is applied and the time to phase Running measured. Next to it:
// - the critical path of the cluster's dependency graph under the same (mean) latencies: what no
//   scheduler of this graph can beat;
// - a strictly sequential flow, each resource and each machine one after another, as CB-Ladybug's
//   bootstrap loop does.
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
  const results: number[] = [];
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
    } finally {
      await plane.stop("SIGTERM");
      await sim.stop();
      removeDir(plane.dataDir);
    }
  }
  const sorted = [...results].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
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
    ]),
  );
  console.log(`\ntime to Running ÷ critical path: ${(median / critical).toFixed(3)} (goal ≤ 1.10)`);
  console.log(`sequential flow ÷ time to Running: ${(sequential / median).toFixed(2)}× faster than one step at a time`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e: unknown) => {
    console.error(`FAIL ${(e as Error).message}`);
    process.exit(1);
  });
}
