// The namespaces every control plane has from its first start.
import { isApiError, AlreadyExistsError } from "../apiserver/errors.ts";
import type { ObjectService } from "../apiserver/objects.ts";

export const DEFAULT_NAMESPACES = ["default", "kube-system", "kube-public"];

export async function ensureDefaultNamespaces(objects: ObjectService): Promise<void> {
  const def = objects.registry.byKind("v1", "Namespace");
  if (!def) return;
  for (const name of DEFAULT_NAMESPACES) {
    if (await objects.tryGet(def, undefined, name)) continue;
    try {
      await objects.create(def, undefined, { metadata: { name } });
    } catch (e) {
      // Another replica made it first.
      if (!(isApiError(e) && e instanceof AlreadyExistsError)) throw e;
    }
  }
}
