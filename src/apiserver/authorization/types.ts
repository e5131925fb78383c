// The shapes RBAC evaluation reads: the rbac.authorization.k8s.io/v1 objects (only the fields that decide
// anything) and the attributes of a request, as kube-apiserver's authorizer.Attributes carries them.
// They are structural, so the stored objects of any registry and the request path's own types fit them.

/** One rule of a Role or ClusterRole. */
export interface PolicyRule {
  verbs: readonly string[];
  apiGroups?: readonly string[];
  /** Plurals, as `resource`, `resource/subresource`, "*" (all), or "*" + "/subresource". */
  resources?: readonly string[];
  resourceNames?: readonly string[];
  /** Paths outside the resources, a trailing `*` matching any suffix (ClusterRoles only). */
  nonResourceURLs?: readonly string[];
}

export interface Subject {
  /** User, Group or ServiceAccount. */
  kind: string;
  name: string;
  /** Of a ServiceAccount; in a RoleBinding it defaults to the binding's namespace. */
  namespace?: string;
  apiGroup?: string;
}

export interface RoleRef {
  apiGroup: string;
  /** Role or ClusterRole. */
  kind: string;
  name: string;
}

interface RbacMetadata {
  name?: string;
  namespace?: string;
}

export interface RoleObject {
  kind: string;
  metadata: RbacMetadata;
  rules?: readonly PolicyRule[];
}

export interface BindingObject {
  kind: string;
  metadata: RbacMetadata;
  subjects?: readonly Subject[];
  roleRef: RoleRef;
}

/** Any of the four RBAC kinds: Role, ClusterRole, RoleBinding, ClusterRoleBinding. */
export type RbacObject = RoleObject | BindingObject;

/** Who asks: the authenticated user and its groups (system:authenticated among them). */
export interface UserInfo {
  user: string;
  groups: readonly string[];
}

/** The resource a request addresses. */
export interface ResourceAttributes {
  /** "" for the core group. */
  group: string;
  /** The plural, e.g. pods. */
  resource: string;
  subresource?: string;
  /** Unset or "" for cluster-scoped requests and lists across all namespaces. */
  namespace?: string;
  /** Unset for list, watch, create and deletecollection (unless narrowed to one name). */
  name?: string;
}

export interface ResourceRequestAttributes {
  identity: UserInfo;
  /** get, list, watch, create, update, patch, delete, deletecollection, or another (bind, escalate …). */
  verb: string;
  resource: ResourceAttributes;
}

export interface NonResourceRequestAttributes {
  identity: UserInfo;
  verb: string;
  /** The request's path, e.g. /healthz or /apis/slipway.dev. */
  path: string;
}

export type RequestAttributes = ResourceRequestAttributes | NonResourceRequestAttributes;

export function isResourceRequest(attributes: RequestAttributes): attributes is ResourceRequestAttributes {
  return "resource" in attributes && attributes.resource !== undefined;
}

/** Whether the request is allowed, and why (the rule's source, or the resolution errors of a denial). */
export type RbacDecision = { allowed: true; reason: string } | { allowed: false; reason: string };

export const RBAC_GROUP = "rbac.authorization.k8s.io";
export const GROUP_MASTERS = "system:masters";
export const GROUP_AUTHENTICATED = "system:authenticated";
export const GROUP_UNAUTHENTICATED = "system:unauthenticated";
export const SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:";
