import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { eventKind } from "../../api/core.ts";
import type { ClusterObject, EventObject, LeaseObject } from "../../api/kinds.ts";
import { apiVersionOf } from "../../api/registry.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { leaseKind } from "../../api/slipway/lease.ts";
import { getCondition } from "../../runtime/conditions.ts";
import { controllerTestEnvs } from "../testing.ts";
import { registerLeaseController } from "./controller.ts";

const NS = "default";
const REGION = "sim-east-1";
const newEnv = controllerTestEnvs();

async function setup() {
  const env = await newEnv();
  registerLeaseController(env.manager, { providers: env.providers }, { endingSoonMs: 800, recheckMs: 200 });
  await env.start();
  await env.client.of(connectionKind).create({ apiVersion: apiVersionOf(connectionKind), kind: "Connection", metadata: { name: "east", namespace: NS }, spec: { provider: "sim", region: REGION } });
  const createLease = (name: string, sizes: LeaseObject["spec"]["sizes"], startInMs: number, lengthMs: number) => {
    const start = Date.now() + startInMs;
    return env.client.of(leaseKind).create({
      apiVersion: apiVersionOf(leaseKind),
      kind: "Lease",
      metadata: { name, namespace: NS },
      spec: { connection: "east", sizes, startTime: new Date(start).toISOString(), endTime: new Date(start + lengthMs).toISOString() },
    } as LeaseObject);
  };
  const phase = (name: string, wanted: string, timeoutMs?: number) => env.waitFor(leaseKind, NS, name, (l) => l?.status?.phase === wanted, timeoutMs) as Promise<LeaseObject>;
  const events = async (reason: string) => (await env.client.of(eventKind).list(NS)).items.filter((e: EventObject) => e.reason === reason);
  const reservations = () => env.cloud.listReservations(REGION);
  return { env, createLease, phase, events, reservations };
}

describe("lease controller", () => {
  it("reserves each size, goes Pending → Active → Expired, warns ahead of the end and deletes the cluster that adopted it", async () => {
    const { env, createLease, phase, events, reservations } = await setup();
    await createLease("demo", [{ name: "small", machineType: "s1.small", count: 2 }, { name: "big", machineType: "s1.large", count: 1 }], 600, 1600);
    const pending = await phase("demo", "Pending");
    const reserved = await env.waitFor(leaseKind, NS, "demo", (l) => (l?.status?.reservations?.length ?? 0) === 2);
    assert.deepEqual(reserved?.status?.sizes, { small: "s1.small", big: "s1.large" });
    assert.equal(getCondition(reserved?.status?.conditions, "Active")?.reason, "LeasePending", JSON.stringify(pending.status));
    const cloudSide = await reservations();
    assert.deepEqual(cloudSide.map((r) => [r.machineType, r.instanceCount, r.state]).sort(), [["s1.large", 1, "scheduled"], ["s1.small", 2, "scheduled"]]);
    assert.ok(cloudSide.every((r) => r.tags["slipway.dev/lease"] === "default/demo" && r.zone === "sim-east-1a"));

    // A cluster adopts the lease (as the cluster controller does); no cluster controller runs here.
    const cluster = await env.client.of(clusterKind).create({ apiVersion: apiVersionOf(clusterKind), kind: "Cluster", metadata: { name: "leased", namespace: NS }, spec: { leaseName: "demo", controlPlane: { connection: "east", machineType: "small" } } } as ClusterObject);
    await env.client.of(leaseKind).patch(NS, "demo", "merge", { metadata: { ownerReferences: [{ apiVersion: cluster.apiVersion, kind: "Cluster", name: "leased", uid: cluster.metadata.uid! }] } });

    const active = await phase("demo", "Active");
    assert.equal(getCondition(active.status?.conditions, "Active")?.status, "True");
    await env.waitFor(leaseKind, NS, "demo", (l) => getCondition(l?.status?.conditions, "EndingSoon")?.status === "True");
    const warnings = await events("LeaseEndingSoon");
    assert.deepEqual(warnings.map((e) => [e.type, e.involvedObject.kind, e.involvedObject.name]).sort(), [["Warning", "Cluster", "leased"], ["Warning", "Lease", "demo"]]);

    const expired = await phase("demo", "Expired", 5000);
    assert.equal(expired.status?.reason, "LeaseEnded");
    await env.waitFor(clusterKind, NS, "leased", (c) => c === undefined);
    const released = await env.waitFor(leaseKind, NS, "demo", (l) => (l?.metadata.ownerReferences ?? []).length === 0);
    assert.equal(released?.status?.phase, "Expired", "the lease stays, Expired, after its cluster is gone");
    assert.deepEqual((await reservations()).map((r) => r.state), ["expired", "expired"]);
  });

  it("fails with the cloud's reason naming the shortfall, leaving no reservation behind", async () => {
    const { env, createLease, phase, reservations } = await setup();
    env.cloud.setCapacity(REGION, "sim-east-1a", "s1.large", 2);
    await createLease("big", [{ name: "small", machineType: "s1.small", count: 1 }, { name: "large", machineType: "s1.large", count: 3 }], 0, 60_000);
    const failed = await phase("big", "Failed");
    assert.equal(failed.status?.reason, "InsufficientCapacity");
    assert.match(failed.status?.message ?? "", /size large: .*requested 3, available 2, short by 1/);
    assert.deepEqual((await reservations()).map((r) => r.state), ["cancelled"], "the size already reserved is cancelled");
  });

  it("cancels its reservations when deleted", async () => {
    const { env, createLease, phase, reservations } = await setup();
    await createLease("short", [{ name: "small", machineType: "s1.small", count: 1 }], 0, 60_000);
    await phase("short", "Active");
    await env.client.of(leaseKind).delete(NS, "short");
    await env.waitFor(leaseKind, NS, "short", (l) => l === undefined);
    assert.deepEqual((await reservations()).map((r) => r.state), ["cancelled"]);
  });
});
