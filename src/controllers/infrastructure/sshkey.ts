// The cluster's SSH key: an ed25519 key pair kept in the Secret `<cluster>-ssh` (keys `ssh-privatekey`, in
// OpenSSH's own private-key format, and `ssh-publickey`, an `ssh-ed25519 AAAA…` line), owned by the
// Cluster. Made once; every connection's Infrastructure, a retry or another replica reads what the first
// one wrote, so all of a cluster's machines accept the same key.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import type { OwnerReferenceT } from "../../api/meta.ts";
import type { SecretObject } from "../../api/kinds.ts";
import { secretKind } from "../../api/core.ts";
import { createIfAbsent } from "../../api/presence.ts";
import type { Client } from "../../runtime/client.ts";
import { LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { names } from "../../api/slipway/names.ts";

export const SSH_PRIVATE_KEY = "ssh-privatekey";
export const SSH_PUBLIC_KEY = "ssh-publickey";
/** The Secret type Kubernetes gives SSH credentials (it requires `ssh-privatekey`). */
export const SSH_SECRET_TYPE = "kubernetes.io/ssh-auth";

const KEY_TYPE = "ssh-ed25519";

export class SshKeySecretError extends Error {
  override readonly name = "SshKeySecretError";
}

export interface SshKeyPair {
  /** `-----BEGIN OPENSSH PRIVATE KEY-----` … (unencrypted). */
  privateKey: string;
  /** `ssh-ed25519 AAAA… comment`. */
  publicKey: string;
}

/** SSH wire encoding of a string: a 32-bit big-endian length, then the bytes. */
function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === "string" ? Buffer.from(value, "utf8") : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function uint32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value >>> 0);
  return bytes;
}

/** The public key blob of an ed25519 key: its type, then its 32 bytes. */
function publicBlob(publicKey: Buffer): Buffer {
  return Buffer.concat([sshString(KEY_TYPE), sshString(publicKey)]);
}

/** OpenSSH's private key format ("openssh-key-v1"), unencrypted, as `ssh-keygen -t ed25519` writes it. */
function openSshPrivateKey(seed: Buffer, publicKey: Buffer, comment: string): string {
  const check = randomBytes(4).readUInt32BE(0);
  let section = Buffer.concat([
    uint32(check),
    uint32(check),
    sshString(KEY_TYPE),
    sshString(publicKey),
    sshString(Buffer.concat([seed, publicKey])),
    sshString(comment),
  ]);
  // Padded with 1, 2, 3, … to the cipher's block size (8 for "none").
  const padding = (8 - (section.length % 8)) % 8;
  section = Buffer.concat([section, Buffer.from(Array.from({ length: padding }, (_, i) => i + 1))]);
  const body = Buffer.concat([
    Buffer.from("openssh-key-v1\0", "latin1"),
    sshString("none"),
    sshString("none"),
    sshString(""),
    uint32(1),
    sshString(publicBlob(publicKey)),
    sshString(section),
  ]);
  const lines = body.toString("base64").match(/.{1,70}/g) ?? [];
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join("\n")}\n-----END OPENSSH PRIVATE KEY-----\n`;
}

/** What precedes an ed25519 key's 32 bytes in its PKCS #8 and SPKI DER forms (RFC 8410): fixed for this curve. */
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** The 32 key bytes of an ed25519 key's DER form. */
function keyBytes(der: Buffer, prefix: Buffer, what: string): Buffer {
  if (der.length !== prefix.length + 32 || !der.subarray(0, prefix.length).equals(prefix)) throw new SshKeySecretError(`node:crypto exported an ed25519 ${what} key in an unexpected form`);
  return der.subarray(prefix.length);
}

/**
 * A new ed25519 key pair in the formats ssh and cloud-init read. The key bytes are read from the DER
 * forms, not from a JWK: Node 20 exports an ed25519 JWK holding the key's lock while it makes strings,
 * and a garbage collection then that finalises the key's generation job takes the same lock — the
 * process hangs (seen once in a 10,000-cluster run).
 */
export function generateSshKeyPair(comment: string): SshKeyPair {
  const pair = generateKeyPairSync("ed25519");
  const seed = keyBytes(pair.privateKey.export({ format: "der", type: "pkcs8" }), PKCS8_PREFIX, "private");
  const publicKey = keyBytes(pair.publicKey.export({ format: "der", type: "spki" }), SPKI_PREFIX, "public");
  return {
    privateKey: openSshPrivateKey(seed, publicKey, comment),
    publicKey: `${KEY_TYPE} ${publicBlob(publicKey).toString("base64")} ${comment}`,
  };
}

function readKey(secret: SecretObject, key: string): string {
  const value = secret.data?.[key];
  if (value === undefined) throw new SshKeySecretError(`Secret ${secret.metadata.name} has no key ${key}`);
  return Buffer.from(value, "base64").toString("utf8");
}

/** The public key line kept in an SSH key Secret. */
export function readSshPublicKey(secret: SecretObject): string {
  return readKey(secret, SSH_PUBLIC_KEY).trim();
}

/**
 * The cluster's SSH public key: from the Secret `<cluster>-ssh` when it exists, otherwise from a new key
 * pair stored there, owned by `owner` (the Cluster). Two callers racing both end up with the stored key.
 */
export async function ensureClusterSshKey(client: Client, namespace: string, cluster: string, owner: OwnerReferenceT): Promise<string> {
  const secrets = client.of<SecretObject>(secretKind);
  const name = names.sshSecret(cluster);
  const existing = await secrets.tryGet(namespace, name);
  if (existing) return readSshPublicKey(existing);
  const pair = generateSshKeyPair(`${cluster}@slipway`);
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      namespace,
      labels: { [LABEL_CLUSTER]: cluster },
      ownerReferences: [{ ...owner, controller: true, blockOwnerDeletion: true }],
    },
    type: SSH_SECRET_TYPE,
    data: {
      [SSH_PRIVATE_KEY]: Buffer.from(pair.privateKey, "utf8").toString("base64"),
      [SSH_PUBLIC_KEY]: Buffer.from(pair.publicKey, "utf8").toString("base64"),
    },
  } as SecretObject;
  return readSshPublicKey((await createIfAbsent(() => secrets.create(secret))) ?? (await secrets.get(namespace, name)));
}
