// Core v1 ServiceAccount and ResourceQuota of an emulated workload cluster (ConfigMap is api/core.ts's:
// the control plane serves it too).
import { Type } from "@sinclair/typebox";
import { ageColumn } from "../../api/columns.ts";
import { validateResourceQuotaSpec } from "../../apiserver/quota/validation.ts";
import { FreeForm, MapOf, Struct, objectSchema, type ObjectOf } from "../../api/meta.ts";
import type { KindDefinition } from "../../api/registry.ts";

const CORE = { group: "", version: "v1" } as const;

// ---------------------------------------------------------------------------------------------------------
// ServiceAccount

const LocalReference = Struct({ name: Type.String({ description: "Name of the referent in the same namespace." }) }, { description: "A reference to an object in the same namespace." });

export const ServiceAccountSchema = objectSchema("v1", "ServiceAccount", "An identity for processes that run in pods.", {
  secrets: Type.Optional(Type.Array(LocalReference, { description: "Secrets holding tokens of this account (legacy)." })),
  imagePullSecrets: Type.Optional(Type.Array(LocalReference, { description: "Secrets used to pull images for pods of this account." })),
  automountServiceAccountToken: Type.Optional(Type.Boolean({ description: "Whether pods mount an API token by default." })),
});
export type ServiceAccountObject = ObjectOf<typeof ServiceAccountSchema>;

export const serviceAccountKind: KindDefinition<ServiceAccountObject> = {
  ...CORE,
  kind: "ServiceAccount",
  plural: "serviceaccounts",
  singular: "serviceaccount",
  shortNames: ["sa"],
  namespaced: true,
  schema: ServiceAccountSchema,
  description: "An identity for processes that run in pods.",
  subresources: { status: false },
  printerColumns: [
    { name: "SECRETS", type: "integer", jsonPath: ".secrets", description: "Number of token secrets.", value: (o) => (o as ServiceAccountObject).secrets?.length ?? 0 },
    ageColumn,
  ],
};

// ---------------------------------------------------------------------------------------------------------
// ResourceQuota

export const ResourceQuotaSchema = objectSchema("v1", "ResourceQuota", "Limits on the resources a namespace may consume.", {
  spec: Type.Optional(
    Struct(
      {
        hard: Type.Optional(MapOf(Type.String(), "Limit per resource name, e.g. pods: \"10\", requests.cpu: \"4\".")),
        scopes: Type.Optional(Type.Array(Type.String(), { description: "Scopes the quota applies to, e.g. BestEffort." })),
        scopeSelector: Type.Optional(FreeForm("A selector of the scopes the quota applies to.")),
      },
      { description: "Desired limits." },
    ),
  ),
  status: Type.Optional(
    Struct(
      {
        hard: Type.Optional(MapOf(Type.String(), "Limits being enforced.")),
        used: Type.Optional(MapOf(Type.String(), "Current usage per resource name.")),
      },
      { description: "Enforced limits and current usage." },
    ),
  ),
});
export type ResourceQuotaObject = ObjectOf<typeof ResourceQuotaSchema>;

/** "cpu: 0/4, memory: 0/8Gi" for the resources of one side (requests or limits), as kubectl shows it. */
function quotaUsage(quota: ResourceQuotaObject, limits: boolean): string {
  const hard = quota.status?.hard ?? quota.spec?.hard ?? {};
  const used = quota.status?.used ?? {};
  return Object.keys(hard)
    .filter((name) => name.startsWith("limits.") === limits)
    .sort()
    .map((name) => `${name}: ${used[name] ?? "0"}/${hard[name]}`)
    .join(", ");
}

export const resourceQuotaKind: KindDefinition<ResourceQuotaObject> = {
  ...CORE,
  kind: "ResourceQuota",
  plural: "resourcequotas",
  singular: "resourcequota",
  shortNames: ["quota"],
  namespaced: true,
  schema: ResourceQuotaSchema,
  description: "Limits on the resources a namespace may consume.",
  subresources: { status: true },
  printerColumns: [
    ageColumn,
    { name: "REQUEST", type: "string", jsonPath: ".status", description: "Usage of requested resources against their limits.", value: (o) => quotaUsage(o as ResourceQuotaObject, false) },
    { name: "LIMIT", type: "string", jsonPath: ".status", description: "Usage of resource limits against their limits.", value: (o) => quotaUsage(o as ResourceQuotaObject, true) },
  ],
  // Resource names and quantities as kube-apiserver checks them: an unknown name or a bad quantity is refused.
  validate: (quota) => validateResourceQuotaSpec(quota),
};
