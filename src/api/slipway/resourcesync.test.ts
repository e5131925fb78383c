import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { admit, admitted, cell, manifest } from "../testing.ts";
import { resourceSyncKind, type ResourceSyncObject } from "./resourcesync.ts";

function sync(spec: Record<string, unknown>): ResourceSyncObject {
  return manifest(resourceSyncKind, "demo", spec);
}

const configMap = (name: string, namespace?: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, ...(namespace ? { namespace } : {}) }, data: {} });
const fields = (spec: Record<string, unknown>) => admit(resourceSyncKind, sync(spec)).errors.map((e) => e.field);

describe("ResourceSync", () => {
  it("accepts manifests for clusters named or selected, RBAC names with colons included", () => {
    admitted(
      resourceSyncKind,
      sync({
        clusters: [{ name: "one" }],
        clusterSelector: { matchExpressions: [{ key: "tier", operator: "In", values: ["edge"] }] },
        resources: [configMap("a", "demo"), { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "system:demo" }, rules: [] }],
        resourcesFrom: [{ kind: "ConfigMap", name: "more" }],
      }),
    );
  });

  it("needs clusters to deliver to", () => {
    assert.deepEqual(fields({ resources: [configMap("a")] }), ["spec.clusters"]);
  });

  it("names each manifest it could not apply, and a manifest declared twice", () => {
    assert.deepEqual(
      fields({
        clusters: [{ name: "one" }, { name: "one" }],
        resources: [configMap("a"), { apiVersion: "v1", kind: "Namespace", metadata: { name: "Bad_Name" } }, { kind: "ConfigMap", metadata: {} }, configMap("a"), configMap("b", "NOPE")],
      }),
      ["spec.clusters[1].name", "spec.resources[1].metadata.name", "spec.resources[1].metadata.name", "spec.resources[2].apiVersion", "spec.resources[2].metadata.name", "spec.resources[3]", "spec.resources[4].metadata.namespace"],
    );
  });

  it("refuses a selector operator Kubernetes does not have", () => {
    assert.deepEqual(fields({ clusterSelector: { matchExpressions: [{ key: "tier", operator: "Near" }] } }), ["spec.clusterSelector.matchExpressions[0].operator"]);
    assert.deepEqual(fields({ clusterSelector: { matchExpressions: [{ key: "tier", operator: "In" }] } }), ["spec.clusterSelector.matchExpressions[0].values"]);
  });

  it("shows synced of targeted clusters", () => {
    const object = sync({ clusters: [{ name: "one" }], resources: [configMap("a")] });
    object.status = { phase: "Degraded", targets: 3, synced: 2 };
    assert.equal(cell(resourceSyncKind, "CLUSTERS", object), "2/3");
    assert.equal(cell(resourceSyncKind, "OBJECTS", object), 1);
  });
});
