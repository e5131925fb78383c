// Reading a ResourceQuota object: its limits, scopes and the status a quota controller wrote. Structural,
// so the stored objects of any registry fit, and defensive about fields a free-form schema lets through.
import { fromRecord, type ResourceList } from "./resource-list.ts";

/** A ResourceQuota as stored (any registry's kind fits). */
export interface ResourceQuotaLike {
  metadata: { name?: string; namespace?: string; resourceVersion?: string };
  spec?: unknown;
  status?: unknown;
}

/** One requirement of a scope selector, or a listed scope (operator Exists). */
export interface ScopeRequirement {
  scopeName: string;
  operator: string;
  values?: string[];
}

export const QUOTA_SCOPES = ["Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"] as const;
export const SCOPE_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"] as const;

export function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

export function specHard(quota: ResourceQuotaLike): Record<string, unknown> {
  return record(record(quota.spec)?.hard) ?? {};
}

export function specScopes(quota: ResourceQuotaLike): string[] {
  return strings(record(quota.spec)?.scopes);
}

export function selectorRequirements(quota: ResourceQuotaLike): ScopeRequirement[] {
  const expressions = record(record(record(quota.spec)?.scopeSelector))?.matchExpressions;
  if (!Array.isArray(expressions)) return [];
  return expressions.map((e) => {
    const r = record(e) ?? {};
    return {
      scopeName: typeof r.scopeName === "string" ? r.scopeName : "",
      operator: typeof r.operator === "string" ? r.operator : "",
      ...(Array.isArray(r.values) ? { values: strings(r.values) } : {}),
    };
  });
}

/** Every scope the quota is limited to: its listed scopes (as Exists) then its selector's requirements. */
export function scopeRequirements(quota: ResourceQuotaLike): ScopeRequirement[] {
  return [...specScopes(quota).map((scopeName) => ({ scopeName, operator: "Exists" })), ...selectorRequirements(quota)];
}

/** The limits being enforced (status.hard, which the quota controller copies from spec.hard). */
export function statusHard(quota: ResourceQuotaLike): ResourceList {
  return fromRecord(record(record(quota.status)?.hard));
}

export function statusUsed(quota: ResourceQuotaLike): ResourceList {
  return fromRecord(record(record(quota.status)?.used));
}
