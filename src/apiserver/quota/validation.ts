// Validation of a ResourceQuota's spec, as kube-apiserver validates it (ValidateResourceQuotaSpec):
// every name in `hard` is a standard quota resource or a qualified name, every value a non-negative
// quantity (whole for counts), scopes known, compatible with the limited resources and not contradictory.
// Slipway goes one step further for qualified names: it refuses those no evaluator here can count (a
// typo such as "nvidia.com/gpu" for "requests.nvidia.com/gpu"), since a limit nobody enforces is worse
// than an error.
import { invalid, required } from "../../api/field-errors.ts";
import type { FieldError } from "../../api/registry.ts";
import { InvalidQuantityError, Quantity } from "./quantity.ts";
import { QUOTA_SCOPES, SCOPE_OPERATORS, record, selectorRequirements, specHard, specScopes, type ResourceQuotaLike } from "./quota-object.ts";
import {
  countedResource,
  isExtendedRequestsName,
  isIntegerResourceName,
  isStandardQuotaResourceName,
  isStandardResourceName,
  qualifiedNameError,
  storageClassOf,
} from "./resource-names.ts";

const NOT_STANDARD = "must be a standard resource type or fully qualified";
const NOT_QUOTA = "must be a standard resource for quota";

const POD_COUNT = new Set(["pods"]);
const POD_COMPUTE = new Set(["cpu", "limits.cpu", "limits.memory", "memory", "requests.cpu", "requests.memory"]);

/** Whether a resource may be limited under a scope (Kubernetes' IsResourceQuotaScopeValidForResource). */
function scopeValidForResource(scope: string, resource: string): boolean {
  switch (scope) {
    case "Terminating":
    case "NotTerminating":
    case "NotBestEffort":
    case "PriorityClass":
    case "CrossNamespacePodAffinity":
      return POD_COUNT.has(resource) || POD_COMPUTE.has(resource);
    case "BestEffort":
      return POD_COUNT.has(resource);
    default:
      return true;
  }
}

/** Whether a qualified name is one of the forms the evaluators count. */
function countable(name: string): boolean {
  return countedResource(name) !== undefined || isExtendedRequestsName(name) || storageClassOf(name) !== undefined;
}

function resourceNameErrors(name: string, field: string): FieldError[] {
  const qualified = qualifiedNameError(name);
  if (qualified) return [invalid(field, name, qualified)];
  if (!name.includes("/")) {
    const errors = isStandardResourceName(name) ? [] : [invalid(field, name, NOT_STANDARD)];
    return isStandardQuotaResourceName(name) ? errors : [...errors, invalid(field, name, NOT_QUOTA)];
  }
  return countable(name) ? [] : [invalid(field, name, NOT_QUOTA)];
}

function quantityErrors(name: string, value: unknown, field: string): FieldError[] {
  if (typeof value !== "string" && typeof value !== "number") return [invalid(field, value, "must be a quantity, e.g. \"10\", \"500m\" or \"2Gi\"")];
  let quantity: Quantity;
  try {
    quantity = Quantity.parse(value);
  } catch (error) {
    if (error instanceof InvalidQuantityError) return [invalid(field, value, error.message)];
    throw error;
  }
  const errors: FieldError[] = [];
  if (quantity.sign() < 0) errors.push(invalid(field, quantity.toString(), "must be greater than or equal to 0"));
  if (isIntegerResourceName(name) && quantity.milliValue() % 1000n !== 0n) errors.push(invalid(field, quantity.toString(), "must be an integer"));
  return errors;
}

const CONFLICTING: readonly (readonly [string, string])[] = [
  ["BestEffort", "NotBestEffort"],
  ["Terminating", "NotTerminating"],
];

function conflicts(scopes: ReadonlySet<string>): boolean {
  return CONFLICTING.some(([a, b]) => scopes.has(a) && scopes.has(b));
}

function scopeErrors(quota: ResourceQuotaLike, hardNames: readonly string[], path: string): FieldError[] {
  const scopes = specScopes(quota);
  if (scopes.length === 0) return [];
  const field = `${path}.scopes`;
  const errors: FieldError[] = [];
  for (const scope of scopes) {
    if (!(QUOTA_SCOPES as readonly string[]).includes(scope)) errors.push(invalid(field, scopes, "unsupported scope"));
    for (const name of hardNames) {
      if (isStandardQuotaResourceName(name) && !scopeValidForResource(scope, name)) errors.push(invalid(field, scopes, "unsupported scope applied to resource"));
    }
  }
  if (conflicts(new Set(scopes))) errors.push(invalid(field, scopes, "conflicting scopes"));
  return errors;
}

function scopeSelectorErrors(quota: ResourceQuotaLike, hardNames: readonly string[], path: string): FieldError[] {
  const selector = record(quota.spec)?.scopeSelector;
  if (selector === undefined || selector === null) return [];
  const field = `${path}.scopeSelector.matchExpressions`;
  const expressions = record(selector)?.matchExpressions;
  if (expressions !== undefined && !Array.isArray(expressions)) return [invalid(field, expressions, "must be a list of scope requirements")];
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  selectorRequirements(quota).forEach((requirement, i) => {
    const at = `${field}[${i}]`;
    const { scopeName, operator, values = [] } = requirement;
    if (!(QUOTA_SCOPES as readonly string[]).includes(scopeName)) errors.push(invalid(`${at}.scopeName`, scopeName, "unsupported scope"));
    for (const name of hardNames) {
      if (isStandardQuotaResourceName(name) && !scopeValidForResource(scopeName, name)) errors.push(invalid(at, requirement, "unsupported scope applied to resource"));
    }
    if (scopeName !== "PriorityClass" && (QUOTA_SCOPES as readonly string[]).includes(scopeName) && operator !== "Exists") {
      errors.push(
        invalid(
          `${at}.operator`,
          operator,
          "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
        ),
      );
    }
    if (operator === "In" || operator === "NotIn") {
      if (values.length === 0) errors.push(required(`${at}.values`, "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"));
    } else if (operator === "Exists" || operator === "DoesNotExist") {
      if (values.length > 0) errors.push(invalid(`${at}.values`, values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"));
    } else {
      errors.push(invalid(`${at}.operator`, operator, `not a valid selector operator (one of ${SCOPE_OPERATORS.join(", ")})`));
    }
    seen.add(scopeName);
  });
  if (conflicts(seen)) errors.push(invalid(field, [...seen], "conflicting scopes"));
  return errors;
}

/** Field errors of a ResourceQuota's spec; `path` is where the spec sits ("spec", or a LogicalCloud's "spec.quota"). */
export function validateResourceQuotaSpec(quota: ResourceQuotaLike, path = "spec"): FieldError[] {
  const hard = specHard(quota);
  const names = Object.keys(hard).sort();
  return [...validateHardLimits(hard, `${path}.hard`), ...scopeErrors(quota, names, path), ...scopeSelectorErrors(quota, names, path)];
}

/** Field errors of a bare `hard` map (a LogicalCloud's quota), reported under `path` (e.g. "spec.quota"). */
export function validateHardLimits(hard: Readonly<Record<string, unknown>>, path: string): FieldError[] {
  const errors: FieldError[] = [];
  for (const name of Object.keys(hard).sort()) {
    const field = `${path}[${name}]`;
    errors.push(...resourceNameErrors(name, field), ...quantityErrors(name, hard[name], field));
  }
  return errors;
}
