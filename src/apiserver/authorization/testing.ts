// RBAC objects and identities for the tests of this folder, written the way a manifest would say them.
import { PolicyIndex } from "./policy-index.ts";
import { RbacAuthorizer } from "./rbac.ts";
import type { BindingObject, PolicyRule, RbacObject, RoleObject, Subject, UserInfo } from "./types.ts";

export function role(namespace: string, name: string, rules: readonly PolicyRule[]): RoleObject {
  return { kind: "Role", metadata: { namespace, name }, rules };
}

export function clusterRole(name: string, rules: readonly PolicyRule[]): RoleObject {
  return { kind: "ClusterRole", metadata: { name }, rules };
}

export function roleBinding(namespace: string, name: string, roleRef: { kind: "Role" | "ClusterRole"; name: string }, subjects: Subject[]): BindingObject {
  return { kind: "RoleBinding", metadata: { namespace, name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", ...roleRef }, subjects };
}

export function clusterRoleBinding(name: string, roleName: string, subjects: Subject[]): BindingObject {
  return { kind: "ClusterRoleBinding", metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: roleName }, subjects };
}

export const user = (name: string): Subject => ({ kind: "User", apiGroup: "rbac.authorization.k8s.io", name });
export const group = (name: string): Subject => ({ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name });
export const serviceAccount = (name: string, namespace?: string): Subject => ({ kind: "ServiceAccount", name, ...(namespace ? { namespace } : {}) });

/** An authenticated user, as the authenticators name one. */
export function person(name: string, ...groups: string[]): UserInfo {
  return { user: name, groups: [...groups, "system:authenticated"] };
}

/** A ServiceAccount's identity, with the groups its token authenticates it into. */
export function serviceAccountIdentity(namespace: string, name: string): UserInfo {
  return {
    user: `system:serviceaccount:${namespace}:${name}`,
    groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"],
  };
}

export function authorizerOf(objects: RbacObject[]): RbacAuthorizer {
  const index = new PolicyIndex();
  for (const object of objects) index.added(object);
  return new RbacAuthorizer(index);
}
