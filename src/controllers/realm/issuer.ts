// What a cluster naming a realm puts in its machines' bootstrap data: the issuer of its OIDCClient, whose
// ID tokens its API server accepts (usernames and groups prefixed, as kube-apiserver maps them), and the
// CA the issuer is served with. Machines wait for the client to be registered.
import type { ClusterObject } from "../../api/kinds.ts";
import { OIDC_PREFIX, oidcClientKind, type OIDCClientObject } from "../../api/slipway/realm.ts";
import type { OidcIssuer } from "../../bootstrap/kubeadm.ts";
import type { Client } from "../../runtime/client.ts";

export type ClusterIssuer = { issuer: OidcIssuer; caPem: string } | { waiting: string } | undefined;

/** The issuer the cluster's API server trusts; undefined when it names no realm; `waiting` while its client is not registered. */
export async function clusterIssuer(client: Client, cluster: ClusterObject): Promise<ClusterIssuer> {
  const realm = cluster.spec.realmName;
  if (!realm) return undefined;
  const found = await client.of<OIDCClientObject>(oidcClientKind).tryGet(cluster.metadata.namespace, cluster.metadata.name!);
  const status = found?.status;
  if (!found || found.spec.realm !== realm || !status?.clientId || !status.issuerUrl || !status.issuerCertificateAuthority) {
    return { waiting: `waiting for OIDCClient ${cluster.metadata.name} to be registered in realm ${realm}${status?.message ? `: ${status.message}` : ""}` };
  }
  return {
    issuer: { issuerUrl: status.issuerUrl, clientId: status.clientId, usernameClaim: "preferred_username", usernamePrefix: OIDC_PREFIX, groupsClaim: "groups", groupsPrefix: OIDC_PREFIX },
    caPem: status.issuerCertificateAuthority,
  };
}
