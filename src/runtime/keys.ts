// Work-queue keys: "namespace/name" for namespaced objects, "name" for cluster-scoped ones, as
// client-go's MetaNamespaceKeyFunc.
import type { KubeObject } from "../api/meta.ts";

export function objectKey(object: Pick<KubeObject, "metadata">): string {
  const { namespace, name } = object.metadata;
  return namespace ? `${namespace}/${name ?? ""}` : (name ?? "");
}

export function keyFor(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
