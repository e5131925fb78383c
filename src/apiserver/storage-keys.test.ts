import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultRegistry } from "../api/kinds.ts";
import { Registry, type KindDefinition } from "../api/registry.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { ObjectService } from "./objects.ts";
import { CREDENTIALS_KEY, encryptedPrefixes, kindPrefix, objectKey, StorageLayout } from "./storage-keys.ts";

const registry = defaultRegistry();
const clusters = registry.byKind("slipway.dev/v1alpha1", "Cluster")!;
const namespaces = registry.byKind("v1", "Namespace")!;
const secrets = registry.byKind("v1", "Secret")!;

/** A kind of another group whose objects are secret too. */
const vaults: KindDefinition = { ...secrets, group: "test.slipway.dev", kind: "Vault", plural: "vaults", singular: "vault" };

describe("the storage-key layout", () => {
  it("keeps objects at /registry/<group|core>/<plural>/<namespace>/<name>, cluster-scoped ones without a namespace", () => {
    assert.equal(objectKey(clusters, "default", "demo"), "/registry/slipway.dev/clusters/default/demo");
    assert.equal(objectKey(secrets, "team-a", "db"), "/registry/core/secrets/team-a/db");
    assert.equal(objectKey(namespaces, undefined, "team-a"), "/registry/core/namespaces/team-a");
    assert.equal(kindPrefix(clusters), "/registry/slipway.dev/clusters/");
    assert.equal(kindPrefix(clusters, "default"), "/registry/slipway.dev/clusters/default/");
    assert.equal(kindPrefix(namespaces, "ignored"), "/registry/core/namespaces/", "a cluster-scoped kind has no namespace level");
  });

  it("reads a key back into its kind, namespace and name, and nothing from other keys", () => {
    const layout = new StorageLayout(registry);
    assert.deepEqual(layout.parse("/registry/slipway.dev/clusters/default/demo"), { def: clusters, namespace: "default", name: "demo" });
    assert.deepEqual(layout.parse("/registry/core/namespaces/team-a"), { def: namespaces, name: "team-a" });
    for (const key of [CREDENTIALS_KEY, "/registry/core/pods/default/x", "/registry/slipway.dev/clusters/demo", "/registry/core/namespaces/a/b"]) {
      assert.equal(layout.parse(key), undefined, key);
    }
  });

  it("is where the object service stores objects", async () => {
    const store = SqliteStore.open(":memory:");
    try {
      const objects = new ObjectService(registry, store);
      await objects.create(namespaces, undefined, { metadata: { name: "default" } });
      await objects.create(secrets, "default", { metadata: { name: "db" }, stringData: { password: "x" } });
      assert.deepEqual((await store.list("/registry/")).items.map((kv) => kv.key), ["/registry/core/namespaces/default", "/registry/core/secrets/default/db"]);
    } finally {
      await store.close();
    }
  });

  it("encrypts the kinds marked sensitive and the control plane's own records", () => {
    assert.deepEqual(encryptedPrefixes(registry), ["/registry/core/secrets/", "/registry/slipway.dev/realmusers/", "/slipway/"]);
    const withVault = new Registry([...registry.all(), vaults]);
    assert.deepEqual(encryptedPrefixes(withVault), ["/registry/core/secrets/", "/registry/slipway.dev/realmusers/", "/registry/test.slipway.dev/vaults/", "/slipway/"]);
  });
});
