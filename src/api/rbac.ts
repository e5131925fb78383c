// rbac.authorization.k8s.io/v1 Role, RoleBinding, ClusterRole and ClusterRoleBinding, served by the control
// plane and by the emulated workload clusters. What enforces them is apiserver/authorization's ServedRbac,
// which each of those servers puts on its request path.
import { Type, type Static } from "@sinclair/typebox";
import { ageColumn, computedColumn } from "./columns.ts";
import { immutable, pathSegmentNameErrors } from "./field-errors.ts";
import { FreeForm, Struct, objectSchema, type KubeObject, type ObjectOf } from "./meta.ts";
import type { KindDefinition, PrinterColumn } from "./registry.ts";

const RBAC = { group: "rbac.authorization.k8s.io", version: "v1" } as const;
const API_VERSION = "rbac.authorization.k8s.io/v1";

const PolicyRuleSchema = Struct(
  {
    apiGroups: Type.Optional(Type.Array(Type.String(), { description: "API groups of the resources (\"\" is the core group, \"*\" all)." })),
    resources: Type.Optional(Type.Array(Type.String(), { description: "Resources the rule covers, e.g. pods, pods/log, \"*\"." })),
    resourceNames: Type.Optional(Type.Array(Type.String(), { description: "Restricts the rule to objects of these names." })),
    verbs: Type.Array(Type.String(), { description: "Allowed verbs: get, list, watch, create, update, patch, delete, \"*\"." }),
    nonResourceURLs: Type.Optional(Type.Array(Type.String(), { description: "Non-resource paths, e.g. /healthz (cluster roles only)." })),
  },
  { description: "What a role allows." },
);

const SubjectSchema = Struct(
  {
    kind: Type.String({ description: "User, Group or ServiceAccount." }),
    name: Type.String({ description: "Name of the subject." }),
    namespace: Type.Optional(Type.String({ description: "Namespace of a ServiceAccount subject." })),
    apiGroup: Type.Optional(Type.String({ description: "rbac.authorization.k8s.io for users and groups, \"\" for service accounts." })),
  },
  { description: "Who a binding grants the role to." },
);
type Subject = Static<typeof SubjectSchema>;

const RoleRefSchema = Struct(
  {
    apiGroup: Type.String({ description: "rbac.authorization.k8s.io." }),
    kind: Type.String({ description: "Role or ClusterRole." }),
    name: Type.String({ description: "Name of the role." }),
  },
  { description: "The role granted; it cannot be changed after creation." },
);

const createdAtColumn: PrinterColumn = {
  name: "CREATED AT",
  type: "string",
  jsonPath: ".metadata.creationTimestamp",
  description: "When the role was created.",
};

function subjectsOf(object: KubeObject, kind: string): string {
  const subjects = (object.subjects as Subject[] | undefined) ?? [];
  return subjects
    .filter((s) => s.kind === kind)
    .map((s) => (kind === "ServiceAccount" ? `${s.namespace ?? ""}/${s.name}` : s.name))
    .join(", ");
}

const bindingColumns: PrinterColumn[] = [
  computedColumn("ROLE", ".roleRef", "The role granted (kind/name).", (o) => {
    const ref = o.roleRef as { kind: string; name: string } | undefined;
    return ref ? `${ref.kind}/${ref.name}` : "";
  }),
  ageColumn,
  computedColumn("USERS", ".subjects", "Users bound.", (o) => subjectsOf(o, "User"), { priority: 1 }),
  computedColumn("GROUPS", ".subjects", "Groups bound.", (o) => subjectsOf(o, "Group"), { priority: 1 }),
  computedColumn("SERVICEACCOUNTS", ".subjects", "Service accounts bound.", (o) => subjectsOf(o, "ServiceAccount"), { priority: 1 }),
];

export const RoleSchema = objectSchema(API_VERSION, "Role", "Permissions within one namespace.", {
  rules: Type.Optional(Type.Array(PolicyRuleSchema, { description: "What the role allows." })),
});
export type RoleObject = ObjectOf<typeof RoleSchema>;

export const roleKind: KindDefinition<RoleObject> = {
  ...RBAC,
  kind: "Role",
  plural: "roles",
  singular: "role",
  shortNames: [],
  namespaced: true,
  schema: RoleSchema,
  description: "Permissions within one namespace.",
  subresources: { status: false },
  strategy: { validateName: pathSegmentNameErrors },
  printerColumns: [createdAtColumn],
};

export const ClusterRoleSchema = objectSchema(API_VERSION, "ClusterRole", "Permissions across the cluster, or a set of rules bound per namespace.", {
  rules: Type.Optional(Type.Array(PolicyRuleSchema, { description: "What the role allows." })),
  aggregationRule: Type.Optional(FreeForm("Selects other cluster roles whose rules this one aggregates.")),
});
export type ClusterRoleObject = ObjectOf<typeof ClusterRoleSchema>;

export const clusterRoleKind: KindDefinition<ClusterRoleObject> = {
  ...RBAC,
  kind: "ClusterRole",
  plural: "clusterroles",
  singular: "clusterrole",
  shortNames: [],
  namespaced: false,
  schema: ClusterRoleSchema,
  description: "Permissions across the cluster, or a set of rules bound per namespace.",
  subresources: { status: false },
  strategy: { validateName: pathSegmentNameErrors },
  printerColumns: [createdAtColumn],
};

export const RoleBindingSchema = objectSchema(API_VERSION, "RoleBinding", "Grants a role to subjects within one namespace.", {
  subjects: Type.Optional(Type.Array(SubjectSchema, { description: "Who the role is granted to." })),
  roleRef: RoleRefSchema,
});
export type RoleBindingObject = ObjectOf<typeof RoleBindingSchema>;

export const roleBindingKind: KindDefinition<RoleBindingObject> = {
  ...RBAC,
  kind: "RoleBinding",
  plural: "rolebindings",
  singular: "rolebinding",
  shortNames: [],
  namespaced: true,
  schema: RoleBindingSchema,
  description: "Grants a role to subjects within one namespace.",
  subresources: { status: false },
  strategy: { validateName: pathSegmentNameErrors },
  printerColumns: bindingColumns,
  validate: (binding, old) => (old ? immutable("roleRef", binding.roleRef, old.roleRef) : []),
};

export const ClusterRoleBindingSchema = objectSchema(API_VERSION, "ClusterRoleBinding", "Grants a cluster role to subjects across the cluster.", {
  subjects: Type.Optional(Type.Array(SubjectSchema, { description: "Who the role is granted to." })),
  roleRef: RoleRefSchema,
});
export type ClusterRoleBindingObject = ObjectOf<typeof ClusterRoleBindingSchema>;

export const clusterRoleBindingKind: KindDefinition<ClusterRoleBindingObject> = {
  ...RBAC,
  kind: "ClusterRoleBinding",
  plural: "clusterrolebindings",
  singular: "clusterrolebinding",
  shortNames: [],
  namespaced: false,
  schema: ClusterRoleBindingSchema,
  description: "Grants a cluster role to subjects across the cluster.",
  subresources: { status: false },
  strategy: { validateName: pathSegmentNameErrors },
  printerColumns: bindingColumns,
  validate: (binding, old) => (old ? immutable("roleRef", binding.roleRef, old.roleRef) : []),
};

/** The four RBAC kinds, as a registry holds them. */
export const rbacKinds: readonly KindDefinition[] = [roleKind, roleBindingKind, clusterRoleKind, clusterRoleBindingKind].map(
  (kind) => kind as unknown as KindDefinition,
);
