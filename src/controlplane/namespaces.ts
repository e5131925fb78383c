// The namespaces every control plane has from its first start.
import type { ObjectService } from "../apiserver/objects.ts";
import { createIfAbsent } from "../api/presence.ts";

export const DEFAULT_NAMESPACES = ["default", "kube-system", "kube-public"];

export async function ensureDefaultNamespaces(objects: ObjectService): Promise<void> {
  const def = objects.registry.byKind("v1", "Namespace");
  if (!def) return;
  for (const name of DEFAULT_NAMESPACES) {
    if (await objects.tryGet(def, undefined, name)) continue;
    // Another replica may make it first.
    await createIfAbsent(() => objects.create(def, undefined, { metadata: { name } }));
  }
}
