// The resource names a ResourceQuota may limit, as Kubernetes names and classifies them: object counts
// (pods, services, secrets, configmaps, persistentvolumeclaims … and count/<resource>[.<group>] for any
// kind), compute (requests.cpu, limits.memory, cpu and memory as aliases of requests.*, ephemeral
// storage, hugepages, extended resources as requests.<domain>/<name>) and storage.

/** What a resource a quota can count is called: its group ("" for core) and plural. */
export interface GroupResource {
  group: string;
  resource: string;
}

export const STANDARD_QUOTA_RESOURCES: ReadonlySet<string> = new Set([
  "cpu",
  "memory",
  "ephemeral-storage",
  "requests.cpu",
  "requests.memory",
  "requests.storage",
  "requests.ephemeral-storage",
  "limits.cpu",
  "limits.memory",
  "limits.ephemeral-storage",
  "pods",
  "resourcequotas",
  "services",
  "replicationcontrollers",
  "secrets",
  "persistentvolumeclaims",
  "configmaps",
  "services.nodeports",
  "services.loadbalancers",
]);

/** Names known to Kubernetes as resources at all (quota or not); others must be fully qualified. */
const STANDARD_RESOURCES: ReadonlySet<string> = new Set([...STANDARD_QUOTA_RESOURCES, "storage"]);

/** Limits that count whole things, so must be integers. */
const INTEGER_RESOURCES: ReadonlySet<string> = new Set([
  "pods",
  "resourcequotas",
  "services",
  "replicationcontrollers",
  "secrets",
  "configmaps",
  "persistentvolumeclaims",
  "services.nodeports",
  "services.loadbalancers",
]);

export const HUGEPAGES_PREFIX = "hugepages-";
export const REQUESTS_PREFIX = "requests.";
export const COUNT_PREFIX = "count/";
export const STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/";

export function isQuotaHugePagesName(name: string): boolean {
  return name.startsWith(HUGEPAGES_PREFIX) || name.startsWith(`${REQUESTS_PREFIX}${HUGEPAGES_PREFIX}`);
}

export function isStandardResourceName(name: string): boolean {
  return STANDARD_RESOURCES.has(name) || isQuotaHugePagesName(name);
}

export function isStandardQuotaResourceName(name: string): boolean {
  return STANDARD_QUOTA_RESOURCES.has(name) || isQuotaHugePagesName(name);
}

/** Names in kubernetes.io's namespace: unqualified ones, or qualified under *kubernetes.io/. */
export function isNativeResource(name: string): boolean {
  return !name.includes("/") || name.includes("kubernetes.io/");
}

/** A container resource a device plugin or operator adds, e.g. example.com/gpu. */
export function isExtendedResourceName(name: string): boolean {
  return !isNativeResource(name) && !name.startsWith(REQUESTS_PREFIX) && qualifiedNameError(`${REQUESTS_PREFIX}${name}`) === undefined;
}

/** A quota on an extended resource, which Kubernetes only takes as requests.<name>. */
export function isExtendedRequestsName(name: string): boolean {
  return !isNativeResource(name) && name.startsWith(REQUESTS_PREFIX);
}

export function isIntegerResourceName(name: string): boolean {
  return INTEGER_RESOURCES.has(name) || isExtendedResourceName(name);
}

/** "count/pods", "count/deployments.apps" */
export function countResourceName({ group, resource }: GroupResource): string {
  return group ? `${COUNT_PREFIX}${resource}.${group}` : `${COUNT_PREFIX}${resource}`;
}

/** The resource a count/<resource>[.<group>] name counts (plurals hold no dots, so the group follows the first). */
export function countedResource(name: string): GroupResource | undefined {
  if (!name.startsWith(COUNT_PREFIX)) return undefined;
  const rest = name.slice(COUNT_PREFIX.length);
  const dot = rest.indexOf(".");
  const resource = dot < 0 ? rest : rest.slice(0, dot);
  return resource ? { resource, group: dot < 0 ? "" : rest.slice(dot + 1) } : undefined;
}

/** The storage class of a <class>.storageclass.storage.k8s.io/(requests.storage|persistentvolumeclaims) name. */
export function storageClassOf(name: string): { storageClass: string; resource: "requests.storage" | "persistentvolumeclaims" } | undefined {
  const at = name.indexOf(STORAGE_CLASS_SUFFIX);
  if (at <= 0) return undefined;
  const resource = name.slice(at + STORAGE_CLASS_SUFFIX.length);
  if (resource !== "requests.storage" && resource !== "persistentvolumeclaims") return undefined;
  return { storageClass: name.slice(0, at), resource };
}

const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a name is not a Kubernetes qualified name ([prefix/]name), or undefined when it is one. */
export function qualifiedNameError(name: string): string | undefined {
  const parts = name.split("/");
  if (parts.length > 2) {
    return "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
  }
  const [prefix, local] = parts.length === 2 ? [parts[0] ?? "", parts[1] ?? ""] : ["", parts[0] ?? ""];
  if (parts.length === 2) {
    if (prefix === "") return "prefix part must be non-empty";
    if (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)) {
      return "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    }
  }
  if (local === "") return "name part must be non-empty";
  if (local.length > 63) return "name part must be no more than 63 characters";
  if (!QUALIFIED_NAME_PART.test(local)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  }
  return undefined;
}
