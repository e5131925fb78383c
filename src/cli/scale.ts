// `slipway scale machinepool NAME --replicas N`. A pool the Cluster declares is made from its spec, which
// stays the source of truth (the cluster controller would undo a change made to the MachinePool), so the
// change goes into the Cluster's `spec.workers`; a pool created on its own (or marked as scaled from
// outside) is scaled through its /scale subresource.
import type { Command } from "commander";
import type { ClusterObject, MachinePoolObject } from "../api/kinds.ts";
import { LABEL_CLUSTER } from "../api/slipway/cluster.ts";
import { ANNOTATION_REPLICAS_MANAGED_BY, LABEL_POOL } from "../api/slipway/machinepool.ts";
import { getCluster, slipwayPath } from "./clusters.ts";
import { findResource, withSession, type Session } from "./connect.ts";
import { KubeConflictError } from "../kubeclient/index.ts";
import { CliError, orNotFound } from "./errors.ts";
import { UsageError } from "./usage.ts";

interface ScaleFlags {
  replicas: string;
}

export function registerScaleCommand(program: Command): void {
  program
    .command("scale")
    .description("change the number of machines of a worker pool")
    .argument("<kind>", "machinepool (mp)")
    .argument("<name>", "name of the MachinePool, e.g. demo-east")
    .requiredOption("--replicas <count>", "number of machines wanted (0 to 1000)")
    .action(async (kind: string, name: string, flags: ScaleFlags, command: Command) => {
      const replicas = Number(flags.replicas);
      if (!/^\d+$/.test(flags.replicas) || replicas > 1000) throw new UsageError(`--replicas must be a whole number from 0 to 1000 (got "${flags.replicas}")`);
      await withSession(command, async (session) => {
        const resource = await findResource(session, kind);
        if (resource.kind !== "MachinePool") throw new UsageError(`scale changes machinepools only (got ${resource.name})`);
        const cluster = await scaleMachinePool(session, name, replicas);
        session.out.write(`machinepool.slipway.dev/${name} scaled to ${replicas} (cluster ${cluster})\n`);
      });
    });
}

/** Sets the replicas of the pool in its Cluster's spec; answers the cluster's name. */
export async function scaleMachinePool(session: Session, name: string, replicas: number): Promise<string> {
  const { client, namespace } = session;
  const poolPath = await slipwayPath(client, "MachinePool", namespace, name);
  const pool = await orNotFound(client.get<MachinePoolObject>(poolPath), { singularName: "machinepool", namespaced: true }, name, namespace);
  const clusterName = pool.metadata.labels?.[LABEL_CLUSTER] ?? pool.spec.clusterName;
  // A pool created on its own, or one its cluster declares but marked as scaled from outside, owns its
  // replicas: they change through its scale subresource.
  if (pool.metadata.labels?.[LABEL_POOL] === undefined || pool.metadata.annotations?.[ANNOTATION_REPLICAS_MANAGED_BY] !== undefined) {
    await client.patch(`${poolPath}/scale`, { spec: { replicas } }, "merge");
    return clusterName;
  }
  const poolName = pool.metadata.labels?.[LABEL_POOL] ?? name.slice(clusterName.length + 1);
  for (let attempt = 1; ; attempt++) {
    const cluster = await getCluster(session, clusterName);
    try {
      await client.patch(await slipwayPath(client, "Cluster", namespace, clusterName), workersPatch(cluster, poolName, name, replicas), "merge");
      return clusterName;
    } catch (error) {
      // Someone else changed the cluster since it was read: read it again rather than undo their change.
      if (!(error instanceof KubeConflictError) || attempt === 3) throw error;
    }
  }
}

function workersPatch(cluster: ClusterObject, poolName: string, machinePool: string, replicas: number): unknown {
  const workers = cluster.spec.workers ?? [];
  const index = workers.findIndex((w) => w.name === poolName);
  if (index < 0) {
    throw new CliError(
      `cluster "${cluster.metadata.name}" declares no worker pool "${poolName}" (machinepool ${machinePool}); its pools: ${workers.map((w) => w.name).join(", ") || "none"}`,
    );
  }
  // A merge patch replaces arrays whole: every pool goes in, with the one change; the resourceVersion
  // makes the write fail rather than overwrite a change made in between.
  return {
    metadata: { resourceVersion: cluster.metadata.resourceVersion },
    spec: { workers: workers.map((w, i) => (i === index ? { ...w, replicas } : w)) },
  };
}
