import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { LogicalCloudObject } from "../api/slipway/logicalcloud.ts";
import { describeLogicalCloud } from "./logicalcloud.ts";

describe("the describe view of a logical cloud", () => {
  it("shows each member cluster and what was made there, and where each user's kubeconfig reaches", () => {
    const cloud: LogicalCloudObject = {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "LogicalCloud",
      metadata: { name: "team-a", namespace: "default" },
      spec: { namespace: "team", clusters: [{ name: "one" }, { name: "ext" }], users: [{ name: "alice", role: "edit" }] },
      status: {
        phase: "Degraded",
        message: "ext: does not answer",
        conditions: [{ type: "Ready", status: "False", reason: "Degraded", message: "ext: does not answer", lastTransitionTime: "2026-11-26T10:00:00Z" }],
        clusters: [
          { name: "ext", state: "Failed", message: "does not answer" },
          { name: "one", state: "Ready", resources: [{ kind: "Namespace", name: "team", state: "Applied" }, { kind: "ResourceQuota", namespace: "team", name: "team-a-quota", state: "Drifted", message: "was deleted in the cluster; created again" }] },
        ],
        users: [{ name: "alice", kubeconfigSecret: "team-a-alice-kubeconfig", clusters: ["one"] }],
      },
    };
    const { tree, users } = describeLogicalCloud(cloud);
    assert.deepEqual([tree.label, tree.ready, tree.reason], ["LogicalCloud/team-a (namespace team)", "False", "Degraded"]);
    assert.deepEqual(tree.children.map((c) => [c.label, c.ready, c.reason, c.message]), [["Cluster/ext", "False", "Failed", "does not answer"], ["Cluster/one", "True", "Ready", ""]]);
    assert.deepEqual(tree.children[1]!.children.map((c) => [c.label, c.reason]), [["Namespace/team", "Applied"], ["ResourceQuota/team/team-a-quota", "Drifted"]]);
    assert.deepEqual(users, [{ name: "alice", kubeconfigSecret: "team-a-alice-kubeconfig", clusters: ["one"] }]);
  });
});
