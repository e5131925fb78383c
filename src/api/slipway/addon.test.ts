import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { admit, admitted, cell, manifest } from "../testing.ts";
import { addonKind, type AddonObject } from "./addon.ts";

function addon(spec: Record<string, unknown>, name = "dashboard"): AddonObject {
  return manifest(addonKind, name, spec);
}

const problems = (spec: Record<string, unknown>, name?: string) => admit(addonKind, addon(spec, name)).errors.map((e) => `${e.field}: ${e.message}`);

describe("Addon", () => {
  it("accepts a bundle for a cluster, with parameters, dependencies and services", () => {
    admitted(
      addonKind,
      addon({
        clusterName: "demo",
        bundle: { name: "dashboard", version: "2.7.0" },
        parameters: { title: "Team", "cluster.size": "2" },
        dependsOn: ["metrics"],
        services: [{ name: "grafana", namespace: "monitoring", port: 80, label: "Grafana", icon: "chart" }],
      }),
    );
  });

  it("needs a cluster and exactly one source of manifests", () => {
    assert.deepEqual(problems({ bundle: { name: "dashboard" } }), ["spec.clusterName: Required value: name a cluster, or give a clusterSelector"]);
    assert.deepEqual(problems({ clusterName: "demo" }), ["spec.bundle: Required value: one of bundle, manifests or configMapRef"]);
    assert.match(problems({ clusterName: "demo", bundle: { name: "dashboard" }, configMapRef: { name: "m" } })[0]!, /^spec\.configMapRef: Invalid value: "set": only one of bundle, manifests or configMapRef may be given \(spec\.bundle is\)/);
  });

  it("refuses itself or a duplicate as a dependency, bad parameter names and duplicate services", () => {
    const found = problems({
      clusterName: "demo",
      bundle: { name: "dashboard" },
      dependsOn: ["dashboard", "metrics", "metrics"],
      parameters: { "1st": "x" },
      services: [
        { name: "ui", namespace: "a" },
        { name: "ui", namespace: "b" },
      ],
    });
    assert.deepEqual(
      found.map((p) => p.split(":")[0]),
      ["spec.parameters.1st", "spec.dependsOn[0]", "spec.dependsOn[2]", "spec.services[1].name"],
    );
  });

  it("has a DNS label for a name (it goes into labels and ResourceSync names)", () => {
    assert.ok((addonKind.strategy?.validateName?.("dash.board") ?? []).length > 0);
    assert.deepEqual(addonKind.strategy?.validateName?.("dashboard"), []);
  });

  it("shows its source, version and clusters ready", () => {
    const ready = { ...addon({ clusterName: "demo", bundle: { name: "dashboard" } }), status: { phase: "Ready" as const, version: "2.7.0", clusters: [{ name: "demo", phase: "Ready" as const }, { name: "two", phase: "Installing" as const }] } };
    assert.equal(cell(addonKind, "SOURCE", ready), "bundle dashboard");
    assert.equal(cell(addonKind, "VERSION", ready), "2.7.0");
    assert.equal(cell(addonKind, "CLUSTERS", ready), "1/2");
    assert.equal(cell(addonKind, "SOURCE", addon({ clusterName: "demo", manifests: [] })), "inline");
  });
});
