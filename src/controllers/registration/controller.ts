// The registration controller: looks after clusters Slipway did not build, registered by a kubeconfig
// Secret (`spec.registration`). It never builds or deletes anything of theirs; it asks their API now and
// then and says in status whether it answers (condition Reachable), which version it runs
// (`status.version`, from /version) and how many of its nodes are Ready, control plane and workers
// apart. Unreachable is phase Failed with reason Unreachable until it answers again, which needs no one
// to touch the object. The cluster controller leaves registered clusters to this one.
import type { ClusterObject } from "../../api/kinds.ts";
import { clusterKind, isRegistered } from "../../api/slipway/cluster.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { KubeconfigError } from "../../bootstrap/kubeconfig.ts";
import type { KubeObject } from "../../kubeclient/client.ts";
import { KubeApiError, KubeUnreachableError } from "../../kubeclient/errors.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { Controller } from "../../runtime/controller.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler, type Phase, type Scope } from "../../runtime/reconciler.ts";
import type { WorkloadClients } from "../workload.ts";

export const REGISTRATION_COMPONENT = "slipway.dev/registration-controller";

/** The label kubeadm gives control-plane nodes. */
const CONTROL_PLANE_NODE_LABEL = "node-role.kubernetes.io/control-plane";

export interface RegistrationControllerOptions {
  /** How often a registered cluster is asked again (default 30 s; 5 s while it does not answer). */
  recheckMs?: number;
}

interface NodeView extends KubeObject {
  status?: { conditions?: { type: string; status: string }[] };
}

function isReady(node: NodeView): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/** Why a registered cluster cannot be used, as a reason and a message naming what to fix. */
function problemOf(error: unknown, cluster: ClusterObject): { reason: string; message: string } | undefined {
  const ref = cluster.spec.registration?.kubeconfigSecretRef;
  if (error instanceof KubeconfigError) return { reason: "KubeconfigInvalid", message: `spec.registration.kubeconfigSecretRef: Secret ${ref?.name} key ${ref?.key ?? "value"}: ${error.message}` };
  if (error instanceof KubeUnreachableError) return { reason: "Unreachable", message: `the cluster's API does not answer: ${error.message}` };
  if (error instanceof KubeApiError) return { reason: "Unreachable", message: `the cluster's API refused Slipway's requests (${error.code}): ${error.message}` };
  return undefined;
}

function probe(workloads: WorkloadClients, recheckMs: number): Phase<Scope<ClusterObject>> {
  return async (ctx, scope) => {
    const cluster = scope.object;
    const namespace = cluster.metadata.namespace!;
    const status = (cluster.status ??= {});
    const now = nowTimestamp(new Date(ctx.clock.now()));
    const fail = (reason: string, message: string) => {
      status.phase = "Failed";
      status.reason = reason;
      status.message = message;
      setCondition(status, { type: "Reachable", status: "False", reason, message }, now);
      setCondition(status, { type: "Ready", status: "False", reason, message }, now);
      return { requeueAfterMs: Math.min(recheckMs, 5_000) };
    };
    const ref = cluster.spec.registration!.kubeconfigSecretRef;
    try {
      const client = await workloads.forClusterObject(cluster);
      if (!client) return fail("KubeconfigMissing", `spec.registration.kubeconfigSecretRef: Secret ${ref.name} with key ${ref.key ?? "value"} does not exist in namespace ${namespace}`);
      const version = await client.get<{ gitVersion?: string }>("/version");
      const nodes = await client.listAll<NodeView>("/api/v1/nodes");
      const controlPlane = nodes.filter((n) => n.metadata.labels?.[CONTROL_PLANE_NODE_LABEL] !== undefined);
      const workers = nodes.filter((n) => n.metadata.labels?.[CONTROL_PLANE_NODE_LABEL] === undefined);
      status.version = version.gitVersion ?? "unknown";
      status.controlPlane = { desired: controlPlane.length, ready: controlPlane.filter(isReady).length };
      status.workers = { desired: workers.length, ready: workers.filter(isReady).length };
      status.phase = "Running";
      delete status.reason;
      delete status.message;
      const message = `the API answers (${status.version}); ${nodes.filter(isReady).length} of ${nodes.length} node(s) Ready`;
      setCondition(status, { type: "Reachable", status: "True", reason: "Answered", message }, now);
      setCondition(status, { type: "Ready", status: "True", reason: "Registered", message }, now);
      return { requeueAfterMs: recheckMs };
    } catch (error) {
      const problem = problemOf(error, cluster);
      if (!problem) throw error;
      return fail(problem.reason, problem.message);
    }
  };
}

export function registerRegistrationController(manager: ControllerManager, deps: { workloads: WorkloadClients }, options: RegistrationControllerOptions = {}): Controller<ClusterObject> {
  const informer = manager.informer(clusterKind);
  const reconcile = objectReconciler<ClusterObject>({
    kind: clusterKind,
    cache: informer.cache,
    observedGeneration: true,
    phases: [probe(deps.workloads, options.recheckMs ?? 30_000)],
    afterStatusWrite: async (ctx, _scope, previous, written) => {
      if (previous.status?.phase === written.status?.phase) return;
      if (written.status?.phase === "Running") await ctx.event(written, "Normal", "ClusterReachable", `registered cluster answers: Kubernetes ${written.status.version}`);
      if (written.status?.phase === "Failed") await ctx.event(written, "Warning", written.status.reason ?? "Unreachable", written.status.message ?? "");
    },
  });
  const onlyRegistered: typeof reconcile = async (ctx) => {
    const cluster = informer.cache.get(ctx.key);
    if (!cluster || !isRegistered(cluster)) return {};
    if (cluster.metadata.deletionTimestamp) {
      deps.workloads.forget(cluster.metadata.namespace!, cluster.metadata.name!);
      return {};
    }
    return reconcile(ctx);
  };
  return manager.add<ClusterObject>({ name: "registration", component: REGISTRATION_COMPONENT, informer, reconcile: onlyRegistered, concurrency: 4, resyncs: isRegistered });
}
