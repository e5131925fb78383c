// LogicalCloud: one namespace, with its users, their permissions and a quota, present on several clusters
// at once (EMCO's logical cloud). Instantiating it makes on every member cluster the namespace, a
// ResourceQuota, a Role/RoleBinding per user and the logical cloud's shared trust (its intermediate CA in
// a mesh namespace, the trust bundle in the namespace, a DNS stanza for its service domain); each user
// gets one kubeconfig with a context per cluster, whose client certificate that cluster signed.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, keyedBy, MapOf, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn, readyOfDesired } from "../columns.ts";
import { dnsLabelErrors, duplicate, immutable, invalid, required } from "../field-errors.ts";
import { labelSelectorSchema } from "../selector.ts";
import { ClusterTargetSchema, clusterTargetErrors } from "./resourcesync.ts";
import { SLIPWAY_API_VERSION, slipwayKindBase, specDefaults } from "./group.ts";

export const FINALIZER_LOGICALCLOUD = "slipway.dev/logicalcloud";
/** The ResourceSyncs and Secrets made for a logical cloud carry its name under this label. */
export const LABEL_LOGICALCLOUD = "slipway.dev/logicalcloud";
export const USER_ROLES = ["admin", "edit", "view"] as const;
export const LOGICALCLOUD_PHASES = ["Pending", "Instantiating", "Ready", "Degraded", "Terminating"] as const;
/** Users' names go into Secret names (`<logicalcloud>-<user>-kubeconfig`) and certificate subjects. */
const MAX_NAME_LENGTH = 30;

const PolicyRuleSchema = Struct(
  {
    apiGroups: Type.Array(Type.String(), { description: "API groups (\"\" is the core group)." }),
    resources: Type.Array(Type.String(), { description: "Resources, e.g. pods, deployments, pods/log." }),
    resourceNames: Type.Optional(Type.Array(Type.String(), { description: "Only objects of these names." })),
    verbs: Type.Array(Type.String(), { description: "get, list, watch, create, update, patch, delete, deletecollection, or *." }),
  },
  { description: "A Kubernetes RBAC rule, within the logical cloud's namespace." },
);

const UserSchema = Struct(
  {
    name: Type.String({ minLength: 1, description: "The user's name: the certificate's common name, a DNS label." }),
    role: Type.Optional(StringEnum(USER_ROLES, { description: "A named level: admin, edit or view (Kubernetes' ClusterRoles, bound in the namespace)." })),
    rules: Type.Optional(Type.Array(PolicyRuleSchema, { description: "Permissions as RBAC rules (a Role in the namespace), with or instead of a role." })),
  },
  { description: "A user of the logical cloud." },
);
export type LogicalCloudUser = Static<typeof UserSchema>;

export const LogicalCloudSpecSchema = Struct(
  {
    namespace: Type.String({ minLength: 1, description: "The namespace made on every cluster (a DNS label). Cannot be changed." }),
    clusters: Type.Optional(Type.Array(ClusterTargetSchema, { ...keyedBy("name"), description: "Member clusters, by name (built or registered)." })),
    clusterSelector: Type.Optional(labelSelectorSchema("Member clusters, by label (in addition to those named).")),
    users: Type.Optional(Type.Array(UserSchema, { ...keyedBy("name"), description: "Users and their permissions." })),
    quota: Type.Optional(MapOf(Type.String(), "A ResourceQuota's hard limits, as quantities: pods: \"5\", requests.cpu: \"2\", limits.memory: 4Gi.")),
  },
  { description: "The namespace, members, users and quota." },
);
export type LogicalCloudSpec = Static<typeof LogicalCloudSpecSchema>;

const ObjectStateSchema = Struct(
  {
    kind: Type.String({ description: "Kind of the object." }),
    namespace: Type.Optional(Type.String({ description: "Its namespace." })),
    name: Type.String({ description: "Its name." }),
    state: Type.String({ description: "Pending, Applied, Failed or Drifted." }),
    message: Type.Optional(Type.String({ description: "The API's error, if any." })),
  },
  { description: "One object the logical cloud made in a cluster." },
);

const MemberStatusSchema = Struct(
  {
    name: Type.String({ description: "Name of the cluster." }),
    state: StringEnum(["Pending", "Ready", "Failed", "Removing"], { description: "Ready once every object is applied and every user has a certificate there." }),
    message: Type.Optional(Type.String({ description: "Why the cluster is not Ready." })),
    resources: Type.Optional(Type.Array(ObjectStateSchema, { description: "What was made there, as the synchroniser reports it." })),
  },
  { description: "The logical cloud on one cluster." },
);
export type MemberStatus = Static<typeof MemberStatusSchema>;

const UserStatusSchema = Struct(
  {
    name: Type.String({ description: "The user." }),
    kubeconfigSecret: Type.String({ description: "Secret (key value) with the user's kubeconfig: one context per cluster." }),
    clusters: Type.Array(Type.String(), { description: "Clusters the kubeconfig has a context for." }),
  },
  { description: "One user's credentials." },
);

export const LogicalCloudStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(LOGICALCLOUD_PHASES, { description: "Pending, Instantiating, Ready (every cluster is), Degraded or Terminating." })),
    observedGeneration: Type.Optional(Type.Integer({ description: "The spec generation this status describes." })),
    conditions: Type.Optional(Type.Array(Condition, { description: "Ready." })),
    message: Type.Optional(Type.String({ description: "What is wrong, if anything." })),
    readyClusters: Type.Optional(Type.Integer({ description: "Member clusters that are Ready." })),
    totalClusters: Type.Optional(Type.Integer({ description: "Member clusters." })),
    clusters: Type.Optional(Type.Array(MemberStatusSchema, { description: "Per member cluster (and those being removed)." })),
    users: Type.Optional(Type.Array(UserStatusSchema, { description: "Per user: where their kubeconfig is." })),
    caSecret: Type.Optional(Type.String({ description: "Secret holding the logical cloud's intermediate CA (issued by the namespace's root)." })),
  },
  { description: "Where the logical cloud stands on each cluster." },
);
export type LogicalCloudStatus = Static<typeof LogicalCloudStatusSchema>;

export const LogicalCloudSchema = objectSchema(SLIPWAY_API_VERSION, "LogicalCloud", "A namespace with users, permissions and a quota across clusters.", {
  spec: LogicalCloudSpecSchema,
  status: Type.Optional(LogicalCloudStatusSchema),
});
export type LogicalCloudObject = ObjectOf<typeof LogicalCloudSchema>;

/** The Secret holding a user's kubeconfig. */
export function userKubeconfigSecret(logicalCloud: string, user: string): string {
  return `${logicalCloud}-${user}-kubeconfig`;
}

const VERB = /^([a-z]+|\*)$/;

function ruleErrors(field: string, rules: LogicalCloudUser["rules"]): FieldError[] {
  const errors: FieldError[] = [];
  (rules ?? []).forEach((rule, i) => {
    const at = `${field}[${i}]`;
    if (rule.verbs.length === 0) errors.push(required(`${at}.verbs`, "Required value: verbs must contain at least one value"));
    rule.verbs.forEach((verb, j) => {
      if (!VERB.test(verb)) errors.push(invalid(`${at}.verbs[${j}]`, verb, "must be a lowercase verb such as get, list or create, or *"));
    });
    if (rule.resources.length === 0) errors.push(required(`${at}.resources`, "Required value: resource rules must supply at least one resource"));
    if (rule.apiGroups.length === 0) errors.push(required(`${at}.apiGroups`, "Required value: resource rules must supply at least one api group"));
  });
  return errors;
}

function validateLogicalCloud(cloud: LogicalCloudObject, old?: LogicalCloudObject): FieldError[] {
  const spec = cloud.spec;
  const errors: FieldError[] = [];
  if (cloud.metadata.name !== undefined) errors.push(...dnsLabelErrors("metadata.name", cloud.metadata.name, MAX_NAME_LENGTH));
  errors.push(...dnsLabelErrors("spec.namespace", spec.namespace));
  errors.push(...clusterTargetErrors(spec));
  const users = new Set<string>();
  (spec.users ?? []).forEach((user, i) => {
    const at = `spec.users[${i}]`;
    errors.push(...dnsLabelErrors(`${at}.name`, user.name, MAX_NAME_LENGTH));
    if (users.has(user.name)) errors.push(duplicate(`${at}.name`, user.name));
    users.add(user.name);
    if (user.role === undefined && (user.rules ?? []).length === 0) errors.push(required(`${at}.role`, "Required value: a user needs a role (admin, edit or view) or rules"));
    errors.push(...ruleErrors(`${at}.rules`, user.rules));
  });
  if (old) errors.push(...immutable("spec.namespace", spec.namespace, old.spec.namespace, "the namespace is made on every member cluster; make another logical cloud instead"));
  return errors;
}

export const logicalCloudKind: KindDefinition<LogicalCloudObject> = {
  ...slipwayKindBase,
  kind: "LogicalCloud",
  plural: "logicalclouds",
  singular: "logicalcloud",
  shortNames: ["lc"],
  schema: LogicalCloudSchema,
  description: "A namespace with its users, permissions and quota, present on several clusters at once.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the logical cloud."),
    fieldColumn("NAMESPACE-ON-CLUSTERS", ".spec.namespace", "The namespace made on every member cluster."),
    fieldColumn("PHASE", ".status.phase", "Pending, Instantiating, Ready, Degraded or Terminating."),
    computedColumn<LogicalCloudObject>("CLUSTERS", ".status.readyClusters", "Ready/member clusters.", ({ status }) => readyOfDesired(status?.readyClusters ?? 0, status?.totalClusters ?? 0)),
    computedColumn<LogicalCloudObject>("USERS", ".spec.users", "Users.", (o) => (o.spec.users ?? []).length, { type: "integer" }),
    ageColumn,
    fieldColumn("MESSAGE", ".status.message", "What is wrong, if anything.", { priority: 1 }),
  ],
  defaults: specDefaults(LogicalCloudSpecSchema),
  validate: validateLogicalCloud,
};
