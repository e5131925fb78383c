// A logical cloud's users' credentials: on each member cluster a client certificate that the cluster
// itself signs — a CertificateSigningRequest for the kube-apiserver-client signer, approved by Slipway
// with the cluster's admin credentials, as EMCO does — so it works for clusters Slipway built and those
// it only registered alike; and per user one kubeconfig with a context per cluster (named after the
// cluster, in the logical cloud's namespace). A certificate already issued is kept while the cluster's
// address and CA stay the same and it is not near its end.
import type { KubeObject } from "../../api/meta.ts";
import { isNotFound } from "../../api/presence.ts";
import { KubeconfigError, mergeKubeconfig, parseKubeconfig, renderKubeconfig, type KubeconfigConnection } from "../../bootstrap/kubeconfig.ts";
import { certificateInfo, createCertificateRequest } from "../../bootstrap/pki.ts";
import type { KubeClient } from "../../kubeclient/index.ts";

const CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
const SIGNER = "kubernetes.io/kube-apiserver-client";
/** How long a user's certificate lasts, and how long before its end a new one is asked for. */
export const CERTIFICATE_SECONDS = 365 * 24 * 3600;
const RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;

/** A member cluster's address and CA, as its admin kubeconfig has them. */
export type ClusterAddress = Pick<KubeconfigConnection, "server" | "caCertPem" | "tlsServerName">;

export interface IssuedCredential {
  cluster: string;
  address: ClusterAddress;
  certPem: string;
  keyPem: string;
}

export class CertificateNotIssuedError extends Error {
  override name = "CertificateNotIssuedError";
}

interface CsrView extends KubeObject {
  status?: { certificate?: string; conditions?: { type: string; status: string; message?: string }[] };
}

/**
 * Asks the cluster to sign a client certificate for `user` (groups `groups`): creates the request,
 * approves it, waits for the certificate (up to `waitMs`), and deletes the request.
 */
export async function issueThroughCluster(client: KubeClient, requestName: string, user: string, groups: string[], waitMs = 10_000): Promise<{ certPem: string; keyPem: string }> {
  const { csrPem, keyPem } = await createCertificateRequest({ commonName: user, organizations: groups });
  const path = `${CSR_PATH}/${requestName}`;
  // A request left by an attempt that broke off is replaced: its key is lost.
  await client.delete(path).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
  });
  const created = await client.create<CsrView>(CSR_PATH, {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name: requestName, labels: { "app.kubernetes.io/managed-by": "slipway" } },
    spec: { request: Buffer.from(csrPem).toString("base64"), signerName: SIGNER, usages: ["digital signature", "client auth"], expirationSeconds: CERTIFICATE_SECONDS },
  });
  const approval = { ...created, status: { conditions: [{ type: "Approved", status: "True", reason: "LogicalCloudUser", message: `approved by Slipway for logical cloud user ${user}` }] } };
  await client.update(`${path}/approval`, approval);
  const deadline = Date.now() + waitMs;
  try {
    for (;;) {
      const csr = await client.get<CsrView>(path);
      const failed = csr.status?.conditions?.find((c) => (c.type === "Failed" || c.type === "Denied") && c.status === "True");
      if (failed) throw new CertificateNotIssuedError(`the cluster's signer refused the request: ${failed.message ?? failed.type}`);
      if (csr.status?.certificate) return { certPem: Buffer.from(csr.status.certificate, "base64").toString("utf8"), keyPem };
      if (Date.now() > deadline) throw new CertificateNotIssuedError(`the cluster approved the request but issued no certificate in ${waitMs / 1000} s (is its signer running?)`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await client.delete(path).catch(() => undefined);
  }
}

/** The credentials a user's existing kubeconfig holds, by cluster (contexts named after clusters); unreadable entries are skipped. */
export function readCredentials(kubeconfig: string | undefined, clusters: readonly string[]): Map<string, IssuedCredential> {
  const found = new Map<string, IssuedCredential>();
  if (!kubeconfig) return found;
  for (const cluster of clusters) {
    try {
      const c = parseKubeconfig(kubeconfig, { context: cluster });
      if (!c.clientCertPem || !c.clientKeyPem) continue;
      found.set(cluster, { cluster, address: { server: c.server, caCertPem: c.caCertPem, ...(c.tlsServerName ? { tlsServerName: c.tlsServerName } : {}) }, certPem: c.clientCertPem, keyPem: c.clientKeyPem });
    } catch (error) {
      if (!(error instanceof KubeconfigError)) throw error;
    }
  }
  return found;
}

/** Whether a credential can be kept: same address and CA, and not near its end. */
export function stillGood(credential: IssuedCredential, address: ClusterAddress, now: number): boolean {
  if (credential.address.server !== address.server || credential.address.caCertPem !== address.caCertPem || credential.address.tlsServerName !== address.tlsServerName) return false;
  return certificateInfo(credential.certPem).notAfter.getTime() - now > RENEW_BEFORE_MS;
}

/** One kubeconfig for a user: a context per cluster (named after it) in the logical cloud's namespace; the first is current. */
export function userKubeconfig(user: string, namespace: string, credentials: readonly IssuedCredential[]): string {
  let merged: string | undefined;
  for (const credential of [...credentials].sort((a, b) => (a.cluster < b.cluster ? -1 : 1))) {
    const one = renderKubeconfig({
      clusterName: credential.cluster,
      server: credential.address.server,
      caCertPem: credential.address.caCertPem,
      ...(credential.address.tlsServerName ? { tlsServerName: credential.address.tlsServerName } : {}),
      user: `${user}@${credential.cluster}`,
      clientCertPem: credential.certPem,
      clientKeyPem: credential.keyPem,
      context: credential.cluster,
      namespace,
    });
    merged = mergeKubeconfig(merged, one);
  }
  return merged ?? mergeKubeconfig(undefined, "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n");
}
