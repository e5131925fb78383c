// The `plan` subresource of Clusters: POST a ClusterPlan naming the Cluster as it would be applied (and
// the Connections the same manifest declares), get it back with the plan in its status. The Cluster and
// each Connection go through the same admission as a write (a dry run: defaults, static validation, the
// fields named in errors), then the clouds are asked what a build would need. Nothing is written, and
// nothing is made in any cloud.
import { leaseKind } from "../../api/slipway/lease.ts";
import { resolveLeaseSizes } from "../cluster/lease.ts";
import type { ConnectionObject } from "../../api/kinds.ts";
import { clusterKind, isRegistered, LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { CLUSTER_PLAN_KIND, type ClusterPlanObject } from "../../api/slipway/clusterplan.ts";
import { SLIPWAY_GROUP, SLIPWAY_VERSION } from "../../api/slipway/group.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { machineKind } from "../../api/slipway/machine.ts";
import { machinePoolKind } from "../../api/slipway/machinepool.ts";
import type { KubeObject } from "../../api/meta.ts";
import type { KindDefinition } from "../../api/registry.ts";
import { BadRequestError } from "../../apiserver/errors.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { SubresourceAction } from "../../apiserver/routes.ts";
import type { Client } from "../../runtime/client.ts";
import type { Catalogue } from "../../providers/provider.ts";
import { clusterConnections } from "../cluster/preflight.ts";
import { connectionFacts } from "./facts.ts";
import { makePlan, type ExistingCluster } from "./plan.ts";

export interface PlanDeps {
  /** The in-process client: the same admission as the API's, without HTTP. */
  client: Client;
  /** Opens a Connection's catalogue (the controllers' resolver). */
  open: (connection: ConnectionObject) => Promise<Catalogue>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The object as a create or update of it would store it, without storing it. */
async function admitted<T extends KubeObject>(client: Client, def: KindDefinition<T>, namespace: string, object: Record<string, unknown>, name: string): Promise<T> {
  const metadata: Record<string, unknown> = { ...(isObject(object.metadata) ? object.metadata : {}), name, namespace };
  delete metadata.resourceVersion;
  delete metadata.uid;
  const body = { ...object, metadata } as unknown as T;
  const kind = client.of(def);
  if (await kind.tryGet(namespace, name)) return kind.update(body, { dryRun: true });
  const made = await kind.create(body, { dryRun: true });
  // A dry-run create makes up a uid; the object does not exist, and the plan must not say it does.
  delete made.metadata.uid;
  return made;
}

async function existingCluster(client: Client, namespace: string, name: string): Promise<ExistingCluster | undefined> {
  const cluster = await client.of(clusterKind).tryGet(namespace, name);
  if (!cluster) return undefined;
  const options = { labelSelector: `${LABEL_CLUSTER}=${name}` };
  const [infrastructures, pools, machines] = await Promise.all([
    client.of(infrastructureKind).list(namespace, options),
    client.of(machinePoolKind).list(namespace, options),
    client.of(machineKind).list(namespace, options),
  ]);
  return { cluster, infrastructures: infrastructures.items, pools: pools.items, machines: machines.items };
}

function parseRequest(body: unknown, name: string): { cluster: Record<string, unknown>; connections: Record<string, unknown>[] } {
  if (!isObject(body) || body.kind !== CLUSTER_PLAN_KIND || !isObject(body.spec) || !isObject(body.spec.cluster)) {
    throw new BadRequestError(`the body must be a ${CLUSTER_PLAN_KIND} whose spec.cluster is the Cluster to plan`, [
      { reason: "FieldValueRequired", message: "the Cluster to plan", field: "spec.cluster" },
    ]);
  }
  const cluster = body.spec.cluster;
  const given = isObject(cluster.metadata) ? cluster.metadata.name : undefined;
  if (given !== undefined && given !== name) {
    throw new BadRequestError(`the name of the cluster (${String(given)}) does not match the name on the URL (${name})`, [
      { reason: "FieldValueInvalid", message: `must be ${name}`, field: "spec.cluster.metadata.name" },
    ]);
  }
  const connections = body.spec.connections ?? [];
  if (!Array.isArray(connections) || !connections.every(isObject)) {
    throw new BadRequestError("spec.connections must be a list of Connections", [{ reason: "FieldValueInvalid", message: "a list of Connections", field: "spec.connections" }]);
  }
  return { cluster, connections };
}

export async function planClusterRequest(deps: PlanDeps, namespace: string, name: string, body: unknown): Promise<ClusterPlanObject> {
  const { client } = deps;
  const request = parseRequest(body, name);
  const cluster = await admitted(client, clusterKind, namespace, request.cluster, name);
  if (isRegistered(cluster)) {
    throw new BadRequestError(`cluster ${name} is registered, not built by Slipway: there is nothing to plan`, [
      { reason: "FieldValueInvalid", message: "a registered cluster has no machines or cloud resources of Slipway's", field: "spec.cluster.spec.registration" },
    ]);
  }
  // Machine types naming a lease's sizes are planned as the machine types the lease reserves.
  const lease = cluster.spec.leaseName ? await client.of(leaseKind).tryGet(namespace, cluster.spec.leaseName) : undefined;
  if (lease) cluster.spec = resolveLeaseSizes(cluster.spec, Object.fromEntries(lease.spec.sizes.map((s) => [s.name, s.machineType])));
  const declared = new Map<string, ConnectionObject>();
  for (const [i, raw] of request.connections.entries()) {
    const connectionName = isObject(raw.metadata) && typeof raw.metadata.name === "string" ? raw.metadata.name : "";
    if (!connectionName) throw new BadRequestError(`spec.connections[${i}] has no name`, [{ reason: "FieldValueRequired", message: "a name", field: `spec.connections[${i}].metadata.name` }]);
    declared.set(connectionName, await admitted(client, connectionKind, namespace, raw, connectionName));
  }
  const stored = new Map<string, ConnectionObject | undefined>();
  await Promise.all(
    clusterConnections(cluster.spec)
      .filter((c) => !declared.has(c))
      .map(async (c) => stored.set(c, await client.of(connectionKind).tryGet(namespace, c))),
  );
  const facts = await connectionFacts(clusterConnections(cluster.spec), (c) => declared.get(c) ?? stored.get(c), deps.open, namespace);
  const existing = await existingCluster(client, namespace, name);
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: CLUSTER_PLAN_KIND,
    metadata: { name, namespace, creationTimestamp: nowTimestamp() },
    spec: { cluster, ...(declared.size > 0 ? { connections: [...declared.values()] } : {}) },
    status: makePlan({ cluster, facts, ...(existing ? { existing } : {}) }),
  };
}

/** The `plan` subresource of clusters, for the API server. */
export function clusterPlanAction(deps: PlanDeps): SubresourceAction {
  return {
    path: `${clusterKind.group}/${clusterKind.plural}/plan`,
    // Listed in discovery as clusters/plan, taking and answering a ClusterPlan.
    discovery: { group: SLIPWAY_GROUP, version: SLIPWAY_VERSION, kind: CLUSTER_PLAN_KIND },
    handle: ({ namespace, name, body }) => planClusterRequest(deps, namespace ?? "default", name, body),
  };
}
