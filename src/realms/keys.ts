// The signing key and cookie keys of a realm, in a Secret of kube-system (encrypted at rest like every
// Secret): made once by whichever replica gets there first, then read by all, so ID tokens verify the
// same on every replica and after a restart. The Secret is owned by the Realm and goes with it.
import { createPrivateKey, generateKeyPair, randomBytes } from "node:crypto";
import { promisify } from "node:util";
import type { JWK } from "jose";
import { secretKind, type SecretObject } from "../api/core.ts";
import { createIfAbsent, deleteIfPresent } from "../api/presence.ts";
import type { RealmObject } from "../api/slipway/realm.ts";
import type { Client } from "../runtime/client.ts";

export const REALM_KEYS_NAMESPACE = "kube-system";

export interface RealmKeys {
  /** The private signing key (RS256), with its kid. */
  signing: JWK;
  /** Keys the realm signs its cookies with. */
  cookies: string[];
}

export function realmKeysSecretName(realm: string): string {
  return `realm-${realm}-keys`;
}

function decode(secret: SecretObject | undefined): RealmKeys | undefined {
  const value = secret?.data?.keys;
  return value === undefined ? undefined : (JSON.parse(Buffer.from(value, "base64").toString("utf8")) as RealmKeys);
}

const generateRsaKey = promisify(generateKeyPair);

async function makeKeys(): Promise<RealmKeys> {
  // The key comes out of its generation as DER and is read back before its JWK is taken: Node 20 exports
  // an RSA JWK holding the key's lock, which the generation job also takes when it is collected — a key
  // exported while its own job is collected hangs the process (see controllers/infrastructure/sshkey.ts).
  const { privateKey } = await generateRsaKey("rsa", { modulusLength: 2048, publicKeyEncoding: { type: "spki", format: "der" }, privateKeyEncoding: { type: "pkcs8", format: "der" } });
  const jwk = createPrivateKey({ key: privateKey, format: "der", type: "pkcs8" }).export({ format: "jwk" }) as JWK;
  const signing = { ...jwk, kid: randomBytes(12).toString("base64url"), alg: "RS256", use: "sig" };
  return { signing, cookies: [randomBytes(32).toString("base64url")] };
}

/** The realm's keys, made and stored if it has none yet. */
export async function ensureRealmKeys(client: Client, realm: RealmObject): Promise<RealmKeys> {
  const secrets = client.of<SecretObject>(secretKind);
  const name = realmKeysSecretName(realm.metadata.name!);
  const existing = await secrets.tryGet(REALM_KEYS_NAMESPACE, name);
  const owner = existing?.metadata.ownerReferences?.find((r) => r.controller);
  if (existing && owner && owner.uid !== realm.metadata.uid) {
    // Left by an earlier realm of this name, not yet collected: its keys are not this realm's.
    await deleteIfPresent(() => secrets.delete(REALM_KEYS_NAMESPACE, name, { preconditions: { uid: existing.metadata.uid! } }));
  } else {
    const found = decode(existing);
    if (found) return found;
  }
  const keys = await makeKeys();
  const ref = { apiVersion: realm.apiVersion, kind: realm.kind, name: realm.metadata.name!, uid: realm.metadata.uid!, controller: true, blockOwnerDeletion: true };
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: REALM_KEYS_NAMESPACE, ownerReferences: [ref], labels: { "slipway.dev/realm": realm.metadata.name! } },
    type: "Opaque",
    data: { keys: Buffer.from(JSON.stringify(keys)).toString("base64") },
  } as SecretObject;
  // Another replica may have made them meanwhile: theirs win.
  if (await createIfAbsent(() => secrets.create(secret))) return keys;
  return decode(await secrets.get(REALM_KEYS_NAMESPACE, name))!;
}

/** The realm's stored keys, or undefined while it has none. */
export async function readRealmKeys(client: Client, realm: string): Promise<RealmKeys | undefined> {
  return decode(await client.of<SecretObject>(secretKind).tryGet(REALM_KEYS_NAMESPACE, realmKeysSecretName(realm)));
}
