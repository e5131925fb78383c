// The cluster controller with the lease controller, in process: a cluster waits on its lease, is refused
// before building when it asks more than the lease holds, and adopts the lease once it is Active.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { eventKind } from "../../api/core.ts";
import type { ClusterObject, EventObject, LeaseObject } from "../../api/kinds.ts";
import { apiVersionOf } from "../../api/registry.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { leaseKind } from "../../api/slipway/lease.ts";
import { getCondition } from "../../runtime/conditions.ts";
import { registerLeaseController } from "../lease/controller.ts";
import { controllerTestEnvs } from "../testing.ts";
import { eventually } from "../../../test/support/slipway.ts";
import { registerClusterController } from "./controller.ts";

const NS = "default";
const newEnv = controllerTestEnvs();

async function setup() {
  const env = await newEnv();
  registerClusterController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20, revalidateMs: 60_000 });
  registerLeaseController(env.manager, { providers: env.providers }, { recheckMs: 100 });
  await env.start();
  await env.client.of(connectionKind).create({ apiVersion: apiVersionOf(connectionKind), kind: "Connection", metadata: { name: "east", namespace: NS }, spec: { provider: "sim", region: "sim-east-1" } });
  const lease = (name: string, startInMs: number) =>
    env.client.of(leaseKind).create({
      apiVersion: apiVersionOf(leaseKind),
      kind: "Lease",
      metadata: { name, namespace: NS },
      spec: { connection: "east", sizes: [{ name: "control", machineType: "s1.medium", count: 1 }, { name: "worker", machineType: "s1.small", count: 1 }], startTime: new Date(Date.now() + startInMs).toISOString(), endTime: new Date(Date.now() + 600_000).toISOString() },
    } as LeaseObject);
  const cluster = (name: string, leaseName: string, workers: number) =>
    env.client.of(clusterKind).create({
      apiVersion: apiVersionOf(clusterKind),
      kind: "Cluster",
      metadata: { name, namespace: NS },
      spec: { leaseName, controlPlane: { connection: "east", machineType: "control" }, workers: [{ name: "work", connection: "east", machineType: "worker", replicas: workers }] },
    } as ClusterObject);
  return { env, lease, cluster };
}

describe("a cluster on a lease (cluster controller)", () => {
  it("waits Pending while the lease is, then adopts it and builds with the reserved machine types", async () => {
    const { env, lease, cluster } = await setup();
    await lease("later", 1500);
    await cluster("patient", "later", 1);
    const waiting = await env.waitFor(clusterKind, NS, "patient", (c) => getCondition(c?.status?.conditions, "LeaseReady")?.reason === "LeasePending");
    assert.equal(waiting?.status?.phase, "Pending");
    const said = await eventually(async () => (await env.client.of(eventKind).list(NS)).items.find((e: EventObject) => e.reason === "ClusterPending" && e.involvedObject.name === "patient"), { what: "an Event of the wait" });
    assert.match(said.message ?? "", /waiting for lease later to be Active/, "the Event says what the cluster waits for");
    assert.equal(await env.client.of(infrastructureKind).tryGet(NS, "patient-east"), undefined, "nothing is built while the lease is Pending");
    await env.waitFor(clusterKind, NS, "patient", (c) => getCondition(c?.status?.conditions, "LeaseReady")?.status === "True");
    const adopted = await env.waitFor(leaseKind, NS, "later", (l) => (l?.metadata.ownerReferences ?? []).some((r) => r.kind === "Cluster" && r.name === "patient"));
    assert.ok(adopted);
    const infra = await env.waitFor(infrastructureKind, NS, "patient-east", (i) => i !== undefined);
    assert.deepEqual(infra?.spec.machineTypes, ["s1.medium", "s1.small"], "the infrastructure resolves the lease's machine types, not its size names");
  });

  it("is refused before building when it needs more than the lease holds, naming the shortfall", async () => {
    const { env, lease, cluster } = await setup();
    await lease("small", 0);
    await cluster("greedy", "small", 3);
    const failed = await env.waitFor(clusterKind, NS, "greedy", (c) => c?.status?.phase === "Failed");
    assert.equal(failed?.status?.reason, "LeaseInsufficient");
    assert.match(failed?.status?.message ?? "", /3 × s1\.small wanted, the lease holds 1/);
    assert.equal(await env.client.of(infrastructureKind).tryGet(NS, "greedy-east"), undefined, "nothing is built");
  });
});
