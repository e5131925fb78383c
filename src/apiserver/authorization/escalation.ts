// RBAC's guard on writes of roles and bindings, as kube-apiserver's RBAC storage has it: a user may only
// write a Role or ClusterRole whose rules they hold themselves (in that namespace), unless they may
// `escalate` it, and only bind a role whose rules they hold, unless they may `bind` it; system:masters may
// do both. Without it, anyone who may create RoleBindings (the admin role) could grant themselves
// anything in their namespace.
import { isDeepStrictEqual } from "node:util";
import { ForbiddenError } from "../errors.ts";
import { goQuote } from "./forbidden.ts";
import { RoleResolutionError } from "./policy-index.ts";
import { aggregateErrors, type RbacAuthorizer } from "./rbac.ts";
import { GROUP_MASTERS, RBAC_GROUP, type BindingObject, type PolicyRule, type RbacObject, type RoleObject, type UserInfo } from "./types.ts";

const has = (set: readonly string[] | undefined, value: string): boolean => (set ?? []).includes(value);
const hasAll = (set: readonly string[] | undefined, values: readonly string[] | undefined): boolean => (values ?? []).every((v) => has(set, v));

/** A rule split into rules of one group, resource, verb and name (or one path and verb). */
function breakdown(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const group of rule.apiGroups ?? []) {
    for (const resource of rule.resources ?? []) {
      for (const verb of rule.verbs) {
        const names = rule.resourceNames ?? [];
        if (names.length === 0) out.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
        else for (const name of names) out.push({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [name] });
      }
    }
  }
  for (const url of rule.nonResourceURLs ?? []) for (const verb of rule.verbs) out.push({ nonResourceURLs: [url], verbs: [verb] });
  return out;
}

function resourcesCovered(owner: readonly string[] | undefined, wanted: readonly string[] | undefined): boolean {
  if (has(owner, "*") || hasAll(owner, wanted)) return true;
  return (wanted ?? []).every((path) => {
    if (has(owner, path)) return true;
    const slash = path.indexOf("/");
    return slash >= 0 && has(owner, `*/${path.slice(slash + 1)}`);
  });
}

function urlsCovered(owner: readonly string[] | undefined, wanted: readonly string[] | undefined): boolean {
  return (wanted ?? []).every((path) => (owner ?? []).some((o) => o === path || (o.endsWith("*") && path.startsWith(o.replace(/\*+$/, "")))));
}

/** Whether one of the owner's rules covers an atomic rule (Kubernetes' ruleCovers). */
function ruleCovers(owner: PolicyRule, sub: PolicyRule): boolean {
  const verbs = has(owner.verbs, "*") || hasAll(owner.verbs, sub.verbs);
  const groups = has(owner.apiGroups, "*") || hasAll(owner.apiGroups, sub.apiGroups);
  const names = (sub.resourceNames ?? []).length === 0 ? (owner.resourceNames ?? []).length === 0 : (owner.resourceNames ?? []).length === 0 || hasAll(owner.resourceNames, sub.resourceNames);
  return verbs && groups && resourcesCovered(owner.resources, sub.resources) && names && urlsCovered(owner.nonResourceURLs, sub.nonResourceURLs);
}

/** Whether `owner` rules grant everything `wanted` rules do, and the atomic rules they do not (Kubernetes' Covers). */
export function coveredBy(owner: readonly PolicyRule[], wanted: readonly PolicyRule[]): { covered: boolean; missing: PolicyRule[] } {
  const missing = wanted.flatMap(breakdown).filter((sub) => !owner.some((o) => ruleCovers(o, sub)));
  return { covered: missing.length === 0, missing };
}

/** Atomic rules merged back per group, resource and name, their verbs joined (Kubernetes' CompactRules). */
function compact(rules: readonly PolicyRule[]): PolicyRule[] {
  const simple = new Map<string, PolicyRule & { verbs: string[] }>();
  const others: PolicyRule[] = [];
  for (const rule of rules) {
    const isSimple = (rule.apiGroups ?? []).length === 1 && (rule.resources ?? []).length === 1 && (rule.resourceNames ?? []).length <= 1 && (rule.nonResourceURLs ?? []).length === 0;
    if (!isSimple) {
      others.push(rule);
      continue;
    }
    const key = JSON.stringify([rule.apiGroups, rule.resources, rule.resourceNames ?? []]);
    const existing = simple.get(key);
    if (!existing) {
      simple.set(key, { ...rule, verbs: [...rule.verbs] });
      continue;
    }
    for (const verb of rule.verbs) if (!existing.verbs.includes(verb)) existing.verbs.push(verb);
  }
  return [...others, ...simple.values()];
}

const quotedList = (values: readonly string[]): string => `[${values.map(goQuote).join(" ")}]`;

/** `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`, as Kubernetes prints a rule in escalation errors. */
export function compactString(rule: PolicyRule): string {
  const parts: string[] = [];
  if (rule.apiGroups?.length) parts.push(`APIGroups:${quotedList(rule.apiGroups)}`);
  if (rule.resources?.length) parts.push(`Resources:${quotedList(rule.resources)}`);
  if (rule.nonResourceURLs?.length) parts.push(`NonResourceURLs:${quotedList(rule.nonResourceURLs)}`);
  if (rule.resourceNames?.length) parts.push(`ResourceNames:${quotedList(rule.resourceNames)}`);
  if (rule.verbs.length) parts.push(`Verbs:${quotedList(rule.verbs)}`);
  return `{${parts.join(", ")}}`;
}

/** A role or binding write refused because it would grant what its author does not hold. */
export class EscalationError extends ForbiddenError {}

/** A write of a Role, ClusterRole, RoleBinding or ClusterRoleBinding. */
export interface RbacWrite {
  identity: UserInfo;
  /** As it would be stored. */
  object: RbacObject;
  /** The stored object an update replaces. */
  oldObject?: RbacObject;
}

const PLURALS: Record<string, string> = { Role: "roles", ClusterRole: "clusterroles", RoleBinding: "rolebindings", ClusterRoleBinding: "clusterrolebindings" };

function isBinding(object: RbacObject): object is BindingObject {
  return object.kind === "RoleBinding" || object.kind === "ClusterRoleBinding";
}

/** Whether an update only touches what garbage collection changes (owners, finalizers), which needs no check. */
function onlyGarbageCollectionFields(object: RbacObject, old: RbacObject): boolean {
  const strip = (o: RbacObject): unknown => {
    const metadata = { ...(o.metadata as Record<string, unknown>) };
    for (const field of ["ownerReferences", "finalizers", "resourceVersion", "managedFields", "generation"]) delete metadata[field];
    return { ...o, metadata };
  };
  return isDeepStrictEqual(strip(object), strip(old));
}

/**
 * Refuses (EscalationError, 403) a write of a role or binding that would grant what its author does not
 * hold; the rule set they lack is named as Kubernetes names it. Anything else passes.
 */
export function checkRbacWrite(authorizer: RbacAuthorizer, write: RbacWrite): void {
  const { identity, object, oldObject } = write;
  const plural = PLURALS[object.kind];
  if (!plural || identity.groups.includes(GROUP_MASTERS)) return;
  if (oldObject && onlyGarbageCollectionFields(object, oldObject)) return;
  const name = object.metadata.name ?? "";
  const namespace = object.kind === "Role" || object.kind === "RoleBinding" ? (object.metadata.namespace ?? "") : "";
  const refuse = (why: string): never => {
    throw new EscalationError(`${plural}.${RBAC_GROUP} ${goQuote(name)} is forbidden: ${why}`, { group: RBAC_GROUP, kind: "", plural, name });
  };
  const mayDo = (verb: string, resource: string, resourceName: string): boolean =>
    authorizer.authorize({ identity, verb, resource: { group: RBAC_GROUP, resource, name: resourceName, ...(namespace ? { namespace } : {}) } }).allowed;

  let wanted: readonly PolicyRule[];
  if (isBinding(object)) {
    const ref = object.roleRef;
    const refResource = ref.kind === "ClusterRole" ? "clusterroles" : ref.kind === "Role" ? "roles" : "";
    if (refResource && mayDo("bind", refResource, ref.name)) return;
    const rules = authorizer.policy.roleRules(ref, namespace);
    if (rules instanceof RoleResolutionError) return refuse(rules.message);
    wanted = rules;
  } else {
    if (mayDo("escalate", plural, name)) return;
    wanted = (object as RoleObject).rules ?? [];
  }

  const held = authorizer.rulesFor(identity, namespace);
  const { covered, missing } = coveredBy(held.rules, wanted);
  if (covered) return;
  const lines = [...new Set(compact(missing).map(compactString))].sort();
  let why = `user ${goQuote(identity.user)} (groups=${quotedList(identity.groups)}) is attempting to grant RBAC permissions not currently held:\n${lines.join("\n")}`;
  if (held.errors.length > 0) why += `; resolution errors: [${aggregateErrors(held.errors)}]`;
  refuse(why);
}
