// Admission of Leases that needs the store: a new Lease must name a Connection that exists in its
// namespace (the reservations are made there at once, unlike a Cluster's, which is validated as it builds),
// and a Lease a live Cluster runs on is not deleted from under it (deleting the cluster takes the lease).
import { notFound } from "../api/field-errors.ts";
import type { KindDefinition } from "../api/registry.ts";
import { clusterKind } from "../api/slipway/cluster.ts";
import { connectionKind } from "../api/slipway/connection.ts";
import { leaseKind, type LeaseObject } from "../api/slipway/lease.ts";
import type { AdmissionPlugin } from "../apiserver/admission.ts";
import { ConflictError, InvalidError, refOf } from "../apiserver/errors.ts";
import type { ObjectService } from "../apiserver/objects.ts";

/** Refuses deleting a lease that has not ended while a cluster that adopted it lives (and is not being deleted). */
async function refuseDeleteInUse(objects: ObjectService, lease: LeaseObject, def: KindDefinition): Promise<void> {
  if (lease.status?.phase === "Expired" || lease.status?.phase === "Failed") return;
  const clusterDef = objects.registry.byKind(`${clusterKind.group}/${clusterKind.version}`, clusterKind.kind)!;
  for (const ref of lease.metadata.ownerReferences ?? []) {
    if (ref.kind !== clusterKind.kind) continue;
    const cluster = await objects.tryGet(clusterDef, lease.metadata.namespace, ref.name);
    if (cluster && cluster.metadata.uid === ref.uid && !cluster.metadata.deletionTimestamp) {
      throw new ConflictError(refOf(def, lease.metadata.name), `cluster ${ref.name} runs on the lease: delete the cluster (the lease goes with it), or let the lease end`);
    }
  }
}

export const leaseAdmission: AdmissionPlugin = {
  name: "Lease",
  async validate(request) {
    if (request.def.kind !== leaseKind.kind || request.def.group !== leaseKind.group) return;
    if (request.operation === "DELETE") return refuseDeleteInUse(request.objects, request.oldObject as LeaseObject, request.def);
    if (request.operation !== "CREATE") return;
    const lease = request.object as LeaseObject;
    const namespace = request.namespace;
    const found = await request.objects.tryGet(request.objects.registry.byKind(`${connectionKind.group}/${connectionKind.version}`, connectionKind.kind)!, namespace, lease.spec.connection);
    if (!found) throw new InvalidError(refOf(request.def, lease.metadata.name), [notFound("spec.connection", lease.spec.connection, `no Connection of that name in namespace ${namespace ?? "default"}`)]);
  },
};
