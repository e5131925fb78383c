// The pods/eviction subresource of an emulated workload cluster: a POST of a policy/v1 Eviction deletes
// the pod unless a PodDisruptionBudget selecting it allows no disruption now, in which case it answers
// 429 TooManyRequests as Kubernetes does ("Cannot evict pod as it would violate the pod's disruption
// budget.", with a DisruptionBudget cause). kubectl drain and Slipway's drain evict through it.
import { ApiError, BadRequestError, InternalError, NotFoundError } from "../../apiserver/errors.ts";
import type { SubresourceAction } from "../../apiserver/routes.ts";
import type { WorkloadCluster } from "./cluster.ts";
import type { PodDisruptionBudgetObject } from "./kinds-policy.ts";
import { selectorMatches } from "./kinds-podspec.ts";
import type { PodObject } from "./kinds.ts";
import { deleteIfPresent } from "../../api/presence.ts";

/** The budget allows no disruption now. */
export class DisruptionBudgetError extends ApiError {
  readonly code = 429;
  readonly reason = "TooManyRequests";
  constructor(budget: string, desired: number, healthy: number) {
    super("Cannot evict pod as it would violate the pod's disruption budget.", {
      causes: [{ reason: "DisruptionBudget", message: `The disruption budget ${budget} needs ${desired} healthy pods and has ${healthy} currently` }],
    });
  }
}

interface EvictionBody {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  deleteOptions?: unknown;
}

function isReady(pod: PodObject): boolean {
  return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/**
 * The eviction subresource of a cluster's pods. Evictions run one at a time in the cluster's queue
 * (`serially`), so two cannot both take the budget's last allowed disruption; `evicted` runs after a pod
 * was evicted (its owner replaces it).
 */
export function evictionSubresource(
  cluster: () => WorkloadCluster | undefined,
  evicted: () => Promise<void>,
  serially: <T>(work: () => Promise<T>) => Promise<T>,
): SubresourceAction {
  return {
    path: "/pods/eviction",
    discovery: { group: "policy", version: "v1", kind: "Eviction" },
    code: 201,
    handle: ({ namespace, name, body }) => serially(() => evict(cluster(), evicted, namespace, name, body)),
  };
}

async function evict(workload: WorkloadCluster | undefined, evicted: () => Promise<void>, namespace: string | undefined, name: string, raw: unknown): Promise<unknown> {
  const body = (raw ?? {}) as EvictionBody;
  if (body.kind !== "Eviction" || (body.apiVersion !== "policy/v1" && body.apiVersion !== "policy/v1beta1")) {
    throw new BadRequestError(`the body must be a policy/v1 Eviction, not ${body.apiVersion ?? "?"} ${body.kind ?? "?"}`);
  }
  if (body.metadata?.name !== undefined && body.metadata.name !== name) {
    throw new BadRequestError(`name in URL does not match name in Eviction object`, [{ reason: "FieldValueInvalid", message: `Invalid value: "${body.metadata.name}"`, field: "metadata.name" }]);
  }
  if (!workload) throw new NotFoundError({ group: "", kind: "Pod", plural: "pods", name }, `pods "${name}" not found`);
  const { objects, kinds, controllers } = workload;
  const pod = (await objects.tryGet(kinds.pod, namespace, name)) as PodObject | undefined;
  if (!pod) throw new NotFoundError({ group: "", kind: "Pod", plural: "pods", name }, `pods "${name}" not found`);
  if (!pod.metadata.deletionTimestamp) {
    const budgets = ((await objects.list(kinds.podDisruptionBudget, namespace)).items as PodDisruptionBudgetObject[]).filter((b) => selectorMatches(b.spec?.selector, pod.metadata.labels ?? {}));
    if (budgets.length > 1) throw new InternalError("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.");
    const budget = budgets[0];
    if (budget) {
      const pods = (await objects.list(kinds.pod, namespace)).items as PodObject[];
      const status = controllers.budgetStatus(budget, pods);
      // An unready pod may go while the budget is met; a ready one only if a disruption is allowed.
      const unhealthyMayGo = !isReady(pod) && (budget.spec?.unhealthyPodEvictionPolicy === "AlwaysAllow" || status.currentHealthy >= status.desiredHealthy);
      if (!unhealthyMayGo && status.disruptionsAllowed <= 0) throw new DisruptionBudgetError(budget.metadata.name!, status.desiredHealthy, status.currentHealthy);
    }
    await deleteIfPresent(() => objects.delete(kinds.pod, namespace, name));
    await evicted();
  }
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 };
}
