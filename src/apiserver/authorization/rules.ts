// Whether one policy rule allows a request, with Kubernetes' matching rules (rbac/v1 helpers): `*` in verbs,
// apiGroups and resources; `resource/subresource` and `*/subresource`; resourceNames, which only a request
// naming one object can match (so never list, watch, create or deletecollection of a whole collection);
// nonResourceURLs with a trailing `*` matching by prefix.
import { isResourceRequest, type PolicyRule, type RequestAttributes } from "./types.ts";

const ALL = "*";

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.some((v) => v === ALL || v === verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return (rule.apiGroups ?? []).some((g) => g === ALL || g === group);
}

/** `combined` is `resource` or `resource/subresource`. */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === ALL || r === combined) return true;
    if (subresource !== "" && r.length === subresource.length + 2 && r.startsWith("*/") && r.endsWith(subresource)) return true;
  }
  return false;
}

export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(name);
}

export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const url of rule.nonResourceURLs ?? []) {
    if (url === ALL || url === path) return true;
    if (url.endsWith(ALL) && path.startsWith(url.replace(/\*+$/, ""))) return true;
  }
  return false;
}

export function ruleAllows(request: RequestAttributes, rule: PolicyRule): boolean {
  if (!verbMatches(rule, request.verb)) return false;
  if (!isResourceRequest(request)) return nonResourceURLMatches(rule, request.path);
  const { group, resource, subresource = "", name = "" } = request.resource;
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return apiGroupMatches(rule, group) && resourceMatches(rule, combined, subresource) && resourceNameMatches(rule, name);
}
