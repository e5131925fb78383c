// The API's stable names, in the control plane's connection when its provider offers DNS: `api.<cluster>.<zone>`
// for clients and `api-int.<cluster>.<zone>` for what runs inside the cloud, both A records aliasing the
// API load balancer (the emulation has one load balancer for both; a cloud with internal load balancers
// would point api-int at its own). The public name is the endpoint kubeadm and the kubeconfig are given,
// so the load balancer's generated name never reaches a certificate. A private API (the Infrastructure's
// spec.apiVisibility) has only api-int, aliasing an internal load balancer, and that name is its endpoint.
// Records are found by the Infrastructure's tags, made once per token, replaced when they alias a load
// balancer that was replaced, and deleted with the rest of the infrastructure; the zone is the
// connection's and stays.
import type { Dns, DnsRecordInfo } from "../../providers/provider.ts";
import { cloudTags, idempotencyToken, TAG_OWNER_UID, TAG_ROLE } from "../contract.ts";
import type { InfrastructureScope } from "./phases.ts";

/** The tag role of the API's DNS records. */
export const DNS_ROLE = "apiDnsRecord";

export interface ApiNames {
  /** What clients and kubeadm's controlPlaneEndpoint use; none for a private API. */
  public?: string;
  /** What machines inside the cloud may use (and, for a private API, everything). */
  internal: string;
}

export function apiNames(cluster: string, zone: string, visibility: "public" | "private" = "public"): ApiNames {
  const internal = `api-int.${cluster}.${zone}`;
  return visibility === "private" ? { internal } : { public: `api.${cluster}.${zone}`, internal };
}

/** The name the API's endpoint is given: the public one, else api-int. */
export function endpointName(names: ApiNames): string {
  return names.public ?? names.internal;
}

/** The API's names when the connection's provider offers DNS (undefined otherwise, or outside the control plane's connection). */
export async function apiNamesOf(scope: InfrastructureScope): Promise<ApiNames | undefined> {
  if (!scope.dns || !scope.object.spec.controlPlane) return undefined;
  const zone = await scope.dns.zone();
  return apiNames(scope.object.spec.clusterName, zone.name, scope.object.spec.apiVisibility);
}

function ownRecords(dns: Dns, scope: InfrastructureScope): Promise<DnsRecordInfo[]> {
  return dns.findTagged({ [TAG_OWNER_UID]: scope.object.metadata.uid!, [TAG_ROLE]: DNS_ROLE });
}

/**
 * The names alias the load balancer: made if absent, remade if they alias another one; a record of a name
 * not wanted (none is, once made) is deleted. Answers the names made.
 */
export async function ensureApiRecords(scope: InfrastructureScope, names: ApiNames, loadBalancerId: string): Promise<string[]> {
  const dns = scope.dns!;
  const existing = await ownRecords(dns, scope);
  const wanted = [names.public, names.internal].filter((name) => name !== undefined);
  for (const stray of existing.filter((r) => !wanted.includes(r.name))) await dns.delete(stray.id);
  const made: string[] = [];
  for (const name of wanted) {
    const current = existing.filter((r) => r.name === name && r.type === "A");
    if (current.some((r) => r.loadBalancerId === loadBalancerId)) continue;
    for (const stale of current) await dns.delete(stale.id);
    const tags = cloudTags(scope.cluster!, scope.object, DNS_ROLE);
    await dns.create({ name, type: "A", loadBalancerId }, { token: idempotencyToken(scope.object.metadata.uid!, `dns/${name}/${loadBalancerId}`), tags });
    made.push(name);
  }
  return made;
}

/** Deletes every DNS record of the Infrastructure; answers the names deleted. */
export async function deleteApiRecords(dns: Dns, scope: InfrastructureScope): Promise<string[]> {
  const records = await ownRecords(dns, scope);
  for (const record of records) await dns.delete(record.id);
  return records.map((r) => r.name);
}
