import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { admit, cell, manifest } from "../testing.ts";
import { clusterTemplateKind, type ClusterTemplateObject } from "./clustertemplate.ts";

function template(spec: Record<string, unknown>): ClusterTemplateObject {
  return manifest(clusterTemplateKind, "small", spec);
}

describe("ClusterTemplate", () => {
  it("is cluster-scoped and shows version, plugin, deprecation and upgrade targets", () => {
    assert.equal(clusterTemplateKind.namespaced, false);
    const { object, errors } = admit(clusterTemplateKind, template({ kubernetesVersion: "v1.30.4", network: { cni: "cilium" }, upgradeTargets: ["small-v131", "small-v132"], deprecated: true }));
    assert.deepEqual(errors, []);
    assert.equal(cell(clusterTemplateKind, "VERSION", object), "v1.30.4");
    assert.equal(cell(clusterTemplateKind, "CNI", object), "cilium");
    assert.equal(cell(clusterTemplateKind, "DEPRECATED", object), "true");
    assert.equal(cell(clusterTemplateKind, "UPGRADES", object), "small-v131,small-v132");
  });

  it("refuses a bad version, overlapping ranges, duplicate addons and malformed upgrade targets, naming each field", () => {
    const { errors } = admit(
      clusterTemplateKind,
      template({
        kubernetesVersion: "1.30",
        network: { podCIDR: "10.0.0.0/16", nodeCIDR: "10.0.0.0/16" },
        addons: [{ name: "monitoring" }, { name: "monitoring" }],
        upgradeTargets: ["Not_A_Name"],
      }),
    );
    assert.deepEqual(errors.map((e) => e.field), ["spec.kubernetesVersion", "spec.network.nodeCIDR", "spec.addons[1].name", "spec.upgradeTargets[0]"]);
  });
});
