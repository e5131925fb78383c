// Admission plugin NamespaceLifecycle, as kube-apiserver's: nothing is created in a namespace that does
// not exist or is being deleted (the namespace's own rules are beside its kind, in api/core.ts).
import type { AdmissionPlugin, AdmissionRequest } from "./admission.ts";
import { ForbiddenError, NotFoundError, refOf } from "./errors.ts";

export const namespaceLifecycle: AdmissionPlugin = {
  name: "NamespaceLifecycle",
  validate(request) {
    // Synchronous for what it lets through unread: most writes are updates.
    if (request.operation !== "CREATE" || !request.def.namespaced || !request.namespace) return;
    return checkNamespace(request);
  },
};

async function checkNamespace(request: AdmissionRequest): Promise<void> {
  const { def, namespace, objects } = request;
  const namespaces = objects.registry.byKind("v1", "Namespace");
  if (!namespaces || !namespace) return;
  // A recent copy, as kube-apiserver's informer: a create racing the namespace's deletion by a moment
  // may get through, and is removed with the rest of the namespace's content.
  const ns = await objects.tryGet(namespaces, undefined, namespace, { recent: true });
  if (!ns) throw new NotFoundError(refOf(namespaces, namespace));
  if (ns.metadata.deletionTimestamp) {
    throw new ForbiddenError(
      `${def.plural}${def.group ? "." + def.group : ""} "${request.name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
      refOf(def, request.name),
    );
  }
}
