// The control plane's own credentials: a CA and an admin token, kept in the store (encrypted), so that
// every replica sharing a store serves with certificates from one CA and accepts the same token.
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from "../bootstrap/pki.ts";
import { CREDENTIALS_KEY } from "../apiserver/storage-keys.ts";
import { KeyExistsError, type Store } from "../store/store.ts";

export interface ControlPlaneCredentials {
  ca: KeyPairPem;
  adminToken: string;
}

/** Reads the credentials, creating them on the first start (the first replica to write wins). */
export async function ensureCredentials(store: Store): Promise<ControlPlaneCredentials> {
  const existing = await store.get(CREDENTIALS_KEY);
  if (existing) return JSON.parse(existing.value) as ControlPlaneCredentials;
  const created: ControlPlaneCredentials = {
    ca: await createCertificateAuthority({ commonName: "slipway-ca", organization: "slipway" }),
    adminToken: randomBytes(32).toString("base64url"),
  };
  try {
    await store.create(CREDENTIALS_KEY, JSON.stringify(created));
    return created;
  } catch (e) {
    if (!(e instanceof KeyExistsError)) throw e;
    const winner = await store.get(CREDENTIALS_KEY);
    if (!winner) throw e;
    return JSON.parse(winner.value) as ControlPlaneCredentials;
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
