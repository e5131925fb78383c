// The control plane's own credentials: a CA, an admin token and the key ServiceAccount tokens are signed
// with, kept in the store (encrypted), so that every replica sharing a store serves with certificates
// from one CA and accepts the same tokens. Credentials stored before the key existed get one, once.
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from "../bootstrap/pki.ts";
import { CREDENTIALS_KEY } from "../apiserver/storage-keys.ts";
import { createServiceAccountKey, type ServiceAccountKeyPem } from "../apiserver/serviceaccount-tokens.ts";
import { KeyExistsError, RevisionMismatchError, type KeyValue, type Store } from "../store/store.ts";

export interface ControlPlaneCredentials {
  ca: KeyPairPem;
  adminToken: string;
  serviceAccountKey: ServiceAccountKeyPem;
}

/** Reads the credentials, creating them on the first start (the first replica to write wins). */
export async function ensureCredentials(store: Store): Promise<ControlPlaneCredentials> {
  for (;;) {
    const existing = await store.get(CREDENTIALS_KEY);
    if (existing) {
      const credentials = await completed(store, existing);
      if (credentials) return credentials;
      continue;
    }
    const created: ControlPlaneCredentials = {
      ca: await createCertificateAuthority({ commonName: "slipway-ca", organization: "slipway" }),
      adminToken: randomBytes(32).toString("base64url"),
      serviceAccountKey: createServiceAccountKey(),
    };
    try {
      await store.create(CREDENTIALS_KEY, JSON.stringify(created));
      return created;
    } catch (e) {
      if (!(e instanceof KeyExistsError)) throw e;
    }
  }
}

/** Stored credentials, given what later versions added; undefined when another replica changed them first. */
async function completed(store: Store, stored: KeyValue): Promise<ControlPlaneCredentials | undefined> {
  const credentials = JSON.parse(stored.value) as Partial<ControlPlaneCredentials> & Pick<ControlPlaneCredentials, "ca" | "adminToken">;
  if (credentials.serviceAccountKey) return credentials as ControlPlaneCredentials;
  const next: ControlPlaneCredentials = { ...credentials, serviceAccountKey: createServiceAccountKey() };
  try {
    await store.update(CREDENTIALS_KEY, JSON.stringify(next), stored.modRevision);
    return next;
  } catch (e) {
    if (e instanceof RevisionMismatchError) return undefined;
    throw e;
  }
}

/** A serving certificate for this replica, valid for loopback and the host name. */
export function issueServingCertificate(ca: KeyPairPem, extraNames: string[] = []): Promise<KeyPairPem> {
  return issueCertificate(ca, {
    commonName: "slipway-apiserver",
    dnsNames: ["localhost", hostname(), ...extraNames.filter((n) => !/^[\d.]+$/.test(n))],
    ipAddresses: ["127.0.0.1", ...extraNames.filter((n) => /^[\d.]+$/.test(n))],
    usages: ["server"],
  });
}
