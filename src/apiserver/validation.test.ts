import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { parseAllDocuments } from "yaml";
import { defaultRegistry } from "../api/kinds.ts";
import type { KubeObject } from "../api/meta.ts";
import { applyDefaults } from "./validation.ts";

const registry = defaultRegistry();

/** Objects of every kind, sparse enough that their defaults apply, with statuses that must be left alone. */
function samples(): KubeObject[] {
  const examples = parseAllDocuments(readFileSync(new URL("../../examples/quickstart.yaml", import.meta.url), "utf8")).map((d) => d.toJS() as KubeObject);
  const minimal = registry.all().map((def) => ({
    apiVersion: def.group ? `${def.group}/${def.version}` : def.version,
    kind: def.kind,
    metadata: { name: "x", namespace: "default", labels: { a: "b" } },
    spec: {},
    status: { phase: "Provisioning", conditions: [{ type: "Ready", status: "False" }] },
  }));
  const sparseCluster = {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: "c", namespace: "default" },
    spec: { controlPlane: { connection: "east", machineType: "s1.medium" }, network: { podCIDR: "10.200.0.0/16" }, workers: [{ name: "a", connection: "east", machineType: "s1.small" }] },
    status: { steps: [{ name: "Validate", outcome: "Succeeded" }], controlPlane: { desired: 1, ready: 0 } },
  };
  return [...examples, ...minimal, sparseCluster as KubeObject];
}

describe("applyDefaults", () => {
  it("gives every kind exactly the defaults its full schema gives", () => {
    for (const object of samples()) {
      const def = registry.byKind(object.apiVersion, object.kind);
      assert.ok(def, `${object.apiVersion} ${object.kind} is registered`);
      const expected = Value.Default(def.schema, structuredClone(object));
      const actual = applyDefaults(def.schema, structuredClone(object));
      assert.deepEqual(actual, expected, `${object.kind} ${object.metadata.name}`);
    }
  });

  it("for a status write, gives the defaults of the status only", () => {
    const def = registry.byKind("slipway.dev/v1alpha1", "Cluster")!;
    const sparse = samples().at(-1)!;
    const withDefaultedStatus = (status: unknown) => {
      const schema = { ...def.schema, properties: { ...def.schema.properties, status: Type.Object({ note: Type.String({ default: "none" }), phase: Type.Optional(Type.String()) }) } };
      return applyDefaults(schema, { ...structuredClone(sparse), status }, { statusOnly: true }) as { spec: unknown; status: unknown };
    };
    const defaulted = withDefaultedStatus({ phase: "Running" });
    assert.deepEqual(defaulted.status, { phase: "Running", note: "none" });
    assert.deepEqual(defaulted.spec, sparse.spec, "the spec is left as it is");
    const full = applyDefaults(def.schema, structuredClone(sparse)) as { spec: { controlPlane: { replicas?: number } } };
    assert.equal(full.spec.controlPlane.replicas, 1, "a whole write defaults the spec");
  });

  it("fills in the defaults of a sparse cluster and leaves its status as it was", () => {
    const cluster = samples().at(-1)!;
    const def = registry.byKind(cluster.apiVersion, cluster.kind)!;
    type Defaulted = {
      spec: {
        controlPlane: { replicas: number };
        workers: Array<{ replicas: number }>;
        network: { podCIDR: string; serviceCIDR: string };
      };
      status: unknown;
    };
    const defaulted = applyDefaults(def.schema, structuredClone(cluster)) as Defaulted;
    assert.equal(defaulted.spec.controlPlane.replicas, 1);
    assert.equal(defaulted.spec.workers[0]?.replicas, 1);
    assert.equal(defaulted.spec.network.podCIDR, "10.200.0.0/16");
    assert.equal(defaulted.spec.network.serviceCIDR, "10.96.0.0/12");
    assert.deepEqual(defaulted.status, cluster.status);
  });
});
