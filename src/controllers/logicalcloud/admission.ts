// Admission of LogicalClouds on the control plane: their quota is a ResourceQuota's `hard` map, checked
// as kube-apiserver checks one (resource names it knows, quantities it can read), so a quota no member
// cluster would accept is refused before anything is made, naming the field.
import type { AdmissionPlugin } from "../../apiserver/admission.ts";
import { InvalidError } from "../../apiserver/errors.ts";
import { validateHardLimits } from "../../apiserver/quota/validation.ts";
import type { LogicalCloudObject } from "../../api/slipway/logicalcloud.ts";

export const logicalCloudQuotaAdmission: AdmissionPlugin = {
  name: "LogicalCloudQuota",
  validate: (request) => {
    if (request.operation === "DELETE" || request.def.kind !== "LogicalCloud" || request.def.group !== "slipway.dev") return;
    const errors = validateHardLimits((request.object as LogicalCloudObject).spec.quota ?? {}, "spec.quota");
    if (errors.length > 0) throw new InvalidError({ group: request.def.group, kind: request.def.kind, plural: request.def.plural, name: request.name }, errors);
  },
};
