// The control plane's credentials: made once, the same for every replica, and completed when a newer
// version needs more (the key ServiceAccount tokens are signed with).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CREDENTIALS_KEY } from "../apiserver/storage-keys.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { ensureCredentials } from "./credentials.ts";

describe("the control plane's credentials", () => {
  it("are made once and read back the same by every replica, with the token signing key", async () => {
    const store = SqliteStore.open(":memory:");
    const [one, two] = await Promise.all([ensureCredentials(store), ensureCredentials(store)]);
    assert.deepEqual(one, two);
    assert.match(one.serviceAccountKey.privateKeyPem, /BEGIN PRIVATE KEY/);
    assert.deepEqual(await ensureCredentials(store), one);
    await store.close();
  });

  it("keep the CA and admin token of an older installation and gain a signing key, once", async () => {
    const store = SqliteStore.open(":memory:");
    const older = await ensureCredentials(store);
    const { serviceAccountKey: _key, ...stored } = older;
    const kv = await store.get(CREDENTIALS_KEY);
    await store.update(CREDENTIALS_KEY, JSON.stringify(stored), kv!.modRevision);
    const [one, two] = await Promise.all([ensureCredentials(store), ensureCredentials(store)]);
    assert.deepEqual(one.ca, older.ca);
    assert.equal(one.adminToken, older.adminToken);
    assert.notEqual(one.serviceAccountKey.publicKeyPem, older.serviceAccountKey.publicKeyPem);
    assert.deepEqual(two.serviceAccountKey, one.serviceAccountKey);
    await store.close();
  });
});
