// Authorization by Kubernetes RBAC, for the control plane's API server and every emulated workload
// cluster's alike: the Authorizer the request path asks (allow-all unless a server passes another), the policy index a server keeps current from the watch of its RBAC objects, the
// authorizer over it, the Forbidden error of a refusal, the guard on writes of roles and bindings, and the
// default ClusterRoles a server installs.
export { PolicyIndex } from "./policy-index.ts";
export { RbacAuthorizer, type NonResourceRule, type ResourceRule, type SubjectRulesReviewStatus } from "./rbac.ts";
export { forbiddenError, forbiddenMessage } from "./forbidden.ts";
export { allowAll, authorize, type AuthorizationDecision, type Authorizer } from "./authorizer.ts";
export { defaultClusterRoleBindings, defaultClusterRoles } from "./default-roles.ts";
export { ruleAllows } from "./rules.ts";
export { EscalationError, checkRbacWrite, coveredBy, type RbacWrite } from "./escalation.ts";
export type { BindingObject, PolicyRule, RbacDecision, RbacObject, RequestAttributes, ResourceAttributes, RoleObject, Subject, UserInfo } from "./types.ts";
