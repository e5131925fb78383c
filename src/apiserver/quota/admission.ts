// The quota check of a create or update, with kube-apiserver's semantics (resourcequota admission,
// CheckRequest): the quotas of the object's namespace whose enforced limits (status.hard) name a resource
// the object counts towards, and whose scopes it falls in, are charged what the write adds — the whole
// object on create, only its growth on update — and a write that would take any of them past a limit is
// refused with a 403 that names every such quota:
//   pods "web-6" is forbidden: exceeded quota: team-a, requested: pods=1, used: pods=5, limited: pods=5
// What comes back is each charged quota's new status.used. The caller writes it (with the quota's
// resourceVersion, retrying on conflict) before it stores the object, so that two writes racing for the
// last unit cannot both get it, and writes nothing on a dry run.
import type { FieldError } from "../../api/registry.ts";
import { ForbiddenError, InvalidError } from "../errors.ts";
import { evaluatorFor, matchesScopes, type Evaluator, type QuotaCountedObject, type QuotaOperation } from "./evaluators.ts";
import { podResources } from "./pods.ts";
import type { Quantity } from "./quantity.ts";
import { scopeRequirements, statusHard, statusUsed, type ResourceQuotaLike } from "./quota-object.ts";
import { addLists, exceeding, mask, negativeNames, prettyPrint, removeZeros, subtractNonNegative, toRecord, type ResourceList } from "./resource-list.ts";

export interface QuotaAdmissionRequest {
  operation: QuotaOperation;
  /** "" for the core group. */
  group: string;
  /** The plural, e.g. pods. */
  resource: string;
  /** "status" for status writes (charged, never refused), "resize" … */
  subresource?: string;
  /** As it would be stored. */
  object: QuotaCountedObject & { kind?: string };
  /** The stored object an update replaces. */
  oldObject?: QuotaCountedObject;
}

/** A quota's usage after the write, to be stored as its status.used. */
export interface QuotaCharge {
  quota: ResourceQuotaLike;
  used: Record<string, string>;
}

/** One quota a write would exceed, and by what. */
export interface ExceededQuota {
  quota: string;
  requested: ResourceList;
  used: ResourceList;
  limited: ResourceList;
}

/** `<resource>.<group> "<name>" is forbidden: <detail>`, as admission words a refusal. */
function forbiddenMessage(request: QuotaAdmissionRequest, detail: string): string {
  const { name, generateName } = request.object.metadata;
  const qualified = request.group ? `${request.resource}.${request.group}` : request.resource;
  return `${qualified} "${name || generateName || "Unknown"}" is forbidden: ${detail}`;
}

function refName(request: QuotaAdmissionRequest): string | undefined {
  return request.object.metadata.name || request.object.metadata.generateName || undefined;
}

/** A write refused because it would take quotas past their limits. */
export class QuotaExceededError extends ForbiddenError {
  constructor(
    request: QuotaAdmissionRequest,
    readonly exceeded: readonly ExceededQuota[],
  ) {
    const detail = exceeded
      .map((e) => `exceeded quota: ${e.quota}, requested: ${prettyPrint(e.requested)}, used: ${prettyPrint(e.used)}, limited: ${prettyPrint(e.limited)}`)
      .join("; ");
    super(forbiddenMessage(request, detail), { group: request.group, kind: "", plural: request.resource, name: refName(request) });
  }
}

/** A pod refused because it does not state a resource a quota limits ("must specify requests.cpu for: app"). */
export class QuotaConstraintError extends ForbiddenError {
  constructor(
    request: QuotaAdmissionRequest,
    readonly quota: string,
    readonly violation: string,
  ) {
    super(forbiddenMessage(request, `failed quota: ${quota}: ${violation}`), { group: request.group, kind: "", plural: request.resource, name: refName(request) });
  }
}

/** A write refused because a quota's usage has not been computed yet (its controller has not caught up). */
export class QuotaStatusUnknownError extends ForbiddenError {
  constructor(request: QuotaAdmissionRequest, quota: string, resources: readonly string[]) {
    super(forbiddenMessage(request, `status unknown for quota: ${quota}, resources: ${[...resources].sort().join(",")}`), {
      group: request.group,
      kind: "",
      plural: request.resource,
      name: refName(request),
    });
  }
}

interface Pertinent {
  index: number;
  quota: ResourceQuotaLike;
  hard: ResourceList;
  used: ResourceList;
}

function quotaName(quota: ResourceQuotaLike): string {
  return quota.metadata.name ?? "";
}

/** Whether a quota applies to the object: it limits something the object counts towards, and the object is in its scopes. */
function quotaMatches(evaluator: Evaluator, quota: ResourceQuotaLike, object: QuotaCountedObject): boolean {
  return evaluator.matchingResources(statusHard(quota).keys()).length > 0 && matchesScopes(evaluator, scopeRequirements(quota), object);
}

/** Quantities of the object that could not be read: refused as invalid, naming the field. */
function unreadable(request: QuotaAdmissionRequest, evaluator: Evaluator): FieldError[] {
  if (evaluator.groupResource.group !== "" || evaluator.groupResource.resource !== "pods") return [];
  return podResources(request.object).errors;
}

/**
 * Checks a create or update against the quotas of its namespace and returns the new usage of each quota
 * it charges (none when nothing is limited). Throws QuotaExceededError, QuotaConstraintError,
 * QuotaStatusUnknownError (403), or InvalidError (422) for a quantity that cannot be read.
 */
export function admitToQuotas(request: QuotaAdmissionRequest, quotas: readonly ResourceQuotaLike[], now: Date = new Date()): QuotaCharge[] {
  const subresource = request.subresource ?? "";
  const evaluator = evaluatorFor({ group: request.group, resource: request.resource });
  if (!evaluator.handles(request.operation, subresource)) return [];
  const { object } = request;

  const matching = quotas.flatMap((quota, index) => (quotaMatches(evaluator, quota, object) ? [{ quota, index }] : []));
  if (matching.length === 0) return [];
  // A quantity that cannot be read is the object's fault, whatever quota it would meet.
  const fieldErrors = unreadable(request, evaluator);
  if (fieldErrors.length > 0) {
    throw new InvalidError({ group: request.group, kind: request.object.kind ?? "", plural: request.resource, name: refName(request) }, fieldErrors);
  }

  const pertinent: Pertinent[] = [];
  for (const { quota, index } of matching) {
    const hard = statusHard(quota);
    const used = statusUsed(quota);
    const limited = evaluator.matchingResources(hard.keys());
    const violation = evaluator.constraintViolation(limited, object, request.operation, subresource);
    if (violation) throw new QuotaConstraintError(request, quotaName(quota), violation);
    if (limited.some((name) => !used.has(name))) throw new QuotaStatusUnknownError(request, quotaName(quota), limited);
    pertinent.push({ index, quota, hard, used });
  }
  const inputUsage = evaluator.usage(object, now);
  const negative = negativeNames(inputUsage);
  if (negative.length > 0) {
    throw new ForbiddenError(forbiddenMessage(request, `quota usage is negative for resource(s): ${negative.join(",")}`), {
      group: request.group,
      kind: "",
      plural: request.resource,
      name: refName(request),
    });
  }

  // An update is charged its growth for quotas the old object counted in already, and in full for others.
  const deltas = new Map<number, ResourceList>(pertinent.map((p) => [p.index, inputUsage]));
  const old = request.oldObject;
  if (request.operation === "UPDATE" && old?.metadata.resourceVersion) {
    const growth = subtractNonNegative(inputUsage, evaluator.usage(old, now));
    for (const p of pertinent) if (quotaMatches(evaluator, p.quota, old)) deltas.set(p.index, growth);
  }

  const charges: QuotaCharge[] = [];
  const exceeded: ExceededQuota[] = [];
  for (const p of pertinent) {
    const delta = removeZeros(deltas.get(p.index) ?? new Map<string, Quantity>());
    const requested = mask(delta, p.hard.keys());
    if (requested.size === 0) continue;
    const newUsage = addLists(p.used, requested);
    if (subresource !== "status") {
      const over = exceeding(mask(newUsage, requested.keys()), p.hard);
      if (over.length > 0) {
        exceeded.push({ quota: quotaName(p.quota), requested: mask(requested, over), used: mask(p.used, over), limited: mask(p.hard, over) });
        continue;
      }
    }
    charges.push({ quota: p.quota, used: toRecord(newUsage) });
  }
  if (exceeded.length > 0) throw new QuotaExceededError(request, exceeded);
  return charges;
}

