// What a pod counts against a quota, as Kubernetes' pod evaluator counts it: one pod and the sum of its
// containers' requests and limits (init containers by their peak, sidecars added, overhead on top) while
// it is not terminal; a count/pods whatever its phase. Also the scopes a pod falls in and the old rule
// that a pod under a cpu or memory quota must state those resources for every container.
import { invalid } from "../../api/field-errors.ts";
import type { FieldError } from "../../api/registry.ts";
import { InvalidQuantityError, Quantity } from "./quantity.ts";
import { record, type ScopeRequirement } from "./quota-object.ts";
import { addLists, maxLists, type ResourceList } from "./resource-list.ts";
import { REQUESTS_PREFIX, countResourceName, isExtendedResourceName } from "./resource-names.ts";

interface ObjectLike {
  metadata: { deletionTimestamp?: string; deletionGracePeriodSeconds?: number };
  spec?: unknown;
  status?: unknown;
}

interface Container {
  name: string;
  requests: Map<string, Quantity>;
  limits: Map<string, Quantity>;
  /** An init container that keeps running beside the others (a sidecar). */
  restartAlways: boolean;
}

export interface PodResources {
  containers: Container[];
  initContainers: Container[];
  overhead: Map<string, Quantity>;
  /** Quantities that could not be read, by field. */
  errors: FieldError[];
}

export const POD_COUNT = countResourceName({ group: "", resource: "pods" });

/** Compute resources a quota names directly, besides hugepages and extended requests. */
export const POD_RESOURCES: ReadonlySet<string> = new Set([
  POD_COUNT,
  "cpu",
  "memory",
  "ephemeral-storage",
  "requests.cpu",
  "requests.memory",
  "requests.ephemeral-storage",
  "limits.cpu",
  "limits.memory",
  "limits.ephemeral-storage",
  "pods",
]);

/** Under a quota on any of these, every container must state it (Kubernetes keeps this rule for compatibility). */
const MUST_SPECIFY: ReadonlySet<string> = new Set(["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"]);

function quantities(value: unknown, field: string, errors: FieldError[]): Map<string, Quantity> {
  const out = new Map<string, Quantity>();
  for (const [name, raw] of Object.entries(record(value) ?? {})) {
    try {
      if (typeof raw !== "string" && typeof raw !== "number") throw new InvalidQuantityError(String(raw), "must be a quantity");
      out.set(name, Quantity.parse(raw));
    } catch (error) {
      if (!(error instanceof InvalidQuantityError)) throw error;
      errors.push(invalid(`${field}[${name}]`, raw, error.message));
    }
  }
  return out;
}

function containersOf(value: unknown, field: string, errors: FieldError[]): Container[] {
  if (!Array.isArray(value)) return [];
  return value.map((raw, i) => {
    const c = record(raw) ?? {};
    const resources = record(c.resources) ?? {};
    const requests = quantities(resources.requests, `${field}[${i}].resources.requests`, errors);
    const limits = quantities(resources.limits, `${field}[${i}].resources.limits`, errors);
    // As the API server defaults a pod: a limit without a request is also the request.
    for (const [name, limit] of limits) if (!requests.has(name)) requests.set(name, limit);
    return { name: typeof c.name === "string" ? c.name : "", requests, limits, restartAlways: c.restartPolicy === "Always" };
  });
}

export function podResources(pod: ObjectLike): PodResources {
  const spec = record(pod.spec) ?? {};
  const errors: FieldError[] = [];
  return {
    containers: containersOf(spec.containers, "spec.containers", errors),
    initContainers: containersOf(spec.initContainers, "spec.initContainers", errors),
    overhead: quantities(spec.overhead, "spec.overhead", errors),
    errors,
  };
}

/**
 * The pod's effective requests or limits (Kubernetes' PodRequests/PodLimits): the sum of its containers
 * and sidecars, or the peak of any init container (with the sidecars started before it) if higher, plus
 * the pod's overhead.
 */
function aggregate(resources: PodResources, side: "requests" | "limits"): Map<string, Quantity> {
  let total = new Map<string, Quantity>();
  for (const c of resources.containers) total = addLists(total, c[side]);
  let sidecars = new Map<string, Quantity>();
  let initPeak = new Map<string, Quantity>();
  for (const c of resources.initContainers) {
    let during: Map<string, Quantity>;
    if (c.restartAlways) {
      total = addLists(total, c[side]);
      sidecars = addLists(sidecars, c[side]);
      during = sidecars;
    } else {
      during = addLists(c[side], sidecars);
    }
    initPeak = maxLists(initPeak, during);
  }
  return addLists(maxLists(total, initPeak), resources.overhead);
}

/** The compute usage of given requests and limits: one pod, cpu/memory both bare and as requests.* … */
function computeUsage(requests: ResourceList, limits: ResourceList): Map<string, Quantity> {
  const usage = new Map<string, Quantity>([["pods", Quantity.ofInteger(1)]]);
  for (const name of ["cpu", "memory", "ephemeral-storage"]) {
    const request = requests.get(name);
    if (request) usage.set(name, request).set(`${REQUESTS_PREFIX}${name}`, request);
    const limit = limits.get(name);
    if (limit) usage.set(`limits.${name}`, limit);
  }
  for (const [name, request] of requests) {
    if (name.startsWith("hugepages-")) usage.set(name, request).set(`${REQUESTS_PREFIX}${name}`, request);
    if (isExtendedResourceName(name)) usage.set(`${REQUESTS_PREFIX}${name}`, request);
  }
  return usage;
}

function phaseOf(pod: ObjectLike): string {
  const phase = record(pod.status)?.phase;
  return typeof phase === "string" ? phase : "";
}

/** Whether the pod still counts for compute quota: not terminal, nor stuck terminating past its grace period. */
export function podCountsForQuota(pod: ObjectLike, now: Date): boolean {
  const phase = phaseOf(pod);
  if (phase === "Succeeded" || phase === "Failed") return false;
  const { deletionTimestamp, deletionGracePeriodSeconds } = pod.metadata;
  if (deletionTimestamp && typeof deletionGracePeriodSeconds === "number") {
    const deadline = Date.parse(deletionTimestamp) + deletionGracePeriodSeconds * 1000;
    if (now.getTime() > deadline) return false;
  }
  return true;
}

/** What the pod counts against quotas now. */
export function podUsage(pod: ObjectLike, now: Date): Map<string, Quantity> {
  const usage = new Map<string, Quantity>([[POD_COUNT, Quantity.ofInteger(1)]]);
  if (!podCountsForQuota(pod, now)) return usage;
  const resources = podResources(pod);
  return addLists(usage, computeUsage(aggregate(resources, "requests"), aggregate(resources, "limits")));
}

/**
 * Why the pod may not be admitted under a quota limiting `limited`, or undefined: every container must
 * state each limited cpu/memory resource ("must specify limits.cpu for: app; requests.memory for: app,side").
 */
export function podConstraintViolation(limited: Iterable<string>, pod: ObjectLike): string | undefined {
  const required = [...limited].filter((name) => MUST_SPECIFY.has(name));
  if (required.length === 0) return undefined;
  const missing = new Map<string, Set<string>>();
  const resources = podResources(pod);
  for (const c of [...resources.containers, ...resources.initContainers]) {
    const stated = computeUsage(c.requests, c.limits);
    for (const name of required) {
      if (stated.has(name)) continue;
      let names = missing.get(name);
      if (!names) missing.set(name, (names = new Set()));
      names.add(c.name);
    }
  }
  if (missing.size === 0) return undefined;
  const parts = [...missing.keys()].sort().map((name) => `${name} for: ${[...(missing.get(name) ?? [])].sort().join(",")}`);
  return `must specify ${parts.join("; ")}`;
}

function isBestEffort(resources: PodResources): boolean {
  for (const c of [...resources.containers, ...resources.initContainers]) {
    for (const name of ["cpu", "memory"]) {
      if ((c.requests.get(name)?.sign() ?? 0) > 0 || (c.limits.get(name)?.sign() ?? 0) > 0) return false;
    }
  }
  return true;
}

function isTerminating(spec: Record<string, unknown>): boolean {
  return typeof spec.activeDeadlineSeconds === "number" && spec.activeDeadlineSeconds >= 0;
}

function crossNamespaceTerms(terms: unknown, weighted: boolean): boolean {
  if (!Array.isArray(terms)) return false;
  return terms.some((t) => {
    const term = weighted ? record(record(t)?.podAffinityTerm) : record(t);
    return (Array.isArray(term?.namespaces) && term.namespaces.length > 0) || (term?.namespaceSelector !== undefined && term.namespaceSelector !== null);
  });
}

function usesCrossNamespaceAffinity(spec: Record<string, unknown>): boolean {
  const affinity = record(spec.affinity);
  return [record(affinity?.podAffinity), record(affinity?.podAntiAffinity)].some(
    (a) => crossNamespaceTerms(a?.requiredDuringSchedulingIgnoredDuringExecution, false) || crossNamespaceTerms(a?.preferredDuringSchedulingIgnoredDuringExecution, true),
  );
}

/** A label-selector requirement on the single "label" PriorityClass=<the pod's priority class>. */
function priorityClassMatches(requirement: ScopeRequirement, priorityClass: string): boolean {
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case "Exists":
      return priorityClass !== "";
    case "DoesNotExist":
      return priorityClass === "";
    case "In":
      return priorityClass !== "" && values.includes(priorityClass);
    case "NotIn":
      return priorityClass === "" || !values.includes(priorityClass);
    default:
      return false;
  }
}

/** Whether the pod falls in a quota's scope requirement. */
export function podMatchesScope(requirement: ScopeRequirement, pod: ObjectLike): boolean {
  const spec = record(pod.spec) ?? {};
  switch (requirement.scopeName) {
    case "Terminating":
      return isTerminating(spec);
    case "NotTerminating":
      return !isTerminating(spec);
    case "BestEffort":
      return isBestEffort(podResources(pod));
    case "NotBestEffort":
      return !isBestEffort(podResources(pod));
    case "PriorityClass":
      return priorityClassMatches(requirement, typeof spec.priorityClassName === "string" ? spec.priorityClassName : "");
    case "CrossNamespacePodAffinity":
      return usesCrossNamespaceAffinity(spec);
    default:
      return false;
  }
}
