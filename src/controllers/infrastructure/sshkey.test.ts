import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createPrivateKey, createPublicKey, sign, verify } from "node:crypto";
import { fileURLToPath } from "node:url";
import { secretKind } from "../../api/core.ts";
import type { SecretObject } from "../../api/kinds.ts";
import { Client } from "../../runtime/client.ts";
import { memoryObjects } from "../../runtime/testing.ts";
import { sshFingerprint } from "../../simcloud/keypair-service.ts";
import { ensureClusterSshKey, generateSshKeyPair, SSH_PRIVATE_KEY, SSH_PUBLIC_KEY, SSH_SECRET_TYPE } from "./sshkey.ts";

/** Reads the fields of an unencrypted OpenSSH ed25519 private key back. */
function parseOpenSshPrivateKey(pem: string): { publicKey: Buffer; seed: Buffer; comment: string; padding: Buffer } {
  const body = Buffer.from(pem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, ""), "base64");
  let offset = 0;
  const magic = "openssh-key-v1\0";
  assert.equal(body.subarray(0, magic.length).toString("latin1"), magic);
  offset = magic.length;
  const string = (from: Buffer) => {
    const length = from.readUInt32BE(offset);
    const value = from.subarray(offset + 4, offset + 4 + length);
    offset += 4 + length;
    return value;
  };
  assert.equal(string(body).toString(), "none");
  assert.equal(string(body).toString(), "none");
  assert.equal(string(body).length, 0);
  assert.equal(body.readUInt32BE(offset), 1);
  offset += 4;
  string(body); // public key blob
  const section = string(body);
  assert.equal(offset, body.length);
  offset = 0;
  assert.equal(section.readUInt32BE(0), section.readUInt32BE(4), "check integers match");
  offset = 8;
  assert.equal(string(section).toString(), "ssh-ed25519");
  const publicKey = string(section);
  const secret = string(section);
  const comment = string(section).toString();
  return { publicKey, seed: secret.subarray(0, 32), comment, padding: section.subarray(offset) };
}

describe("generateSshKeyPair", () => {
  it("writes an OpenSSH public key line the cloud accepts and the matching OpenSSH private key", () => {
    const pair = generateSshKeyPair("demo@slipway");
    assert.match(pair.publicKey, /^ssh-ed25519 AAAA[A-Za-z0-9+/=]+ demo@slipway$/);
    assert.match(sshFingerprint(pair.publicKey), /^SHA256:/);
    assert.match(pair.privateKey, /^-----BEGIN OPENSSH PRIVATE KEY-----\n[\s\S]+\n-----END OPENSSH PRIVATE KEY-----\n$/);

    const parsed = parseOpenSshPrivateKey(pair.privateKey);
    assert.equal(parsed.comment, "demo@slipway");
    assert.equal(parsed.padding.length < 8, true);
    assert.deepEqual([...parsed.padding], parsed.padding.length ? Array.from({ length: parsed.padding.length }, (_, i) => i + 1) : []);
    const blob = Buffer.from(pair.publicKey.split(" ")[1]!, "base64");
    assert.deepEqual(blob.subarray(blob.length - 32), parsed.publicKey);

    // The private key signs what the public key verifies.
    const privateKey = createPrivateKey({
      key: { kty: "OKP", crv: "Ed25519", d: parsed.seed.toString("base64url"), x: parsed.publicKey.toString("base64url") },
      format: "jwk",
    });
    const publicKey = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: parsed.publicKey.toString("base64url") }, format: "jwk" });
    const message = Buffer.from("slipway");
    assert.equal(verify(null, message, publicKey, sign(null, message, privateKey)), true);
  });

  it("makes a new key every time", () => {
    assert.notEqual(generateSshKeyPair("a").publicKey, generateSshKeyPair("a").publicKey);
  });
});

describe("generateSshKeyPair under garbage collection", () => {
  // With a JWK export of the new key, a collection during the export that finalised the key's generation
  // job hung the process (Node 20 takes the key's lock in both); a 1 MB young generation makes such
  // collections frequent, and this loop hung within 20,000 keys in about half of the tries.
  it("makes 20,000 keys in a process that collects its young generation every megabyte", () => {
    const module = fileURLToPath(new URL("./sshkey.ts", import.meta.url));
    const script = `import { generateSshKeyPair } from ${JSON.stringify(module)};
      const kept = [];
      for (let i = 0; i < 20000; i++) { kept.push(generateSshKeyPair("k" + i).publicKey); if (kept.length > 5000) kept.length = 0; }
      process.stdout.write("made");`;
    const child = spawnSync(process.execPath, ["--max-semi-space-size=1", "--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 90_000 });
    assert.equal(child.signal, null, `the process did not end by itself (hung?): ${child.stderr}`);
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout, "made");
  });
});

describe("ensureClusterSshKey", () => {
  it("stores the key once, owned by the cluster, and every caller gets the stored one", async () => {
    const client = new Client(await memoryObjects());
    const owner = { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "demo", uid: "uid-demo" };
    const [a, b] = await Promise.all([
      ensureClusterSshKey(client, "default", "demo", owner),
      ensureClusterSshKey(client, "default", "demo", owner),
    ]);
    assert.equal(a, b);
    assert.equal(await ensureClusterSshKey(client, "default", "demo", owner), a);

    const secret = await client.of<SecretObject>(secretKind).get("default", "demo-ssh");
    assert.equal(secret.type, SSH_SECRET_TYPE);
    assert.deepEqual(secret.metadata.ownerReferences, [{ ...owner, controller: true, blockOwnerDeletion: true }]);
    assert.equal(Buffer.from(secret.data![SSH_PUBLIC_KEY]!, "base64").toString(), a);
    assert.match(Buffer.from(secret.data![SSH_PRIVATE_KEY]!, "base64").toString(), /OPENSSH PRIVATE KEY/);
  });
});
