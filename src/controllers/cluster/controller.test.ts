// What queues the cluster controller: a cluster being deleted waits for its children to go (machines,
// then infrastructures), and looks again when one goes — not at every step of a child on its way out.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, InfrastructureObject, MachineObject } from "../../api/kinds.ts";
import { apiVersionOf } from "../../api/registry.ts";
import { clusterKind, LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { machineKind } from "../../api/slipway/machine.ts";
import { queuedKeys, until } from "../../runtime/testing.ts";
import { controllerTestEnvs } from "../testing.ts";
import { registerClusterController } from "./controller.ts";

const NS = "default";
const HOLD = "test.slipway.dev/hold";
const newEnv = controllerTestEnvs();

describe("cluster controller, being deleted", () => {
  it("looks again when a machine or an infrastructure goes, not at each status change of one on its way out", async () => {
    const env = await newEnv();
    const controller = registerClusterController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20, revalidateMs: 60_000 });
    await env.start();
    await env.client.of(connectionKind).create({ apiVersion: apiVersionOf(connectionKind), kind: "Connection", metadata: { name: "east", namespace: NS }, spec: { provider: "sim", region: "sim-east-1" } });
    await env.client.of(clusterKind).create({
      apiVersion: apiVersionOf(clusterKind),
      kind: "Cluster",
      metadata: { name: "leaving", namespace: NS },
      spec: { controlPlane: { connection: "east", machineType: "s1.medium" } },
    } as ClusterObject);
    // A worker of the cluster, held on its way out as the machine controller holds one while it drains and terminates.
    const machines = env.client.of<MachineObject>(machineKind);
    await machines.create({
      apiVersion: apiVersionOf(machineKind),
      kind: "Machine",
      metadata: { name: "leaving-w-0", namespace: NS, labels: { [LABEL_CLUSTER]: "leaving" }, finalizers: [HOLD] },
      spec: { clusterName: "leaving", role: "worker", connection: "east", machineType: "s1.small" },
    } as MachineObject);
    await env.waitFor(clusterKind, NS, "leaving", (c) => c?.status?.workers?.replicas === 1);

    await env.client.of(clusterKind).delete(NS, "leaving");
    await machines.delete(NS, "leaving-w-0");
    await env.waitFor(clusterKind, NS, "leaving", (c) => c?.status?.message === "waiting for 1 machine(s) to be deleted");
    const cache = env.manager.informer(machineKind).cache;
    const clusters = env.manager.informer(clusterKind).cache;
    await until(() => clusters.get(`${NS}/leaving`)?.metadata.deletionTimestamp !== undefined, "the cluster's deletion seen");
    await until(() => cache.get(`${NS}/leaving-w-0`)?.metadata.deletionTimestamp !== undefined, "the machine's deletion seen");

    const queued = queuedKeys(controller);
    // Its steps out — the node drained, the instance terminated, the node gone — each a status write.
    for (const [nodeReady, instanceId] of [[true, "i-1"], [false, "i-1"], [false, undefined]] as const) {
      const m = await machines.get(NS, "leaving-w-0");
      m.status = { ...m.status, phase: "Deleting", nodeReady, instanceId };
      const written = await machines.updateStatus(m);
      await until(() => cache.get(`${NS}/leaving-w-0`)?.metadata.resourceVersion === written.metadata.resourceVersion, "the status change seen");
    }
    assert.equal(queued.length, 0, `a status change of a machine on its way out queued the cluster being deleted: ${queued.join(", ")}`);

    const last = await machines.get(NS, "leaving-w-0");
    last.metadata.finalizers = [];
    await machines.update(last);
    await until(() => queued.includes(`${NS}/leaving`), "the machine's going to queue the cluster");

    // Then its infrastructure, held the same way (no infrastructure controller runs here to release it).
    const infras = env.client.of<InfrastructureObject>(infrastructureKind);
    await env.waitFor(infrastructureKind, NS, "leaving-east", (i) => i?.metadata.deletionTimestamp !== undefined);
    await env.waitFor(clusterKind, NS, "leaving", (c) => c?.status?.message === "waiting for 1 infrastructure(s) to be deleted");
    const infraCache = env.manager.informer(infrastructureKind).cache;
    await until(() => infraCache.get(`${NS}/leaving-east`)?.metadata.deletionTimestamp !== undefined, "the infrastructure's deletion seen");
    queued.length = 0;
    for (const resource of ["LoadBalancerDeleted", "SubnetDeleted", "NetworkDeleted"]) {
      const infra = await infras.get(NS, "leaving-east");
      infra.status = { ...infra.status, conditions: [...(infra.status?.conditions ?? []), { type: resource, status: "True", reason: "Deleted", lastTransitionTime: "2025-01-01T00:00:00Z" }] };
      const written = await infras.updateStatus(infra);
      await until(() => infraCache.get(`${NS}/leaving-east`)?.metadata.resourceVersion === written.metadata.resourceVersion, "the status change seen");
    }
    assert.equal(queued.length, 0, `a status change of an infrastructure on its way out queued the cluster being deleted: ${queued.join(", ")}`);
    const infra = await infras.get(NS, "leaving-east");
    infra.metadata.finalizers = [];
    await infras.update(infra);
    await env.waitFor(clusterKind, NS, "leaving", (c) => c === undefined);
  });
});

describe("cluster controller, a cluster just created", () => {
  it("is Pending from its create on, whatever status the client sent, until the controller takes it up", async () => {
    const env = await newEnv();
    await env.client.of(connectionKind).create({ apiVersion: apiVersionOf(connectionKind), kind: "Connection", metadata: { name: "east", namespace: NS }, spec: { provider: "sim", region: "sim-east-1" } });
    const created = await env.client.of(clusterKind).create({
      apiVersion: apiVersionOf(clusterKind),
      kind: "Cluster",
      metadata: { name: "fresh", namespace: NS },
      spec: { controlPlane: { connection: "east", machineType: "s1.medium" } },
      status: { phase: "Running" },
    } as ClusterObject);
    assert.deepEqual(created.status, { phase: "Pending", message: "waiting for the cluster controller" });
    assert.equal((await env.client.of<ClusterObject>(clusterKind).get(NS, "fresh")).status?.phase, "Pending");

    registerClusterController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20, revalidateMs: 60_000 });
    await env.start();
    const moved = await env.waitFor(clusterKind, NS, "fresh", (c) => c?.status?.phase !== "Pending");
    assert.notEqual((moved as ClusterObject).status?.message, "waiting for the cluster controller");
  });
});
