// Core v1 ResourceQuota of an emulated workload cluster (ConfigMap and ServiceAccount are api/core.ts's:
// the control plane serves them too).
import { Type } from "@sinclair/typebox";
import { ageColumn, computedColumn } from "../../api/columns.ts";
import { validateResourceQuotaSpec } from "../../apiserver/quota/validation.ts";
import { FreeForm, MapOf, Struct, objectSchema, type ObjectOf } from "../../api/meta.ts";
import type { KindDefinition } from "../../api/registry.ts";

export { serviceAccountKind, ServiceAccountSchema, type ServiceAccountObject } from "../../api/core.ts";

const CORE = { group: "", version: "v1" } as const;

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
    computedColumn<ResourceQuotaObject>("REQUEST", ".status", "Usage of requested resources against their limits.", (o) => quotaUsage(o, false)),
    computedColumn<ResourceQuotaObject>("LIMIT", ".status", "Usage of resource limits against their limits.", (o) => quotaUsage(o, true)),
  ],
  // Resource names and quantities as kube-apiserver checks them: an unknown name or a bad quantity is refused.
  validate: (quota) => validateResourceQuotaSpec(quota),
};
