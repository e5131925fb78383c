import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { coreKinds, defaultRegistry, rbacKinds, slipwayKinds } from "./kinds.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every sub-schema of a JSON schema, with where it sits. */
function* walk(schema: Json, path: string): Generator<[string, { [key: string]: Json }]> {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return;
  yield [path, schema];
  const properties = schema.properties;
  if (properties && typeof properties === "object" && !Array.isArray(properties)) {
    for (const [name, sub] of Object.entries(properties)) yield* walk(sub, `${path}.${name}`);
  }
  if (schema.items) yield* walk(schema.items, `${path}[]`);
  if (typeof schema.additionalProperties === "object") yield* walk(schema.additionalProperties, `${path}{}`);
}

const registry = defaultRegistry();

describe("the registry of kinds", () => {
  it("serves the core and slipway kinds under their plural names", () => {
    assert.deepEqual(
      registry.all().map((k) => [k.group, k.version, k.kind, k.plural, k.shortNames.join(","), k.namespaced]),
      [
        ["", "v1", "Namespace", "namespaces", "ns", false],
        ["", "v1", "Secret", "secrets", "", true],
        ["", "v1", "ConfigMap", "configmaps", "cm", true],
        ["", "v1", "Event", "events", "ev", true],
        ["", "v1", "ServiceAccount", "serviceaccounts", "sa", true],
        ["rbac.authorization.k8s.io", "v1", "Role", "roles", "", true],
        ["rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "", true],
        ["rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "", false],
        ["rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", "", false],
        ["slipway.dev", "v1alpha1", "Connection", "connections", "conn", true],
        ["slipway.dev", "v1alpha1", "Cluster", "clusters", "cl", true],
        ["slipway.dev", "v1alpha1", "Infrastructure", "infrastructures", "infra", true],
        ["slipway.dev", "v1alpha1", "MachinePool", "machinepools", "mp", true],
        ["slipway.dev", "v1alpha1", "Machine", "machines", "ma", true],
        ["slipway.dev", "v1alpha1", "BootstrapConfig", "bootstrapconfigs", "bc", true],
        ["slipway.dev", "v1alpha1", "SimMachinePool", "simmachinepools", "smp", true],
        ["slipway.dev", "v1alpha1", "HostMachinePool", "hostmachinepools", "hmp", true],
        ["slipway.dev", "v1alpha1", "Operation", "operations", "op", true],
        ["slipway.dev", "v1alpha1", "Lease", "leases", "ls", true],
        ["slipway.dev", "v1alpha1", "ClusterTemplate", "clustertemplates", "ct", false],
        ["slipway.dev", "v1alpha1", "ResourceSync", "resourcesyncs", "rsync", true],
        ["slipway.dev", "v1alpha1", "LogicalCloud", "logicalclouds", "lc", true],
        ["slipway.dev", "v1alpha1", "Host", "hosts", "", true],
        ["slipway.dev", "v1alpha1", "Addon", "addons", "", true],
        ["slipway.dev", "v1alpha1", "Realm", "realms", "", false],
        ["slipway.dev", "v1alpha1", "RealmUser", "realmusers", "", false],
        ["slipway.dev", "v1alpha1", "OIDCClient", "oidcclients", "", true],
        ["slipway.dev", "v1alpha1", "Platform", "platforms", "", true],
      ],
    );
    assert.equal(registry.byKind("slipway.dev/v1alpha1", "Cluster")?.plural, "clusters");
    assert.equal(registry.byPlural("", "v1", "secrets")?.sensitive, true);
    assert.deepEqual(registry.groupVersions(), [
      { group: "", version: "v1" },
      { group: "rbac.authorization.k8s.io", version: "v1" },
      { group: "slipway.dev", version: "v1alpha1" },
    ]);
    assert.equal(coreKinds.length + rbacKinds.length + slipwayKinds.length, registry.all().length);
  });

  it("has no short name twice", () => {
    const shortNames = registry.all().flatMap((k) => k.shortNames);
    assert.equal(new Set(shortNames).size, shortNames.length);
  });
});

for (const kind of registry.all()) {
  describe(`${kind.kind} schema as published`, () => {
    const published = JSON.parse(JSON.stringify(kind.schema)) as Json;
    const nodes = [...walk(published, kind.kind)];

    it("compiles with TypeBox (every type in it can be checked)", () => {
      assert.doesNotThrow(() => TypeCompiler.Compile(kind.schema));
    });

    it("describes every property", () => {
      const undocumented = nodes
        .filter(([path]) => path !== kind.kind && !path.endsWith("[]") && !path.endsWith("{}"))
        .filter(([, node]) => typeof node.description !== "string" || node.description.length === 0)
        .map(([path]) => path);
      assert.deepEqual(undocumented, []);
    });

    it("is structural: no patternProperties, $ref or anyOf/oneOf/allOf, and every node has a type", () => {
      const text = JSON.stringify(published);
      for (const keyword of ["patternProperties", "$ref", "anyOf", "oneOf", "allOf", "const"]) {
        assert.ok(!text.includes(`"${keyword}"`), `${kind.kind} schema uses ${keyword}`);
      }
      // As in Kubernetes, an int-or-string node is the one that carries no type.
      const untyped = nodes.filter(([, node]) => typeof node.type !== "string" && node["x-kubernetes-int-or-string"] !== true).map(([path]) => path);
      assert.deepEqual(untyped, []);
    });

    it("gives every enum a string type", () => {
      for (const [path, node] of nodes) {
        if (node.enum !== undefined) assert.equal(node.type, "string", path);
      }
    });

    it("rejects unknown fields at the top and in metadata", () => {
      const check = TypeCompiler.Compile(kind.schema);
      assert.equal(check.Check({ apiVersion: "x", kind: kind.kind, metadata: { name: "a" }, extra: 1 }), false);
      const errors = [...check.Errors({ metadata: { name: "a", nickname: "b" } })].map((e) => e.path);
      assert.ok(errors.includes("/metadata/nickname"), JSON.stringify(errors));
    });

    it("has printer columns, each described and typed, and an AGE column (events show LAST SEEN, roles CREATED AT as kubectl does)", () => {
      const role = kind.kind === "Role" || kind.kind === "ClusterRole";
      const age = kind.printerColumns.find((c) => c.name === (kind.kind === "Event" ? "LAST SEEN" : role ? "CREATED AT" : "AGE"));
      assert.equal(age?.type, role ? "string" : "date");
      for (const column of kind.printerColumns) {
        assert.ok(column.description.length > 0, column.name);
        assert.ok(["string", "integer", "number", "boolean", "date"].includes(column.type), column.name);
        assert.match(column.jsonPath, /^\.[A-Za-z]/, column.name);
      }
    });
  });
}
