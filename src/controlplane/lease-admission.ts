// Admission of Leases that needs the store: a new Lease must name a Connection that exists in its
// namespace (the reservations are made there at once, unlike a Cluster's, which is validated as it builds).
import type { FieldError } from "../api/registry.ts";
import { connectionKind } from "../api/slipway/connection.ts";
import { leaseKind, type LeaseObject } from "../api/slipway/lease.ts";
import type { AdmissionPlugin } from "../apiserver/admission.ts";
import { InvalidError, refOf } from "../apiserver/errors.ts";

function connectionNotFound(name: string, namespace: string | undefined): FieldError {
  return { field: "spec.connection", reason: "FieldValueNotFound", message: `Not found: "${name}": no Connection of that name in namespace ${namespace ?? "default"}` };
}

export const leaseConnectionAdmission: AdmissionPlugin = {
  name: "LeaseConnection",
  async validate(request) {
    if (request.operation !== "CREATE" || request.def.kind !== leaseKind.kind || request.def.group !== leaseKind.group) return;
    const lease = request.object as LeaseObject;
    const namespace = request.namespace;
    const found = await request.objects.tryGet(request.objects.registry.byKind(`${connectionKind.group}/${connectionKind.version}`, connectionKind.kind)!, namespace, lease.spec.connection);
    if (!found) throw new InvalidError(refOf(request.def, lease.metadata.name), [connectionNotFound(lease.spec.connection, namespace)]);
  },
};
