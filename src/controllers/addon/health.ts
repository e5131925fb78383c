// Whether an addon's objects are ready in the cluster, as the cluster reports them: a Deployment when
// it is Available with every replica updated at its generation, a DaemonSet when every node it should
// run on has a ready pod, a Job when it completed. Other objects are ready once they exist (the
// synchroniser applied them).
import type { KubeObject } from "../../api/meta.ts";
import { KubeNotFoundError, type KubeClient } from "../../kubeclient/index.ts";

interface Workload extends KubeObject {
  spec?: { replicas?: number; completions?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    desiredNumberScheduled?: number;
    numberReady?: number;
    updatedNumberScheduled?: number;
    succeeded?: number;
    failed?: number;
    conditions?: { type: string; status: string; message?: string }[];
  };
}

/** Why a workload is not ready, or undefined when it is. */
export function notReady(object: Workload): string | undefined {
  const status = object.status ?? {};
  const current = status.observedGeneration === undefined || status.observedGeneration >= (object.metadata.generation ?? 1);
  const where = `${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ""}${object.metadata.name}`;
  if (object.kind === "Deployment") {
    const wanted = object.spec?.replicas ?? 1;
    const available = status.conditions?.find((c) => c.type === "Available")?.status === "True";
    if (current && available && (status.availableReplicas ?? 0) >= wanted && (status.updatedReplicas ?? 0) >= wanted) return undefined;
    return `${where}: ${status.availableReplicas ?? 0}/${wanted} available`;
  }
  if (object.kind === "DaemonSet") {
    const desired = status.desiredNumberScheduled ?? 0;
    if (current && status.desiredNumberScheduled !== undefined && (status.numberReady ?? 0) >= desired && (status.updatedNumberScheduled ?? desired) >= desired) return undefined;
    return `${where}: ${status.numberReady ?? 0}/${desired} scheduled and ready`;
  }
  if (object.kind === "Job") {
    if (status.conditions?.some((c) => c.type === "Complete" && c.status === "True")) return undefined;
    const failed = status.conditions?.find((c) => c.type === "Failed" && c.status === "True");
    if (failed) return `${where} failed: ${failed.message ?? "see its pods"}`;
    return `${where}: ${status.succeeded ?? 0}/${object.spec?.completions ?? 1} completed`;
  }
  return undefined;
}

const WATCHED = new Set(["apps/Deployment", "apps/DaemonSet", "batch/Job"]);

export function isWorkload(manifest: KubeObject): boolean {
  return WATCHED.has(`${manifest.apiVersion.split("/")[0]}/${manifest.kind}`);
}

/** What is not ready among the manifests' workloads in the cluster (read there, one by one). */
export async function unreadyWorkloads(client: KubeClient, manifests: readonly KubeObject[]): Promise<string[]> {
  const problems: string[] = [];
  for (const manifest of manifests.filter(isWorkload)) {
    const namespace = manifest.metadata.namespace ?? "default";
    try {
      const path = await client.resourcePath({ apiVersion: manifest.apiVersion, kind: manifest.kind, namespace, name: manifest.metadata.name });
      const problem = notReady(await client.get<Workload>(path));
      if (problem) problems.push(problem);
    } catch (error) {
      if (!(error instanceof KubeNotFoundError)) throw error;
      problems.push(`${manifest.kind} ${namespace}/${manifest.metadata.name} does not exist in the cluster`);
    }
  }
  return problems;
}
