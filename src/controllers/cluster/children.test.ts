import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { MachinePoolObject } from "../../api/kinds.ts";
import { declaredReplicasPatch, isDeclaredPool, poolSpecPatch } from "./children.ts";
import type { ClusterObject } from "../../api/kinds.ts";

const spec = (extra: Partial<MachinePoolObject["spec"]> = {}): MachinePoolObject["spec"] => ({
  clusterName: "demo",
  connection: "east",
  machineType: "s1.small",
  image: "ubuntu-22.04",
  replicas: 2,
  ...extra,
});

describe("keeping a cluster's pools as its spec declares them", () => {
  it("changes nothing when the pool is as declared", () => {
    assert.deepEqual(poolSpecPatch(spec({ labels: { tier: "web" } }), spec({ labels: { tier: "web" } })), []);
  });

  it("replaces labels and taints as a whole, and removes what the spec no longer sets", () => {
    // A merge patch would keep "team": the pool's machines would be rolled to labels nobody asked for.
    assert.deepEqual(poolSpecPatch(spec({ labels: { tier: "web", team: "a" } }), spec({ labels: { tier: "web" } })), [{ op: "add", path: "/spec/labels", value: { tier: "web" } }]);
    assert.deepEqual(poolSpecPatch(spec({ taints: [{ key: "gpu", effect: "NoSchedule" }], strategy: { maxSurge: 2 } }), spec()), [
      { op: "remove", path: "/spec/taints" },
      { op: "remove", path: "/spec/strategy" },
    ]);
    assert.deepEqual(poolSpecPatch(spec(), spec({ maxUnhealthy: "100%" })), [{ op: "add", path: "/spec/maxUnhealthy", value: "100%" }], "the pool's own remediation limit follows the cluster's");
    assert.deepEqual(poolSpecPatch(spec({ maxUnhealthy: 1 }), spec()), [{ op: "remove", path: "/spec/maxUnhealthy" }]);
    assert.deepEqual(poolSpecPatch(spec(), spec({ replicas: 3, machineType: "s1.medium" })), [
      { op: "add", path: "/spec/machineType", value: "s1.medium" },
      { op: "add", path: "/spec/replicas", value: 3 },
    ]);
  });
});

describe("pools of a cluster", () => {
  const cluster = { metadata: { name: "demo", namespace: "default" } } as ClusterObject;
  const pool = (name: string, labels?: Record<string, string>) => ({ metadata: { name, namespace: "default", labels }, spec: {} }) as MachinePoolObject;

  it("tells the pools the cluster declares from those created on their own", () => {
    assert.equal(isDeclaredPool(cluster, pool("demo-workers", { "slipway.dev/pool": "workers" })), true);
    assert.equal(isDeclaredPool(cluster, pool("batch", { "slipway.dev/cluster": "demo" })), false);
    // The label alone does not make a pool the cluster's: its name must be the one the cluster gives.
    assert.equal(isDeclaredPool(cluster, pool("batch", { "slipway.dev/pool": "workers" })), false);
  });

  it("records the replicas the cluster sets, creating the annotations when there are none", () => {
    assert.deepEqual(declaredReplicasPatch({}, 3), [{ op: "add", path: "/metadata/annotations", value: { "slipway.dev/declared-replicas": "3" } }]);
    assert.deepEqual(declaredReplicasPatch({ note: "x" }, 3), [{ op: "add", path: "/metadata/annotations/slipway.dev~1declared-replicas", value: "3" }]);
    assert.deepEqual(declaredReplicasPatch({ "slipway.dev/declared-replicas": "3" }, 3), []);
  });
});
