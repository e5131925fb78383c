import assert from "node:assert/strict";
import { test } from "node:test";
import { auditCloud, clusterMismatch, survivableVictims, type SoakCluster, type SoakResource } from "./soak-check.ts";

function running(overrides: Partial<NonNullable<SoakCluster["status"]>> = {}): SoakCluster {
  const node = (name: string, role: string) => ({ name, role, ready: true, version: "v1.30.2" });
  return {
    metadata: { name: "a", uid: "u-a", generation: 3 },
    spec: { kubernetesVersion: "v1.30.2", controlPlane: { replicas: 1 }, workers: [{ name: "pool", replicas: 2 }] },
    status: {
      phase: "Running",
      observedGeneration: 3,
      version: "v1.30.2",
      controlPlane: { desired: 1, ready: 1, replicas: 1 },
      workers: { desired: 2, ready: 2, replicas: 2 },
      nodes: [node("a-cp-0", "control-plane"), node("a-pool-0", "worker"), node("a-pool-1", "worker")],
      ...overrides,
    },
  };
}

test("a Running cluster whose machines, nodes and version match its spec has converged", () => {
  assert.equal(clusterMismatch(running()), undefined);
});

test("a cluster has not converged until its status shows the latest spec in every count and version", () => {
  assert.equal(clusterMismatch(running({ phase: "Updating", reason: "JoinWorkerFailed" })), "phase Updating (JoinWorkerFailed)");
  assert.match(clusterMismatch(running({ observedGeneration: 2 }))!, /generation 2, spec is 3/);
  assert.match(clusterMismatch(running({ workers: { desired: 2, ready: 2, replicas: 3 } }))!, /workers 2 ready of 3 machines, spec 2/);
  assert.match(clusterMismatch(running({ version: "v1.29.1" }))!, /runs v1.29.1, spec v1.30.2/);
  const stale = running();
  stale.status!.nodes![2] = { name: "a-pool-1", role: "worker", ready: true, version: "v1.29.1" };
  assert.equal(clusterMismatch(stale), "node a-pool-1 runs v1.29.1");
  assert.equal(clusterMismatch({ ...running(), metadata: { name: "a", uid: "u-a", generation: 3, deletionTimestamp: "2026-01-01T00:00:00Z" } }), "being deleted");
});

const tagged = (kind: string, id: string, owner: string, extra: Record<string, string> = {}, state = "available"): SoakResource => ({
  kind,
  id,
  state,
  tags: { "slipway.dev/cluster": "default/a", "slipway.dev/cluster-uid": "u-a", "slipway.dev/owner": owner, "slipway.dev/owner-uid": `uid-${owner}`, ...extra },
});

test("the cloud audit finds leaked resources (cluster or owner gone) and duplicated ones, and ignores what is gone", () => {
  const clusters = new Map([["default/a", "u-a"]]);
  const owners = new Set(["Infrastructure/a-east uid-Infrastructure/a-east", "Machine/a-cp-0 uid-Machine/a-cp-0", "Machine/a-pool-0 uid-Machine/a-pool-0"]);
  const resources: SoakResource[] = [
    tagged("network", "vpc-1", "Infrastructure/a-east", { "slipway.dev/role": "network" }),
    tagged("subnet", "subnet-1", "Infrastructure/a-east", { "slipway.dev/role": "subnet", "slipway.dev/zone": "z-a" }),
    tagged("subnet", "subnet-2", "Infrastructure/a-east", { "slipway.dev/role": "subnet", "slipway.dev/zone": "z-b" }),
    { ...tagged("dnsRecord", "rr-1", "Infrastructure/a-east", { "slipway.dev/role": "apiDnsRecord" }), name: "api.a" },
    { ...tagged("dnsRecord", "rr-2", "Infrastructure/a-east", { "slipway.dev/role": "apiDnsRecord" }), name: "api-int.a" },
    tagged("instance", "i-1", "Machine/a-cp-0", { "slipway.dev/role": "control-plane" }, "running"),
    // A second live instance for one Machine: a duplicate; a terminated one beside it is not.
    tagged("instance", "i-2", "Machine/a-pool-0", { "slipway.dev/role": "worker" }, "running"),
    tagged("instance", "i-3", "Machine/a-pool-0", { "slipway.dev/role": "worker" }, "pending"),
    tagged("instance", "i-4", "Machine/a-cp-0", { "slipway.dev/role": "control-plane" }, "terminated"),
    // The owner Machine is gone: a leak.
    tagged("instance", "i-5", "Machine/a-pool-9", { "slipway.dev/role": "worker" }, "running"),
    // A deleted cluster's network, and one of a cluster of the same name made again (other uid).
    { ...tagged("network", "vpc-2", "Infrastructure/b-east"), tags: { "slipway.dev/cluster": "default/b", "slipway.dev/cluster-uid": "u-b", "slipway.dev/owner": "Infrastructure/b-east", "slipway.dev/owner-uid": "x" } },
    { ...tagged("network", "vpc-3", "Infrastructure/a-east"), tags: { ...tagged("network", "", "Infrastructure/a-east").tags, "slipway.dev/cluster-uid": "u-old" } },
    { ...tagged("loadBalancer", "lb-1", "Infrastructure/b-east", {}, "gone"), tags: { "slipway.dev/cluster": "default/b" } },
    // Not Slipway's (no cluster tag).
    { kind: "dnsZone", id: "zone-1", state: "available", tags: { "slipway.dev/zone": "sim" } },
  ];
  const audit = auditCloud(resources, clusters, owners);
  assert.deepEqual(audit.leaks.map((l) => l.ids[0]).sort(), ["i-5", "vpc-2", "vpc-3"]);
  assert.match(audit.leaks.find((l) => l.ids[0] === "i-5")!.why, /owner Machine\/a-pool-9/);
  assert.match(audit.leaks.find((l) => l.ids[0] === "vpc-2")!.why, /cluster default\/b/);
  assert.deepEqual(audit.duplicates.map((d) => d.ids), [["i-2", "i-3"]]);
  assert.match(audit.duplicates[0]!.why, /2 live instances for one Machine\/a-pool-0/);
  assert.deepEqual(audit.settling.map((r) => r.id), ["i-3"]);
});

test("a clean cloud audits clean", () => {
  const owners = new Set(["Machine/a-cp-0 uid-Machine/a-cp-0"]);
  const audit = auditCloud([tagged("instance", "i-1", "Machine/a-cp-0", {}, "running")], new Map([["default/a", "u-a"]]), owners);
  assert.deepEqual(audit, { leaks: [], duplicates: [], settling: [] });
});

test("a host failure is survivable for any worker, and for a control-plane machine only of a whole, Ready control plane of three", () => {
  const cluster = (name: string, replicas: number, ready: number, deleting = false): SoakCluster => ({
    metadata: { name, uid: `u-${name}`, ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}) },
    spec: { kubernetesVersion: "v1.30.2", controlPlane: { replicas } },
    status: { controlPlane: { ready, replicas } },
  });
  const instance = (id: string, name: string, role: string, state = "running"): SoakResource => ({ kind: "instance", id, state, tags: { "slipway.dev/cluster": `default/${name}`, "slipway.dev/role": role } });
  const clusters = [cluster("one", 1, 1), cluster("three", 3, 3), cluster("rolling", 3, 2), cluster("gone", 3, 3, true)];
  const resources = [
    instance("i-one-cp", "one", "control-plane"),
    instance("i-one-w", "one", "worker"),
    instance("i-three-cp", "three", "control-plane"),
    instance("i-three-w", "three", "worker", "pending"),
    instance("i-rolling-cp", "rolling", "control-plane"),
    instance("i-gone-w", "gone", "worker"),
    { kind: "network", id: "vpc-1", state: "available", tags: { "slipway.dev/cluster": "default/one" } },
  ];
  assert.deepEqual(survivableVictims(resources, clusters).map((r) => r.id), ["i-one-w", "i-three-cp"]);
});
