// Admission of Leases that needs the store: a new Lease must name a Connection that exists in its
// namespace (the reservations are made there at once, unlike a Cluster's, which is validated as it builds).
import { notFound } from "../api/field-errors.ts";
import { connectionKind } from "../api/slipway/connection.ts";
import { leaseKind, type LeaseObject } from "../api/slipway/lease.ts";
import type { AdmissionPlugin } from "../apiserver/admission.ts";
import { InvalidError, refOf } from "../apiserver/errors.ts";

export const leaseConnectionAdmission: AdmissionPlugin = {
  name: "LeaseConnection",
  async validate(request) {
    if (request.operation !== "CREATE" || request.def.kind !== leaseKind.kind || request.def.group !== leaseKind.group) return;
    const lease = request.object as LeaseObject;
    const namespace = request.namespace;
    const found = await request.objects.tryGet(request.objects.registry.byKind(`${connectionKind.group}/${connectionKind.version}`, connectionKind.kind)!, namespace, lease.spec.connection);
    if (!found) throw new InvalidError(refOf(request.def, lease.metadata.name), [notFound("spec.connection", lease.spec.connection, `no Connection of that name in namespace ${namespace ?? "default"}`)]);
  },
};
