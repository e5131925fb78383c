// The manifests of a ResourceSync: its inline resources, then every document of every key of the
// ConfigMaps and Secrets it reads from. A source that is missing (and not optional), a document that is
// not YAML or not a Kubernetes object, or two manifests for one object are a problem of the spec, named
// by field: nothing is applied while there is one.
import { parseAllDocuments } from "yaml";
import { configMapKind, secretKind, type ConfigMapObject, type SecretObject } from "../../api/core.ts";
import type { KubeObject } from "../../api/meta.ts";
import { manifestErrors, manifestKey, type ResourceSyncObject } from "../../api/slipway/resourcesync.ts";
import type { Client } from "../../runtime/client.ts";

export class SourceError extends Error {
  override name = "SourceError";
}

export function documentsOf(field: string, text: string): unknown[] {
  const documents = parseAllDocuments(text);
  const list = Array.isArray(documents) ? documents : [documents];
  const out: unknown[] = [];
  for (const [i, document] of list.entries()) {
    if (document.errors.length > 0) throw new SourceError(`${field}: document ${i + 1} is not valid YAML: ${document.errors[0]!.message.split("\n")[0]}`);
    const value: unknown = document.toJS();
    if (value === null || value === undefined) continue;
    // A List (kubectl get -o yaml) holds its objects in items.
    if (typeof value === "object" && !Array.isArray(value) && (value as KubeObject).kind === "List" && Array.isArray((value as { items?: unknown }).items)) {
      out.push(...(value as { items: unknown[] }).items);
    } else {
      out.push(value);
    }
  }
  return out;
}

/** Every manifest the ResourceSync declares, in the order declared; throws SourceError naming the field at fault. */
export async function resolveManifests(client: Client, sync: ResourceSyncObject): Promise<KubeObject[]> {
  const namespace = sync.metadata.namespace;
  const manifests: { field: string; object: KubeObject }[] = (sync.spec.resources ?? []).map((object, i) => ({ field: `spec.resources[${i}]`, object: object as KubeObject }));
  for (const [i, source] of (sync.spec.resourcesFrom ?? []).entries()) {
    const field = `spec.resourcesFrom[${i}]`;
    const data: Record<string, string> = {};
    if (source.kind === "ConfigMap") {
      const cm = await client.of<ConfigMapObject>(configMapKind).tryGet(namespace, source.name);
      if (!cm && !source.optional) throw new SourceError(`${field}: ConfigMap ${source.name} does not exist in namespace ${namespace}`);
      Object.assign(data, cm?.data ?? {});
    } else {
      const secret = await client.of<SecretObject>(secretKind).tryGet(namespace, source.name);
      if (!secret && !source.optional) throw new SourceError(`${field}: Secret ${source.name} does not exist in namespace ${namespace}`);
      for (const [key, value] of Object.entries(secret?.data ?? {})) data[key] = Buffer.from(value, "base64").toString("utf8");
    }
    for (const key of Object.keys(data).sort()) {
      for (const [j, object] of documentsOf(`${field} key ${key}`, data[key]!).entries()) manifests.push({ field: `${field} key ${key} document ${j + 1}`, object: object as KubeObject });
    }
  }
  checkManifests(manifests);
  return manifests.map((m) => structuredClone(m.object));
}

/** Throws SourceError at the first manifest the synchroniser could not apply, or declared twice. */
export function checkManifests(manifests: readonly { field: string; object: KubeObject }[]): void {
  const seen = new Map<string, string>();
  for (const { field, object } of manifests) {
    const problems = manifestErrors(field, object);
    if (problems.length > 0) throw new SourceError(problems.map((p) => `${p.field}: ${p.message}`).join("; "));
    const key = manifestKey(object);
    const first = seen.get(key);
    if (first) throw new SourceError(`${field}: ${object.kind} ${object.metadata.name} is declared twice (first at ${first})`);
    seen.set(key, field);
  }
}
