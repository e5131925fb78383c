// Where everything lives in the store. Objects of the API: /registry/<group|core>/<plural>/<ns>/<name>
// (cluster-scoped kinds without the namespace), as kube-apiserver lays them out in etcd. The control
// plane's own records (its CA and admin token) under /slipway/, and the controllers' shard leases under
// /coordination/. Nothing else spells these paths out.
import type { KindDefinition, Registry } from "../api/registry.ts";

/** Every object of the API lives under this prefix. */
export const REGISTRY_ROOT = "/registry/";
/** The control plane's own records; everything under it is credentials, so it is encrypted at rest. */
export const CONTROL_PLANE_ROOT = "/slipway/";
/** The control plane's CA and admin token. */
export const CREDENTIALS_KEY = `${CONTROL_PLANE_ROOT}credentials`;
/** Membership and shard locks of the controllers' replicas (etcd leases). */
export const COORDINATION_ROOT = "/coordination/controllers/";

type KindKeys = Pick<KindDefinition, "group" | "plural" | "namespaced">;

/** The prefix of a kind's objects, or of those in one namespace when it is given (namespaced kinds). */
export function kindPrefix(def: KindKeys, namespace?: string): string {
  const base = `${REGISTRY_ROOT}${def.group || "core"}/${def.plural}/`;
  return def.namespaced && namespace ? `${base}${namespace}/` : base;
}

/** The key of one object. */
export function objectKey(def: KindKeys, namespace: string | undefined, name: string): string {
  return def.namespaced ? `${kindPrefix(def)}${namespace ?? ""}/${name}` : `${kindPrefix(def)}${name}`;
}

/** The object a key holds: its kind, namespace and name. */
export interface KeyedObject {
  def: KindDefinition;
  namespace?: string;
  name: string;
}

/** Reads keys back into kinds, for those who watch the whole registry (the garbage collector). */
export class StorageLayout {
  private readonly byGroupResource = new Map<string, KindDefinition>();

  constructor(registry: Registry) {
    // One version per group and resource is stored (the first registered), as in kube-apiserver.
    for (const def of registry.all()) {
      const id = `${def.group || "core"}/${def.plural}`;
      if (!this.byGroupResource.has(id)) this.byGroupResource.set(id, def);
    }
  }

  /** The kind, namespace and name of an object's key; undefined for keys outside the registry. */
  parse(key: string): KeyedObject | undefined {
    if (!key.startsWith(REGISTRY_ROOT)) return undefined;
    const parts = key.slice(REGISTRY_ROOT.length).split("/");
    const def = this.byGroupResource.get(`${parts[0]}/${parts[1]}`);
    if (!def) return undefined;
    const rest = parts.slice(2);
    if (def.namespaced ? rest.length !== 2 : rest.length !== 1) return undefined;
    return def.namespaced ? { def, namespace: rest[0], name: rest[1]! } : { def, name: rest[0]! };
  }
}

/**
 * The prefixes whose values are encrypted at rest: the objects of every kind marked `sensitive`, and the
 * control plane's own records.
 */
export function encryptedPrefixes(registry: Registry): string[] {
  const prefixes = new Set<string>();
  for (const def of registry.all()) if (def.sensitive) prefixes.add(kindPrefix(def));
  prefixes.add(CONTROL_PLANE_ROOT);
  return [...prefixes];
}
