// A cluster's PKI and bootstrap token, kept in Secrets owned by the Cluster: `<cluster>-pki` (the keys
// kubeadm expects under /etc/kubernetes/pki) and `<cluster>-bootstrap-token` (key `token`). Made once;
// a retry, a restart or another replica reads what the first attempt wrote.
import type { ClusterObject, SecretObject } from "../api/kinds.ts";
import { secretKind } from "../api/core.ts";
import { createIfAbsent } from "../api/presence.ts";
import { createBootstrapToken } from "../bootstrap/pki.ts";
import { inThreadPki, type CertificateMaker } from "../bootstrap/pki-workers.ts";
import type { ClusterPki } from "../bootstrap/kubeadm.ts";
import type { Client } from "../runtime/client.ts";
import { LABEL_CLUSTER } from "../api/slipway/cluster.ts";
import { names } from "../api/slipway/names.ts";
import { controllerRef } from "./contract.ts";

const PKI_KEYS = {
  "ca.crt": (p: ClusterPki) => p.ca.certPem,
  "ca.key": (p: ClusterPki) => p.ca.keyPem,
  "front-proxy-ca.crt": (p: ClusterPki) => p.frontProxyCa.certPem,
  "front-proxy-ca.key": (p: ClusterPki) => p.frontProxyCa.keyPem,
  "etcd-ca.crt": (p: ClusterPki) => p.etcdCa.certPem,
  "etcd-ca.key": (p: ClusterPki) => p.etcdCa.keyPem,
  "sa.pub": (p: ClusterPki) => p.serviceAccount.publicKeyPem,
  "sa.key": (p: ClusterPki) => p.serviceAccount.privateKeyPem,
} as const;

/** A cluster's Secret lacks a key the controllers wrote into it (changed by hand). */
export class ClusterSecretError extends Error {
  override readonly name = "ClusterSecretError";
}

function b64(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}

function text(secret: SecretObject, key: string): string {
  const value = secret.data?.[key];
  if (value === undefined) throw new ClusterSecretError(`Secret ${secret.metadata.name} has no key ${key}`);
  return Buffer.from(value, "base64").toString("utf8");
}

export function readClusterPki(secret: SecretObject): ClusterPki {
  return {
    ca: { certPem: text(secret, "ca.crt"), keyPem: text(secret, "ca.key") },
    frontProxyCa: { certPem: text(secret, "front-proxy-ca.crt"), keyPem: text(secret, "front-proxy-ca.key") },
    etcdCa: { certPem: text(secret, "etcd-ca.crt"), keyPem: text(secret, "etcd-ca.key") },
    serviceAccount: { publicKeyPem: text(secret, "sa.pub"), privateKeyPem: text(secret, "sa.key") },
  };
}

export function readBootstrapToken(secret: SecretObject): string {
  return text(secret, "token");
}

/** Creates a Secret owned by the cluster unless it exists; returns what is stored either way. */
async function createOnce(client: Client, cluster: ClusterObject, name: string, data: () => Promise<Record<string, string>>): Promise<SecretObject> {
  const secrets = client.of<SecretObject>(secretKind);
  const existing = await secrets.tryGet(cluster.metadata.namespace, name);
  if (existing) return existing;
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: cluster.metadata.namespace, labels: { [LABEL_CLUSTER]: cluster.metadata.name! }, ownerReferences: [controllerRef(cluster)] },
    type: "Opaque",
    data: Object.fromEntries(Object.entries(await data()).map(([k, v]) => [k, b64(v)])),
  } as SecretObject;
  return (await createIfAbsent(() => secrets.create(secret))) ?? secrets.get(cluster.metadata.namespace, name);
}

export async function ensureClusterPki(client: Client, cluster: ClusterObject, maker: CertificateMaker = inThreadPki): Promise<ClusterPki> {
  const secret = await createOnce(client, cluster, names.pkiSecret(cluster.metadata.name!), async () => {
    const [ca, frontProxyCa, etcdCa, serviceAccount] = await Promise.all([
      maker.createCertificateAuthority({ commonName: "kubernetes" }),
      maker.createCertificateAuthority({ commonName: "front-proxy-ca" }),
      maker.createCertificateAuthority({ commonName: "etcd-ca" }),
      maker.createServiceAccountKeyPair(),
    ]);
    const pki: ClusterPki = { ca, frontProxyCa, etcdCa, serviceAccount };
    return Object.fromEntries(Object.entries(PKI_KEYS).map(([k, read]) => [k, read(pki)]));
  });
  return readClusterPki(secret);
}

export async function ensureBootstrapToken(client: Client, cluster: ClusterObject): Promise<string> {
  const secret = await createOnce(client, cluster, names.tokenSecret(cluster.metadata.name!), async () => ({ token: createBootstrapToken().token }));
  return readBootstrapToken(secret);
}
