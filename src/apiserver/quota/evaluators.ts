// One evaluator per kind a quota can count, as Kubernetes' quota registry has them: which writes can
// change usage, which quota resource names the kind answers for, what one object uses, and whether it
// falls in a quota's scopes. Pods, services and persistent volume claims have their own; any other
// kind is counted as objects (count/<resource>[.<group>], and the legacy name for core kinds such as
// secrets or configmaps).
import { Quantity } from "./quantity.ts";
import { record, type ScopeRequirement } from "./quota-object.ts";
import { POD_RESOURCES, podConstraintViolation, podMatchesScope, podUsage } from "./pods.ts";
import {
  STORAGE_CLASS_SUFFIX,
  countResourceName,
  countedResource,
  isExtendedRequestsName,
  isQuotaHugePagesName,
  storageClassOf,
  type GroupResource,
} from "./resource-names.ts";

export type QuotaOperation = "CREATE" | "UPDATE";

/** An object as the evaluators read it (any registry's kind fits). */
export interface QuotaCountedObject {
  metadata: { name?: string; generateName?: string; resourceVersion?: string; deletionTimestamp?: string; deletionGracePeriodSeconds?: number; annotations?: Record<string, string> };
  spec?: unknown;
  status?: unknown;
}

export interface Evaluator {
  readonly groupResource: GroupResource;
  /** Whether a write can change what the object counts. */
  handles(operation: QuotaOperation, subresource: string): boolean;
  /** The names among `names` this kind counts towards. */
  matchingResources(names: Iterable<string>): string[];
  /** Whether the object falls in one scope requirement of a quota. */
  matchesScope(requirement: ScopeRequirement, object: QuotaCountedObject): boolean;
  usage(object: QuotaCountedObject, now: Date): Map<string, Quantity>;
  /** Why a new object may not be admitted under a quota limiting `limited`, if it may not. */
  constraintViolation(limited: Iterable<string>, object: QuotaCountedObject, operation: QuotaOperation, subresource: string): string | undefined;
}

const one = (): Quantity => Quantity.ofInteger(1);

const podEvaluator: Evaluator = {
  groupResource: { group: "", resource: "pods" },
  // Kubernetes charges pods on create and on resize. A plain update is charged its growth too: pod
  // resources are immutable in Kubernetes, so that charge is zero there, and an API that does not
  // enforce the immutability cannot be used to grow a pod past its quota.
  handles: (operation, subresource) => (operation === "CREATE" && subresource === "") || (operation === "UPDATE" && (subresource === "" || subresource === "resize")),
  matchingResources: (names) => [...names].filter((n) => POD_RESOURCES.has(n) || isQuotaHugePagesName(n) || isExtendedRequestsName(n)),
  matchesScope: podMatchesScope,
  usage: podUsage,
  constraintViolation: (limited, object, operation, subresource) =>
    operation === "CREATE" || subresource === "resize" ? podConstraintViolation(limited, object) : undefined,
};

function servicePorts(spec: Record<string, unknown>): Record<string, unknown>[] {
  return Array.isArray(spec.ports) ? spec.ports.map((p) => record(p) ?? {}) : [];
}

const SERVICE_RESOURCES = new Set(["services", countResourceName({ group: "", resource: "services" }), "services.loadbalancers", "services.nodeports"]);

const serviceEvaluator: Evaluator = {
  groupResource: { group: "", resource: "services" },
  // A service's type can change, and with it the load balancers and node ports it takes.
  handles: () => true,
  matchingResources: (names) => [...names].filter((n) => SERVICE_RESOURCES.has(n)),
  matchesScope: () => false,
  usage(object) {
    const spec = record(object.spec) ?? {};
    const ports = servicePorts(spec);
    let nodePorts = 0;
    let loadBalancers = 0;
    if (spec.type === "NodePort") nodePorts = ports.length;
    if (spec.type === "LoadBalancer") {
      // With node port allocation turned off, only ports asking for one explicitly take one.
      nodePorts = spec.allocateLoadBalancerNodePorts === false ? ports.filter((p) => typeof p.nodePort === "number" && p.nodePort !== 0).length : ports.length;
      loadBalancers = 1;
    }
    return new Map([
      [countResourceName({ group: "", resource: "services" }), one()],
      ["services", one()],
      ["services.loadbalancers", Quantity.ofInteger(loadBalancers)],
      ["services.nodeports", Quantity.ofInteger(nodePorts)],
    ]);
  },
  constraintViolation: () => undefined,
};

const PVC_COUNT = countResourceName({ group: "", resource: "persistentvolumeclaims" });
const PVC_RESOURCES = new Set(["persistentvolumeclaims", PVC_COUNT, "requests.storage"]);

function storageClassOfClaim(object: QuotaCountedObject): string {
  const annotated = object.metadata.annotations?.["volume.beta.kubernetes.io/storage-class"];
  if (annotated !== undefined) return annotated;
  const name = record(object.spec)?.storageClassName;
  return typeof name === "string" ? name : "";
}

/** What a claim asks for (rounded up to whole bytes), or what it was given if more. */
function claimedStorage(object: QuotaCountedObject): Quantity | undefined {
  const requested = record(record(record(object.spec)?.resources)?.requests)?.storage;
  const allocated = record(record(object.status)?.allocatedResources)?.storage;
  let result: Quantity | undefined;
  for (const raw of [requested, allocated]) {
    const quantity = typeof raw === "string" || typeof raw === "number" ? Quantity.tryParse(raw)?.roundedUp() : undefined;
    if (quantity && (!result || quantity.cmp(result) > 0)) result = quantity;
  }
  return result;
}

const pvcEvaluator: Evaluator = {
  groupResource: { group: "", resource: "persistentvolumeclaims" },
  // A claim can be resized.
  handles: () => true,
  matchingResources: (names) => [...names].filter((n) => PVC_RESOURCES.has(n) || storageClassOf(n) !== undefined),
  matchesScope: () => false,
  usage(object) {
    const usage = new Map<string, Quantity>([
      ["persistentvolumeclaims", one()],
      [PVC_COUNT, one()],
    ]);
    const storageClass = storageClassOfClaim(object);
    if (storageClass) usage.set(`${storageClass}${STORAGE_CLASS_SUFFIX}persistentvolumeclaims`, one());
    const storage = claimedStorage(object);
    if (storage) {
      usage.set("requests.storage", storage);
      if (storageClass) usage.set(`${storageClass}${STORAGE_CLASS_SUFFIX}requests.storage`, storage);
    }
    return usage;
  },
  constraintViolation: () => undefined,
};

/** Core kinds Kubernetes also quotas by their plain plural, besides count/<plural>. */
const LEGACY_COUNTED = new Set(["secrets", "configmaps", "resourcequotas", "replicationcontrollers"]);

function objectCountEvaluator(groupResource: GroupResource): Evaluator {
  const names = new Set([countResourceName(groupResource)]);
  if (groupResource.group === "" && LEGACY_COUNTED.has(groupResource.resource)) names.add(groupResource.resource);
  return {
    groupResource,
    // Only a create adds an object.
    handles: (operation) => operation === "CREATE",
    matchingResources: (input) => [...input].filter((n) => names.has(n)),
    matchesScope: () => false,
    usage: () => new Map([...names].map((n) => [n, one()])),
    constraintViolation: () => undefined,
  };
}

const SPECIAL: readonly Evaluator[] = [podEvaluator, serviceEvaluator, pvcEvaluator];

/** The evaluator of a kind. */
export function evaluatorFor(groupResource: GroupResource): Evaluator {
  return SPECIAL.find((e) => e.groupResource.group === groupResource.group && e.groupResource.resource === groupResource.resource) ?? objectCountEvaluator(groupResource);
}

/** The kind whose objects a quota resource name counts, or undefined for a name no kind counts. */
export function countedKind(name: string): GroupResource | undefined {
  const counted = countedResource(name);
  if (counted) return counted;
  for (const evaluator of SPECIAL) if (evaluator.matchingResources([name]).length > 0) return evaluator.groupResource;
  return LEGACY_COUNTED.has(name) ? { group: "", resource: name } : undefined;
}

/** Whether the object falls in every scope requirement of a quota (none: always). */
export function matchesScopes(evaluator: Evaluator, requirements: readonly ScopeRequirement[], object: QuotaCountedObject): boolean {
  return requirements.every((r) => evaluator.matchesScope(r, object));
}
