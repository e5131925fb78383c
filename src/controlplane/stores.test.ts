import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultRegistry } from "../api/kinds.ts";
import { Registry, type KindDefinition } from "../api/registry.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { CREDENTIALS_KEY } from "../apiserver/storage-keys.ts";
import { EncryptedStore, loadEncryptionKey } from "../store/encryption.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { ensureCredentials } from "./credentials.ts";
import { openStore } from "./stores.ts";

const dir = mkdtempSync(join(tmpdir(), "slipway-stores-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const registry = defaultRegistry();
const namespaces = registry.byKind("v1", "Namespace")!;
const secrets = registry.byKind("v1", "Secret")!;
const connections = registry.byKind("slipway.dev/v1alpha1", "Connection")!;
const PASSWORD = "correct-horse-battery-staple";
const PASSWORD_BASE64 = Buffer.from(PASSWORD).toString("base64");

/** The prefixes `slipway up` encrypted before they were derived from the kinds. */
const PREFIXES_BEFORE = ["/registry/core/secrets/", "/slipway/"];

function dataDir(name: string): string {
  return join(dir, name);
}

describe("the control plane's store", () => {
  it("reads what was encrypted before encryption followed the kinds: Secrets and the credentials", async () => {
    const data = dataDir("upgrade");
    const key = loadEncryptionKey({ dataDir: data, env: process.env });
    const before = new EncryptedStore(SqliteStore.open(join(data, "state.db")), { key, prefixes: PREFIXES_BEFORE });
    const old = new ObjectService(registry, before);
    await old.create(namespaces, undefined, { metadata: { name: "default" } });
    await old.create(secrets, "default", { metadata: { name: "db" }, stringData: { password: PASSWORD } });
    const credentials = await ensureCredentials(before);
    await before.close();

    const store = await openStore({ kind: "sqlite", dataDir: data, registry });
    try {
      const objects = new ObjectService(registry, store);
      const secret = await objects.get(secrets, "default", "db");
      assert.deepEqual(secret.data, { password: PASSWORD_BASE64 });
      assert.deepEqual(await ensureCredentials(store), credentials, "the same CA and admin token");
      await objects.create(secrets, "default", { metadata: { name: "api" }, stringData: { token: PASSWORD } });
    } finally {
      await store.close();
    }
    const raw = SqliteStore.open(join(data, "state.db"));
    try {
      for (const k of ["/registry/core/secrets/default/db", "/registry/core/secrets/default/api", CREDENTIALS_KEY]) {
        const value = (await raw.get(k))?.value ?? "";
        assert.match(value, /^enc:v1:/, k);
        assert.ok(!value.includes(PASSWORD) && !value.includes(PASSWORD_BASE64) && !value.includes(credentials.adminToken), k);
      }
    } finally {
      await raw.close();
    }
  });

  it("encrypts the objects of every kind marked sensitive, and only those", async () => {
    const data = dataDir("by-kind");
    // Connections, made sensitive for this test: their objects are sealed, while Namespaces stay in clear.
    const sensitiveConnections: KindDefinition = { ...connections, sensitive: true };
    const custom = new Registry(registry.all().map((def) => (def === connections ? sensitiveConnections : def)));
    const store = await openStore({ kind: "sqlite", dataDir: data, registry: custom });
    try {
      const objects = new ObjectService(custom, store);
      await objects.create(namespaces, undefined, { metadata: { name: "default" } });
      await objects.create(sensitiveConnections, "default", { metadata: { name: "east" }, spec: { provider: "sim", region: "sim-east-1" } });
      assert.equal(((await objects.get(sensitiveConnections, "default", "east")).spec as { region: string }).region, "sim-east-1");
    } finally {
      await store.close();
    }
    const raw = SqliteStore.open(join(data, "state.db"));
    try {
      assert.match((await raw.get("/registry/slipway.dev/connections/default/east"))?.value ?? "", /^enc:v1:/);
      assert.match((await raw.get("/registry/core/namespaces/default"))?.value ?? "", /^\{/);
    } finally {
      await raw.close();
    }
  });
});
