import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterSpec, LeaseObject } from "../../api/kinds.ts";
import { leaseShortfall, resolveLeaseSizes } from "./lease.ts";

const lease = {
  apiVersion: "slipway.dev/v1alpha1",
  kind: "Lease",
  metadata: { name: "demo", namespace: "default" },
  spec: { connection: "east", sizes: [{ name: "cp", machineType: "s1.medium", count: 1 }, { name: "worker", machineType: "s1.small", count: 2 }], endTime: "2030-01-01T00:00:00Z" },
  status: {
    phase: "Active",
    sizes: { cp: "s1.medium", worker: "s1.small" },
    reservations: [
      { size: "cp", machineType: "s1.medium", count: 1, zone: "sim-east-1a", reservationId: "cr-1" },
      { size: "worker", machineType: "s1.small", count: 2, zone: "sim-east-1a", reservationId: "cr-2" },
    ],
  },
} as LeaseObject;

const spec = (workers: number, cpType = "cp"): ClusterSpec => ({
  leaseName: "demo",
  controlPlane: { connection: "east", machineType: cpType, replicas: 1 },
  workers: [
    { name: "a", connection: "east", machineType: "worker", replicas: workers },
    { name: "elsewhere", connection: "west", machineType: "s1.xlarge", replicas: 5 },
  ],
});

describe("a cluster on a lease", () => {
  it("takes its machine types from the lease's sizes, leaving other names as they are", () => {
    const resolved = resolveLeaseSizes(spec(2), lease.status!.sizes!);
    assert.equal(resolved.controlPlane.machineType, "s1.medium");
    assert.deepEqual(resolved.workers!.map((w) => w.machineType), ["s1.small", "s1.xlarge"]);
  });

  it("fits when the lease's connection asks no more than it holds (other connections do not count)", () => {
    assert.deepEqual(leaseShortfall(resolveLeaseSizes(spec(2), lease.status!.sizes!), lease), []);
  });

  it("names each machine type it needs more of than the lease holds", () => {
    assert.deepEqual(leaseShortfall(resolveLeaseSizes(spec(3), lease.status!.sizes!), lease), ["3 × s1.small wanted, the lease holds 2"]);
    assert.deepEqual(leaseShortfall(resolveLeaseSizes(spec(1, "s1.large"), lease.status!.sizes!), lease), ["1 × s1.large wanted, the lease holds 0"]);
  });
});
