import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { recordWatch, runStoreConformance } from "./conformance.ts";
import {
  DecryptionError,
  EncryptedStore,
  InvalidEncryptionKeyError,
  loadEncryptionKey,
} from "./encryption.ts";
import { SqliteStore } from "./sqlite.ts";
import { RevisionMismatchError } from "./store.ts";

// Fixed keys keep the tests reproducible; nonces are still random, as in production.
const KEY = Buffer.alloc(32, 7);
const OTHER_KEY = Buffer.alloc(32, 9);
const SECRETS = "/registry/secrets/";
const SECRET_VALUE = JSON.stringify({ data: { password: "hunter2-correct-horse" } });

const dir = mkdtempSync(join(tmpdir(), "slipway-encryption-"));
after(() => rmSync(dir, { recursive: true, force: true }));

runStoreConformance("encrypted sqlite", async () =>
  new EncryptedStore(SqliteStore.open(":memory:"), { key: KEY, prefixes: ["/conformance/"] }),
);

describe("EncryptedStore", () => {
  it("stores ciphertext that does not contain the secret, and reads the secret back", async () => {
    const inner = SqliteStore.open(":memory:");
    const store = new EncryptedStore(inner, { key: KEY, prefixes: [SECRETS] });
    try {
      const created = await store.create(`${SECRETS}ns/a`, SECRET_VALUE);
      assert.equal(created.value, SECRET_VALUE);
      await store.create(`${SECRETS}ns/b`, SECRET_VALUE);

      const raw = await inner.list(SECRETS);
      for (const kv of raw.items) {
        assert.match(kv.value, /^enc:v1:[A-Za-z0-9+/]+=*$/);
        assert.ok(!kv.value.includes("hunter2"), "the stored value does not reveal the secret");
      }
      assert.notEqual(raw.items[0]?.value, raw.items[1]?.value, "equal secrets are stored differently");

      assert.deepEqual(await store.get(`${SECRETS}ns/a`), created);
      assert.deepEqual(
        (await store.list(SECRETS)).items.map((kv) => kv.value),
        [SECRET_VALUE, SECRET_VALUE],
      );
      const updated = await store.update(`${SECRETS}ns/a`, "new secret", created.modRevision);
      const stale = await store.update(`${SECRETS}ns/a`, "x", created.modRevision).catch((e: unknown) => e);
      assert.ok(stale instanceof RevisionMismatchError);
      assert.equal(stale.current.value, "new secret", "a conflict reports the current value in clear");
      assert.equal((await store.delete(`${SECRETS}ns/a`, updated.modRevision)).value, "new secret");
    } finally {
      await store.close();
    }
  });

  it("leaves values outside the chosen prefixes untouched", async () => {
    const inner = SqliteStore.open(":memory:");
    const store = new EncryptedStore(inner, { key: KEY, prefixes: [SECRETS] });
    try {
      await store.create("/registry/configmaps/ns/a", "plain");
      await store.create("/registry/secretsx/a", "plain too");
      assert.equal((await inner.get("/registry/configmaps/ns/a"))?.value, "plain");
      assert.equal((await inner.get("/registry/secretsx/a"))?.value, "plain too");
    } finally {
      await store.close();
    }
  });

  it("reads values written before encryption was turned on", async () => {
    const inner = SqliteStore.open(":memory:");
    await inner.create(`${SECRETS}old`, "written in clear");
    const store = new EncryptedStore(inner, { key: KEY, prefixes: [SECRETS] });
    try {
      assert.equal((await store.get(`${SECRETS}old`))?.value, "written in clear");
    } finally {
      await store.close();
    }
  });

  it("still reads values sealed under a prefix that is no longer encrypted, and writes new ones in clear", async () => {
    const file = join(dir, "prefix-dropped.db");
    const writer = new EncryptedStore(SqliteStore.open(file), { key: KEY, prefixes: [SECRETS] });
    await writer.create(`${SECRETS}a`, SECRET_VALUE);
    await writer.close();

    const inner = SqliteStore.open(file);
    const reader = new EncryptedStore(inner, { key: KEY, prefixes: [] });
    try {
      const sealed = await reader.get(`${SECRETS}a`);
      assert.equal(sealed?.value, SECRET_VALUE);
      await reader.update(`${SECRETS}a`, "now plain", sealed!.modRevision);
      assert.equal((await inner.get(`${SECRETS}a`))?.value, "now plain");
    } finally {
      await reader.close();
    }
  });

  it("fails with DecryptionError, never garbage, when the key is wrong", async () => {
    const file = join(dir, "wrong-key.db");
    const writer = new EncryptedStore(SqliteStore.open(file), { key: KEY, prefixes: [SECRETS] });
    const start = await writer.revision();
    await writer.create(`${SECRETS}a`, SECRET_VALUE);
    await writer.close();

    const reader = new EncryptedStore(SqliteStore.open(file), { key: OTHER_KEY, prefixes: [SECRETS] });
    try {
      const error = await reader.get(`${SECRETS}a`).catch((e: unknown) => e);
      assert.ok(error instanceof DecryptionError);
      assert.equal(error.key, `${SECRETS}a`);
      assert.match(error.message, /wrong encryption key/);
      assert.ok(!error.message.includes("hunter2") && !error.message.includes("enc:v1"));
      await assert.rejects(reader.list(SECRETS), DecryptionError);

      const w = recordWatch(reader, SECRETS, start);
      await w.until(() => w.error !== undefined, "a DecryptionError");
      assert.ok(w.error instanceof DecryptionError);
      assert.deepEqual(w.events, []);
    } finally {
      await reader.close();
    }
  });

  it("refuses a value moved to another key", async () => {
    const inner = SqliteStore.open(":memory:");
    const store = new EncryptedStore(inner, { key: KEY, prefixes: [SECRETS] });
    try {
      await store.create(`${SECRETS}a`, SECRET_VALUE);
      await inner.create(`${SECRETS}b`, (await inner.get(`${SECRETS}a`))?.value ?? "");
      await assert.rejects(store.get(`${SECRETS}b`), DecryptionError);
    } finally {
      await store.close();
    }
  });

  it("refuses a key that is not 32 bytes", async () => {
    const inner = SqliteStore.open(":memory:");
    try {
      assert.throws(
        () => new EncryptedStore(inner, { key: Buffer.alloc(16), prefixes: [] }),
        InvalidEncryptionKeyError,
      );
    } finally {
      await inner.close();
    }
  });
});

describe("loadEncryptionKey", () => {
  it("takes the key from SLIPWAY_ENCRYPTION_KEY first", () => {
    const env = { SLIPWAY_ENCRYPTION_KEY: KEY.toString("base64") };
    assert.deepEqual(loadEncryptionKey({ env, dataDir: join(dir, "unused") }), KEY);
  });

  it("refuses an environment key that is not base64 of 32 bytes", () => {
    for (const bad of [Buffer.alloc(16).toString("base64"), "not base64!", `${KEY.toString("base64")}AAAA`]) {
      assert.throws(() => loadEncryptionKey({ env: { SLIPWAY_ENCRYPTION_KEY: bad } }), InvalidEncryptionKeyError);
    }
  });

  it("creates a private key file in the data directory once, then reads it back", () => {
    const dataDir = join(dir, "data", "nested");
    const first = loadEncryptionKey({ dataDir, env: {} });
    assert.equal(first.length, 32);
    const file = join(dataDir, "encryption.key");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(loadEncryptionKey({ dataDir, env: {} }), first);
  });

  it("refuses a damaged key file rather than making a new key", () => {
    const dataDir = join(dir, "damaged");
    loadEncryptionKey({ dataDir, env: {} });
    writeFileSync(join(dataDir, "encryption.key"), "short\n");
    assert.throws(() => loadEncryptionKey({ dataDir, env: {} }), InvalidEncryptionKeyError);
  });

  it("needs either the environment variable or a data directory", () => {
    assert.throws(() => loadEncryptionKey({ env: {} }), InvalidEncryptionKeyError);
  });
});
