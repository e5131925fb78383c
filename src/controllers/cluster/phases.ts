// The cluster controller's phases, in order: validate (validation.ts), then make what the cluster is made
// of (children.ts) and publish its endpoint and kubeconfig (kubeconfig.ts); deleting takes it apart
// (deletion.ts). Each phase is idempotent, so a restart or another replica picks up where work stopped.
import { isTrue } from "../../runtime/conditions.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { ensureControlPlane, ensureInfrastructures, ensureNetworkPlugin, ensureSecrets, ensureWorkerPools } from "./children.ts";
import { deleteChildren } from "./deletion.ts";
import { publishEndpoint } from "./kubeconfig.ts";
import { awaitLease } from "./lease.ts";
import type { ClusterScope } from "./scope.ts";
import { validate } from "./validation.ts";

/** Secrets and infrastructure are independent: made side by side. */
export const ensureSecretsAndInfrastructures: Phase<ClusterScope> = async (ctx, scope) => {
  await Promise.all([ensureSecrets(ctx, scope), ensureInfrastructures(ctx, scope)]);
};

/** Not Ready yet: the children's changes requeue the cluster; this late, idle check catches the rest. */
export const recheckUntilReady: Phase<ClusterScope> = (_ctx, scope) => (isTrue(scope.object.status?.conditions, "Ready") ? {} : { requeueAfterMs: scope.timing.recheckMs, idle: true });

export const clusterPhases: readonly Phase<ClusterScope>[] = [
  awaitLease,
  validate,
  ensureSecretsAndInfrastructures,
  publishEndpoint,
  ensureControlPlane,
  ensureNetworkPlugin,
  ensureWorkerPools,
  recheckUntilReady,
];

export const clusterDeletePhases: readonly Phase<ClusterScope>[] = [deleteChildren];
