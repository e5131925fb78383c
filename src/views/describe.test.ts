import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { MachineObject } from "../api/kinds.ts";
import { clusterSummary, clusterTree, describeCluster, type TreeNode } from "./describe.ts";
import { family } from "./testing.ts";

/** `label ready reason` per node, indented by depth. */
function outline(node: TreeNode, depth = 0): string[] {
  return [`${"  ".repeat(depth)}${node.label} ${node.ready} ${node.reason}`, ...node.children.flatMap((child) => outline(child, depth + 1))];
}

describe("the describe view", () => {
  it("holds the cluster, its infrastructure, its control plane and its pools with their machines, each with readiness and reason", () => {
    assert.deepEqual(outline(clusterTree(family())), [
      "Cluster/tree False NotReady",
      "  Infrastructure/tree-east True AllTrue",
      "  ControlPlane True Ready",
      "    Machine/tree-cp-0 True NodeReady",
      "  Workers False Scaling",
      "    MachinePool/tree-east False ScalingUp",
      "      Machine/tree-east-0 True Running",
      "      Machine/tree-east-1 False BootFailed",
    ]);
  });

  it("dates each row from its readiness, and says why in the message", () => {
    const tree = clusterTree(family());
    assert.deepEqual([tree.since, tree.message], ["2026-01-01T00:09:15Z", "waiting for 1 worker(s)"]);
    const pool = tree.children[2]!.children[0]!;
    assert.deepEqual([pool.since, pool.message], ["2026-01-01T00:00:00Z", "1/2 machines ready"]);
    // Machines Ready but not yet for minReadySeconds, or of an older template, are told apart.
    const f = family();
    f.pools[0]!.status = { phase: "ScalingUp", replicas: 3, readyReplicas: 2, availableReplicas: 1, updatedReplicas: 2 };
    assert.equal(clusterTree(f).children[2]!.children[0]!.message, "2/2 machines ready, 1 available, 2 up to date");
    assert.equal(pool.children[1]!.message, "the instance did not boot within 5m");
  });

  it("shows machines no pool claims under Workers, and a cluster being deleted as Deleting", () => {
    const f = family();
    const stray = { ...f.machines[1]!, metadata: { ...f.machines[1]!.metadata, name: "stray", labels: {}, ownerReferences: [] }, spec: { ...f.machines[1]!.spec, pool: "gone" } } as MachineObject;
    f.machines.push(stray);
    f.cluster.metadata.deletionTimestamp = "2026-01-01T00:09:00Z";
    delete f.cluster.status!.reason;
    const tree = clusterTree(f);
    assert.equal(tree.reason, "Deleting");
    assert.deepEqual(tree.children[2]!.children.map((c) => c.label), ["MachinePool/tree-east", "Machine/stray"]);
  });

  it("sums up phase, version and where the cluster's API and kubeconfig are", () => {
    const f = family();
    f.cluster.status = { ...f.cluster.status!, controlPlaneEndpoint: { host: "10.0.0.1", port: 6443 }, kubeconfigSecretName: "tree-kubeconfig" };
    assert.deepEqual(clusterSummary(f.cluster), { phase: "Provisioning", version: "v1.31.2", endpoint: "10.0.0.1:6443", kubeconfigSecretName: "tree-kubeconfig" });
    assert.deepEqual(describeCluster(f).conditions.map((c) => c.type), ["Validated", "ControlPlaneReady", "WorkersReady", "Ready"]);
  });
});
