// Admission plugin NamespaceLifecycle, as kube-apiserver's: nothing is created in a namespace that does
// not exist or is being deleted (the namespace's own rules are beside its kind, in api/core.ts).
import type { AdmissionPlugin } from "./admission.ts";
import { ForbiddenError, NotFoundError, refOf } from "./errors.ts";

export const namespaceLifecycle: AdmissionPlugin = {
  name: "NamespaceLifecycle",
  async validate(request) {
    const { def, namespace, objects } = request;
    if (request.operation !== "CREATE" || !def.namespaced || !namespace) return;
    const namespaces = objects.registry.byKind("v1", "Namespace");
    if (!namespaces) return;
    const ns = await objects.tryGet(namespaces, undefined, namespace);
    if (!ns) throw new NotFoundError(refOf(namespaces, namespace));
    if (ns.metadata.deletionTimestamp) {
      throw new ForbiddenError(
        `${def.plural}${def.group ? "." + def.group : ""} "${request.name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
        refOf(def, request.name),
      );
    }
  },
};
