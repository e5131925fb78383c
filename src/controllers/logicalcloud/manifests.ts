// What a logical cloud puts on each member cluster, as manifests for the synchroniser: the namespace,
// its ResourceQuota, per user a RoleBinding (to admin, edit or view, or to a Role of the user's rules),
// and the shared trust — the logical cloud's intermediate CA in a mesh namespace (Istio's plug-in CA
// Secret `cacerts`: ca-cert.pem, ca-key.pem, root-cert.pem, cert-chain.pem), its trust bundle in the
// namespace, and a CoreDNS server block that forwards the logical cloud's service domain to the other
// members. The CA's key is a Secret's: it travels in a Secret source, never inline in a ResourceSync.
import type { KubeObject } from "../../api/meta.ts";
import { LABEL_LOGICALCLOUD, type LogicalCloudObject, type LogicalCloudUser } from "../../api/slipway/logicalcloud.ts";
import type { KeyPairPem } from "../../bootstrap/pki.ts";

const RBAC = "rbac.authorization.k8s.io";

/** The namespace holding the logical cloud's CA for a service mesh (kept out of the users' namespace). */
export function meshNamespace(cloud: LogicalCloudObject): string {
  return `slipway-mesh-${cloud.metadata.name}`;
}

/** The DNS domain under which the logical cloud's services are found across its clusters. */
export function serviceDomain(cloud: LogicalCloudObject): string {
  return `${cloud.metadata.name}.logicalcloud.local`;
}

/** Role, RoleBinding and ResourceQuota names: the logical cloud's name, then the user's. */
export function userObjectName(cloud: LogicalCloudObject, user: string): string {
  return `${cloud.metadata.name}-${user}`;
}

export interface MeshCa {
  intermediate: KeyPairPem;
  rootCertPem: string;
}

function labels(cloud: LogicalCloudObject): Record<string, string> {
  return { [LABEL_LOGICALCLOUD]: cloud.metadata.name!, "app.kubernetes.io/managed-by": "slipway" };
}

function userObjects(cloud: LogicalCloudObject, user: LogicalCloudUser): KubeObject[] {
  const namespace = cloud.spec.namespace;
  const name = userObjectName(cloud, user.name);
  const subjects = [{ kind: "User", apiGroup: RBAC, name: user.name }];
  const objects: KubeObject[] = [];
  if (user.role) {
    objects.push({
      apiVersion: `${RBAC}/v1`,
      kind: "RoleBinding",
      metadata: { name: `${name}-${user.role}`, namespace, labels: labels(cloud) },
      roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: user.role },
      subjects,
    });
  }
  if ((user.rules ?? []).length > 0) {
    objects.push(
      { apiVersion: `${RBAC}/v1`, kind: "Role", metadata: { name, namespace, labels: labels(cloud) }, rules: structuredClone(user.rules) },
      { apiVersion: `${RBAC}/v1`, kind: "RoleBinding", metadata: { name, namespace, labels: labels(cloud) }, roleRef: { apiGroup: RBAC, kind: "Role", name }, subjects },
    );
  }
  return objects;
}

/** A CoreDNS server block forwarding the logical cloud's domain to the other members (a comment when there are none). */
export function dnsServerBlock(cloud: LogicalCloudObject, others: readonly string[]): string {
  const domain = serviceDomain(cloud);
  const lines = [`# Logical cloud ${cloud.metadata.name}: ${domain} is answered by its member clusters.`, `${domain}:53 {`, "    errors", "    cache 30"];
  if (others.length > 0) lines.push(`    forward . ${others.map((host) => `${host}:53`).join(" ")}`);
  else lines.push("    # no other member cluster yet");
  lines.push("}");
  return lines.join("\n") + "\n";
}

/**
 * The non-secret manifests for one member cluster. `others` are the addresses of the other members' DNS
 * (their API endpoints' hosts: where the cross-cluster gateway answers).
 */
export function memberManifests(cloud: LogicalCloudObject, ca: MeshCa, others: readonly string[]): KubeObject[] {
  const namespace = cloud.spec.namespace;
  const objects: KubeObject[] = [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace, labels: labels(cloud) } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: meshNamespace(cloud), labels: { ...labels(cloud), "slipway.dev/mesh": "true" } } },
  ];
  if (cloud.spec.quota && Object.keys(cloud.spec.quota).length > 0) {
    const hard = Object.fromEntries(Object.entries(cloud.spec.quota).map(([k, v]) => [k, String(v)]));
    objects.push({ apiVersion: "v1", kind: "ResourceQuota", metadata: { name: `${cloud.metadata.name}-quota`, namespace, labels: labels(cloud) }, spec: { hard } });
  }
  for (const user of cloud.spec.users ?? []) objects.push(...userObjects(cloud, user));
  objects.push(
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: `${cloud.metadata.name}-trust-bundle`, namespace, labels: labels(cloud) },
      data: { "root-cert.pem": ca.rootCertPem, "cert-chain.pem": ca.intermediate.certPem + ca.rootCertPem },
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: `slipway-logicalcloud-${cloud.metadata.name}`, namespace: "kube-system", labels: labels(cloud) },
      data: { [`${cloud.metadata.name}.server`]: dnsServerBlock(cloud, others) },
    },
  );
  return objects;
}

/** The mesh CA Secret's manifest (with the intermediate's key), for a Secret source of every member's ResourceSync. */
export function meshCaManifest(cloud: LogicalCloudObject, ca: MeshCa): KubeObject {
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "cacerts", namespace: meshNamespace(cloud), labels: labels(cloud) },
    type: "Opaque",
    data: {
      "ca-cert.pem": b64(ca.intermediate.certPem),
      "ca-key.pem": b64(ca.intermediate.keyPem),
      "root-cert.pem": b64(ca.rootCertPem),
      "cert-chain.pem": b64(ca.intermediate.certPem + ca.rootCertPem),
    },
  };
}
