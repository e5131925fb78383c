// The ClusterRoles and ClusterRoleBindings an API server installs at start, with Kubernetes' bootstrap
// meaning (plugin/pkg/auth/authorizer/rbac/bootstrappolicy): cluster-admin may do anything and is bound to
// system:masters; every authenticated user may discover the API and review its own access; admin, edit and
// view are the user-facing roles, flattened here (aggregation is not served). They cover the core kinds a
// workload cluster serves and Slipway's own (slipway.dev): view reads everything but Secrets and RBAC; edit
// also changes them (clusters, pools, connections …) and reads Secrets; admin adds Roles and RoleBindings
// within a namespace. Status subresources stay with the controllers.
import { GROUP_AUTHENTICATED, GROUP_MASTERS, GROUP_UNAUTHENTICATED, RBAC_GROUP, type PolicyRule, type Subject } from "./types.ts";

const API_VERSION = `${RBAC_GROUP}/v1`;
const READ = ["get", "list", "watch"];
const WRITE = ["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE = [...READ, ...WRITE];

const CORE = "";
const APPS = "apps";
const SLIPWAY = "slipway.dev";

/** Slipway's kinds that users declare and change: view reads them, edit writes them. */
export const SLIPWAY_USER_RESOURCES = [
  "connections",
  "clusters",
  "machinepools",
  "bootstrapconfigs",
  "simmachinepools",
  "hostmachinepools",
  "machines",
  "logicalclouds",
  "resourcesyncs",
  "leases",
  "clustertemplates",
  "addons",
  "hosts",
  "realms",
  "oidcclients",
] as const;

/** Slipway's kinds that its controllers make and own: view and edit read them. */
export const SLIPWAY_MANAGED_RESOURCES = ["infrastructures", "operations", "platforms"] as const;

/** Slipway's scale subresources: view reads them, edit writes them (as deployments/scale). */
const SLIPWAY_SCALABLE = ["machinepools/scale"];

const withStatus = (resources: readonly string[]): string[] => resources.flatMap((r) => [r, `${r}/status`]);

function rule(verbs: readonly string[], apiGroups: readonly string[], resources: readonly string[]): PolicyRule {
  return { verbs: [...verbs], apiGroups: [...apiGroups], resources: [...resources] };
}

function urlRule(verbs: readonly string[], urls: readonly string[]): PolicyRule {
  return { verbs: [...verbs], nonResourceURLs: [...urls] };
}

const viewRules: PolicyRule[] = [
  rule(READ, [CORE], ["pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"]),
  rule(READ, [CORE], ["limitranges", "resourcequotas", "bindings", "events", "pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"]),
  // Read access to namespaces at the namespace scope means reading *this* namespace.
  rule(READ, [CORE], ["namespaces"]),
  rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
  rule(READ, [APPS], ["controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale", "daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale", "replicasets", "replicasets/status", "replicasets/scale"]),
  rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
  rule(READ, ["batch"], ["jobs", "cronjobs", "cronjobs/status", "jobs/status"]),
  rule(READ, ["extensions"], ["daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status", "ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale", "networkpolicies"]),
  rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
  rule(READ, ["networking.k8s.io"], ["networkpolicies", "ingresses", "ingresses/status"]),
  rule(READ, [SLIPWAY], [...withStatus([...SLIPWAY_USER_RESOURCES, ...SLIPWAY_MANAGED_RESOURCES]), ...SLIPWAY_SCALABLE]),
];

const editRules: PolicyRule[] = [
  // Reads of what can escalate (secrets, exec), kept out of view.
  rule(READ, [CORE], ["pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"]),
  rule(["impersonate"], [CORE], ["serviceaccounts"]),
  rule(WRITE, [CORE], ["pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"]),
  rule(["create"], [CORE], ["pods/eviction"]),
  rule(WRITE, [CORE], ["replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events"]),
  rule(["create"], [CORE], ["serviceaccounts/token"]),
  rule(WRITE, [APPS], ["statefulsets", "statefulsets/scale", "daemonsets", "deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"]),
  rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
  rule(WRITE, ["batch"], ["jobs", "cronjobs"]),
  rule(WRITE, ["extensions"], ["daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"]),
  rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
  rule(WRITE, ["networking.k8s.io"], ["networkpolicies", "ingresses"]),
  rule(READ_WRITE, ["coordination.k8s.io"], ["leases"]),
  rule(WRITE, [SLIPWAY], [...SLIPWAY_USER_RESOURCES, ...SLIPWAY_SCALABLE]),
];

const adminRules: PolicyRule[] = [
  rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
  rule(READ_WRITE, [RBAC_GROUP], ["roles", "rolebindings"]),
];

const BOOTSTRAP_LABELS = { "kubernetes.io/bootstrapping": "rbac-defaults" };
const BOOTSTRAP_ANNOTATIONS = { "rbac.authorization.kubernetes.io/autoupdate": "true" };

export interface DefaultClusterRole {
  apiVersion: typeof API_VERSION;
  kind: "ClusterRole";
  metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
  rules: PolicyRule[];
}

export interface DefaultClusterRoleBinding {
  apiVersion: typeof API_VERSION;
  kind: "ClusterRoleBinding";
  metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
  roleRef: { apiGroup: typeof RBAC_GROUP; kind: "ClusterRole"; name: string };
  subjects: Subject[];
}

function clusterRole(name: string, rules: PolicyRule[]): DefaultClusterRole {
  return {
    apiVersion: API_VERSION,
    kind: "ClusterRole",
    metadata: { name, labels: { ...BOOTSTRAP_LABELS }, annotations: { ...BOOTSTRAP_ANNOTATIONS } },
    rules: structuredClone(rules),
  };
}

function groupBinding(role: string, groups: string[]): DefaultClusterRoleBinding {
  return {
    apiVersion: API_VERSION,
    kind: "ClusterRoleBinding",
    metadata: { name: role, labels: { ...BOOTSTRAP_LABELS }, annotations: { ...BOOTSTRAP_ANNOTATIONS } },
    roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name: role },
    subjects: groups.map((name) => ({ kind: "Group", apiGroup: RBAC_GROUP, name })),
  };
}

/** The default ClusterRoles, fresh objects on each call (ready to create). */
export function defaultClusterRoles(): DefaultClusterRole[] {
  return [
    clusterRole("cluster-admin", [rule(["*"], ["*"], ["*"]), urlRule(["*"], ["*"])]),
    clusterRole("system:discovery", [
      urlRule(["get"], ["/livez", "/readyz", "/healthz", "/version", "/version/", "/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"]),
    ]),
    clusterRole("system:basic-user", [
      rule(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
      rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
    ]),
    clusterRole("system:public-info-viewer", [urlRule(["get"], ["/livez", "/readyz", "/healthz", "/version", "/version/"])]),
    clusterRole("admin", [...viewRules, ...editRules, ...adminRules]),
    clusterRole("edit", [...viewRules, ...editRules]),
    clusterRole("view", viewRules),
  ];
}

/** The default ClusterRoleBindings, fresh objects on each call (ready to create). */
export function defaultClusterRoleBindings(): DefaultClusterRoleBinding[] {
  return [
    groupBinding("cluster-admin", [GROUP_MASTERS]),
    groupBinding("system:discovery", [GROUP_AUTHENTICATED]),
    groupBinding("system:basic-user", [GROUP_AUTHENTICATED]),
    groupBinding("system:public-info-viewer", [GROUP_AUTHENTICATED, GROUP_UNAUTHENTICATED]),
  ];
}
