import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, LeaseObject } from "../api/kinds.ts";
import { defaultRegistry } from "../api/kinds.ts";
import { apiVersionOf } from "../api/registry.ts";
import { clusterKind } from "../api/slipway/cluster.ts";
import { connectionKind } from "../api/slipway/connection.ts";
import { leaseKind } from "../api/slipway/lease.ts";
import { ConflictError, InvalidError } from "../apiserver/errors.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { Client } from "../runtime/client.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { leaseAdmission } from "./lease-admission.ts";
import { ensureDefaultNamespaces } from "./namespaces.ts";

describe("Lease admission", () => {
  it("refuses a lease naming a connection that does not exist, naming spec.connection, and writes nothing", async () => {
    const store = SqliteStore.open(":memory:");
    const objects = new ObjectService(defaultRegistry(), store, { admission: [leaseAdmission] });
    await ensureDefaultNamespaces(objects);
    const client = new Client(objects);
    const lease = { apiVersion: apiVersionOf(leaseKind), kind: "Lease", metadata: { name: "demo", namespace: "default" }, spec: { connection: "east", sizes: [{ name: "small", machineType: "s1.small", count: 1 }], endTime: "2030-01-01T00:00:00Z" } } as LeaseObject;
    await assert.rejects(client.of(leaseKind).create(lease), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.deepEqual(e.fieldErrors.map((f) => [f.field, f.reason]), [["spec.connection", "FieldValueNotFound"]]);
      assert.match(e.message, /no Connection of that name in namespace default/);
      return true;
    });
    assert.equal(await client.of(leaseKind).tryGet("default", "demo"), undefined);
    await client.of(connectionKind).create({ apiVersion: apiVersionOf(connectionKind), kind: "Connection", metadata: { name: "east", namespace: "default" }, spec: { provider: "sim", region: "sim-east-1" } });
    assert.equal((await client.of(leaseKind).create(lease)).metadata.name, "demo");
    await store.close();
  });

  it("refuses deleting a lease a live cluster runs on, until the cluster goes", async () => {
    const store = SqliteStore.open(":memory:");
    const objects = new ObjectService(defaultRegistry(), store, { admission: [leaseAdmission] });
    await ensureDefaultNamespaces(objects);
    const client = new Client(objects);
    await client.of(connectionKind).create({ apiVersion: apiVersionOf(connectionKind), kind: "Connection", metadata: { name: "east", namespace: "default" }, spec: { provider: "sim", region: "sim-east-1" } });
    const cluster = await client.of(clusterKind).create({ apiVersion: apiVersionOf(clusterKind), kind: "Cluster", metadata: { name: "leased", namespace: "default", finalizers: ["slipway.dev/test"] }, spec: { leaseName: "demo", controlPlane: { connection: "east", machineType: "s1.medium" } } } as ClusterObject);
    await client.of(leaseKind).create({
      apiVersion: apiVersionOf(leaseKind),
      kind: "Lease",
      metadata: { name: "demo", namespace: "default", ownerReferences: [{ apiVersion: cluster.apiVersion, kind: "Cluster", name: "leased", uid: cluster.metadata.uid! }] },
      spec: { connection: "east", sizes: [{ name: "small", machineType: "s1.small", count: 1 }], endTime: "2030-01-01T00:00:00Z" },
    } as LeaseObject);
    await assert.rejects(client.of(leaseKind).delete("default", "demo"), (e: unknown) => e instanceof ConflictError && /cluster leased runs on the lease/.test(e.message));
    assert.ok(await client.of(leaseKind).tryGet("default", "demo"), "the lease is still there");
    await client.of(clusterKind).delete("default", "leased");
    await client.of(leaseKind).delete("default", "demo");
    assert.equal(await client.of(leaseKind).tryGet("default", "demo"), undefined, "a cluster being deleted lets its lease go");
    await store.close();
  });
});
