import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { admit, admitted, cell, manifest } from "../testing.ts";
import { logicalCloudKind, type LogicalCloudObject } from "./logicalcloud.ts";

function cloud(spec: Record<string, unknown>): LogicalCloudObject {
  return manifest(logicalCloudKind, "team-a", spec);
}
const fields = (spec: Record<string, unknown>, old?: LogicalCloudObject) => admit(logicalCloudKind, cloud(spec), old).errors.map((e) => e.field);

describe("LogicalCloud", () => {
  it("accepts members, users with a role or rules, and a quota", () => {
    admitted(
      logicalCloudKind,
      cloud({ namespace: "team", clusters: [{ name: "one" }], users: [{ name: "alice", role: "edit" }, { name: "ci", rules: [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["get", "patch"] }] }], quota: { pods: "5", "requests.cpu": "2" } }),
    );
  });

  it("names every field it refuses", () => {
    assert.deepEqual(
      fields({
        namespace: "Team_A",
        clusters: [{ name: "one" }, { name: "one" }],
        users: [{ name: "alice" }, { name: "alice", role: "view" }, { name: "bob", rules: [{ apiGroups: [], resources: [], verbs: ["Get"] }] }],
      }),
      ["spec.namespace", "spec.clusters[1].name", "spec.users[0].role", "spec.users[1].name", "spec.users[2].rules[0].verbs[0]", "spec.users[2].rules[0].resources", "spec.users[2].rules[0].apiGroups"],
    );
    assert.deepEqual(fields({ namespace: "team" }), ["spec.clusters"]);
    assert.equal(admit(logicalCloudKind, cloud({ namespace: "team", clusters: [{ name: "one" }], users: [{ name: "alice", role: "owner" }] })).schemaErrors[0]?.[0], "/spec/users/0/role");
  });

  it("keeps its namespace", () => {
    const old = admit(logicalCloudKind, cloud({ namespace: "team", clusters: [{ name: "one" }] })).object;
    assert.deepEqual(fields({ namespace: "other", clusters: [{ name: "one" }] }, old), ["spec.namespace"]);
  });

  it("shows ready of member clusters", () => {
    const object = cloud({ namespace: "team", clusters: [{ name: "one" }], users: [{ name: "alice", role: "edit" }] });
    object.status = { phase: "Instantiating", readyClusters: 1, totalClusters: 3 };
    assert.equal(cell(logicalCloudKind, "CLUSTERS", object), "1/3");
    assert.equal(cell(logicalCloudKind, "USERS", object), 1);
  });
});
