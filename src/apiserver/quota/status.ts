// The status a quota controller writes on a ResourceQuota (Kubernetes' CalculateUsage): `hard` is the
// spec's limits in canonical form, `used` what the namespace's objects count towards each limit the
// evaluators can measure — zero when nothing does yet, so that admission knows the usage.
import { countedKind, evaluatorFor, matchesScopes, type Evaluator, type QuotaCountedObject } from "./evaluators.ts";
import { Quantity } from "./quantity.ts";
import { scopeRequirements, specHard, type ResourceQuotaLike } from "./quota-object.ts";
import { addLists, fromRecord, mask, toRecord } from "./resource-list.ts";
import type { GroupResource } from "./resource-names.ts";

export interface ResourceQuotaStatus {
  hard: Record<string, string>;
  used: Record<string, string>;
}

/** The objects of one kind in the quota's namespace, or undefined when this server does not serve the kind. */
export type NamespaceObjects = (kind: GroupResource) => readonly QuotaCountedObject[] | undefined;

/** The evaluators a quota's limits need, one per kind, in the order the limits name them. */
function evaluatorsOf(names: readonly string[]): Evaluator[] {
  const seen = new Map<string, Evaluator>();
  for (const name of names) {
    const kind = countedKind(name);
    if (!kind) continue;
    const key = `${kind.group}/${kind.resource}`;
    if (!seen.has(key)) seen.set(key, evaluatorFor(kind));
  }
  return [...seen.values()];
}

/** The kinds whose objects the quota's status is computed from (what its controller lists and watches). */
export function trackedKinds(quota: ResourceQuotaLike): GroupResource[] {
  return evaluatorsOf(Object.keys(specHard(quota)).sort()).map((e) => e.groupResource);
}

/** The quota's status from the objects of its namespace. */
export function computeQuotaStatus(quota: ResourceQuotaLike, objectsOf: NamespaceObjects, now: Date = new Date()): ResourceQuotaStatus {
  const hard = fromRecord(specHard(quota));
  const names = [...hard.keys()].sort();
  const requirements = scopeRequirements(quota);
  let used = new Map<string, Quantity>();
  const measured: string[] = [];
  for (const evaluator of evaluatorsOf(names)) {
    const resources = evaluator.matchingResources(names);
    const objects = objectsOf(evaluator.groupResource);
    if (resources.length === 0 || objects === undefined) continue;
    measured.push(...resources);
    let usage = new Map<string, Quantity>(resources.map((name) => [name, Quantity.zero()]));
    for (const object of objects) {
      if (matchesScopes(evaluator, requirements, object)) usage = addLists(usage, evaluator.usage(object, now));
    }
    used = addLists(used, usage);
  }
  return { hard: toRecord(hard), used: toRecord(mask(used, measured)) };
}
