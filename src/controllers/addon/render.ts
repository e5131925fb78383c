// An addon's manifests for one cluster: the text of its source (a bundle's manifests.yaml, every key of
// its ConfigMap, or its inline manifests), ${parameter} replaced by the addon's value, else the bundle's
// default, else a built-in (cluster.name, cluster.namespace, addon.name); then read as YAML and checked
// as the synchroniser checks manifests. Any problem — a parameter without a value, YAML that does not
// read, a manifest without a kind or name, an object declared twice — is an AddonError naming where it is.
import { stringify } from "yaml";
import { configMapKind, type ConfigMapObject } from "../../api/core.ts";
import type { KubeObject } from "../../api/meta.ts";
import type { AddonObject, AddonService } from "../../api/slipway/addon.ts";
import type { Client } from "../../runtime/client.ts";
import { SourceError, checkManifests, documentsOf } from "../resourcesync/sources.ts";
import { BundleError, type Bundles } from "./bundles.ts";

export class AddonError extends Error {
  override name = "AddonError";
}

export interface Rendered {
  manifests: KubeObject[];
  version: string;
  services: AddonService[];
}

const PLACEHOLDER = /\$\{([^}]*)\}/g;

/** The text with every ${name} replaced; the names without a value are returned instead. */
export function substitute(text: string, values: Record<string, string>): { text: string; missing: string[] } {
  const missing = new Set<string>();
  const out = text.replace(PLACEHOLDER, (whole, raw: string) => {
    const name = raw.trim();
    const value = values[name];
    if (value === undefined) {
      missing.add(name);
      return whole;
    }
    return value;
  });
  return { text: out, missing: [...missing] };
}

/** The synchroniser's reading of manifests, its problems told as the addon's. */
function asAddonError<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof SourceError) throw new AddonError(error.message);
    throw error;
  }
}

interface Source {
  field: string;
  text: string;
}

async function sourcesOf(client: Client, bundles: Bundles, addon: AddonObject): Promise<{ sources: Source[]; defaults: Record<string, string>; version: string; services: AddonService[] }> {
  const spec = addon.spec;
  if (spec.bundle) {
    let bundle;
    try {
      bundle = bundles.get(spec.bundle.name, spec.bundle.version);
    } catch (error) {
      if (error instanceof BundleError) throw new AddonError(error.message);
      throw error;
    }
    return { sources: [{ field: `bundle ${bundle.name} ${bundle.version}`, text: bundle.manifests }], defaults: bundle.parameters, version: bundle.version, services: bundle.services };
  }
  const version = spec.version ?? "";
  if (spec.configMapRef) {
    const namespace = addon.metadata.namespace;
    const cm = await client.of<ConfigMapObject>(configMapKind).tryGet(namespace, spec.configMapRef.name);
    if (!cm) throw new AddonError(`spec.configMapRef.name: ConfigMap ${spec.configMapRef.name} does not exist in namespace ${namespace}`);
    const data = cm.data ?? {};
    return { sources: Object.keys(data).sort().map((key) => ({ field: `spec.configMapRef key ${key}`, text: data[key]! })), defaults: {}, version, services: [] };
  }
  return { sources: (spec.manifests ?? []).map((m, i) => ({ field: `spec.manifests[${i}]`, text: stringify(m) })), defaults: {}, version, services: [] };
}

/** The addon's manifests, version and services for one cluster. */
export async function renderAddon(client: Client, bundles: Bundles, addon: AddonObject, cluster: { name: string; namespace: string }): Promise<Rendered> {
  const { sources, defaults, version, services } = await sourcesOf(client, bundles, addon);
  const values: Record<string, string> = { ...defaults, ...addon.spec.parameters, "cluster.name": cluster.name, "cluster.namespace": cluster.namespace, "addon.name": addon.metadata.name! };
  const manifests: { field: string; object: KubeObject }[] = [];
  for (const source of sources) {
    const { text, missing } = substitute(source.text, values);
    if (missing.length > 0) throw new AddonError(`spec.parameters: no value for ${missing.map((m) => `\${${m}}`).join(", ")} (used in ${source.field})`);
    const documents = asAddonError(() => documentsOf(source.field, text));
    documents.forEach((object, j) => manifests.push({ field: documents.length > 1 || source.field.startsWith("bundle") || source.field.includes(" key ") ? `${source.field} document ${j + 1}` : source.field, object: object as KubeObject }));
  }
  asAddonError(() => checkManifests(manifests));
  const declared = [...services.filter((s) => !(addon.spec.services ?? []).some((o) => o.name === s.name)), ...(addon.spec.services ?? [])];
  return { manifests: manifests.map((m) => m.object), version, services: declared };
}
