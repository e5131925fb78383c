// Where the time to Running goes, stage by stage: for every cluster, when each of its conditions and
// each condition of its machines (the control-plane machine's and, for the workers, the last of them)
// turned True, in seconds after the cluster was created; then, over the fleet, the 50th, 90th and 99th
// percentile and the maximum of each. Read from a copy of the SQLite store once all are Running. The
// API's timestamps have a resolution of one second.
import type Database from "better-sqlite3";
import { fixed } from "./report.ts";

interface Conditioned {
  metadata: { name: string; creationTimestamp: string };
  spec: { clusterName?: string; role?: string };
  status?: { conditions?: { type: string; status: string; lastTransitionTime?: string }[] };
}

/** Seconds after each cluster's creation at which each stage was reached, by stage. */
export type Stages = Map<string, number[]>;

const CURRENT = "SELECT l.value FROM current c JOIN log l ON l.rev = c.rev WHERE c.key LIKE ?";

function trueSince(object: Conditioned): Map<string, number> {
  const since = new Map<string, number>();
  for (const c of object.status?.conditions ?? []) if (c.status === "True" && c.lastTransitionTime) since.set(c.type, Date.parse(c.lastTransitionTime));
  return since;
}

function objectsOf(db: Database.Database, resource: string): Conditioned[] {
  const rows = db.prepare(CURRENT).all(`/registry/slipway.dev/${resource}/%`) as { value: string }[];
  return rows.map((row) => JSON.parse(row.value) as Conditioned);
}

/** The stages of every cluster in (a copy of) a fleet's SQLite store. */
export function fleetStages(db: Database.Database): Stages {
  const clusters = objectsOf(db, "clusters");
  const machinesOf = new Map<string, Conditioned[]>();
  for (const machine of objectsOf(db, "machines")) machinesOf.set(machine.spec.clusterName ?? "", [...(machinesOf.get(machine.spec.clusterName ?? "") ?? []), machine]);
  const stages: Stages = new Map();
  const add = (stage: string, seconds: number) => stages.set(stage, [...(stages.get(stage) ?? []), seconds]);
  for (const cluster of clusters) {
    const created = Date.parse(cluster.metadata.creationTimestamp);
    for (const [type, at] of trueSince(cluster)) add(`cluster ${type}`, (at - created) / 1000);
    const machines = machinesOf.get(cluster.metadata.name) ?? [];
    for (const role of ["control-plane", "worker"]) {
      const ofRole = machines.filter((m) => m.spec.role === role);
      if (ofRole.length === 0) continue;
      // The last machine of the role to get there: the one the cluster waits for.
      add(`${role} machines created`, (Math.max(...ofRole.map((m) => Date.parse(m.metadata.creationTimestamp))) - created) / 1000);
      const types = new Set(ofRole.flatMap((m) => [...trueSince(m).keys()]));
      for (const type of types) {
        const times = ofRole.map((m) => trueSince(m).get(type));
        if (times.every((t) => t !== undefined)) add(`${role} machines ${type}`, (Math.max(...(times as number[])) - created) / 1000);
      }
    }
  }
  return stages;
}

const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;

/** Rows of the report's table, stages in the order of their medians. */
export function stageRows(stages: Stages): string[][] {
  const rows = [...stages].map(([stage, values]) => ({ stage, sorted: [...values].sort((a, b) => a - b) }));
  rows.sort((a, b) => at(a.sorted, 0.5) - at(b.sorted, 0.5));
  return [
    ["stage reached, s after the cluster's creation", "p50", "p90", "p99", "max", "clusters"],
    ...rows.map(({ stage, sorted }) => [stage, fixed(at(sorted, 0.5), 0), fixed(at(sorted, 0.9), 0), fixed(at(sorted, 0.99), 0), fixed(sorted[sorted.length - 1]!, 0), String(sorted.length)]),
  ];
}
