// The BootstrapConfig controller (Cluster API's kubeadm bootstrap provider, for MachinePools): once a
// pool has adopted the configuration (owner reference), renders the kubeadm join of the pool's machines
// — the cluster's control-plane endpoint, bootstrap token and CA hash, the node labels and taints, no
// node name (each instance joins under its host name) — into cloud-init user data in a Secret it owns,
// and reports the Secret's name and ready. The data needs only the cluster's PKI, its pre-generated
// bootstrap token and the control-plane endpoint, so it is ready before the control plane is initialised
// and the pool's instances boot while it comes up: their `kubeadm join` retries discovery until init has
// made the token and published cluster-info, as a single worker Machine's does. The token and keys are in
// the Secret only: status, logs and events name the Secret, never its content. Once the control plane is
// initialised the join token is kept valid in its API for as long as the pool may launch instances: made
// valid for a day, looked at again every hour (condition JoinTokenValid).
import type { ClusterObject, InfrastructureObject, MachinePoolObject, SecretObject } from "../../api/kinds.ts";
import type { BootstrapConfigObject } from "../../api/slipway/bootstrapconfig.ts";
import { ANNOTATION_RENDERED_FOR, bootstrapConfigKind } from "../../api/slipway/bootstrapconfig.ts";
import { launchTemplateKey } from "../machinepool/template.ts";
import { secretKind } from "../../api/core.ts";
import { CONDITION_CONTROL_PLANE_INITIALIZED, DEFAULT_KUBERNETES_VERSION, LABEL_CLUSTER, clusterKind } from "../../api/slipway/cluster.ts";
import { infrastructureKind } from "../../api/slipway/infrastructure.ts";
import { LABEL_POOL, machinePoolKind } from "../../api/slipway/machinepool.ts";
import { names } from "../../api/slipway/names.ts";
import { createIfAbsent } from "../../api/presence.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { LOCAL_IPV4, fillingAddresses, joinBootstrap, renderUserData } from "../../bootstrap/cloudinit.ts";
import { caCertHash } from "../../bootstrap/pki.ts";
import { KubeApiError } from "../../kubeclient/index.ts";
import { isTrue, setCondition } from "../../runtime/conditions.ts";
import type { Controller, ReconcileContext } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { objectReconciler, type Phase } from "../../runtime/reconciler.ts";
import { controllerRef, olderClustersFirst } from "../contract.ts";
import { awaitPoolOwner, namedByPool, owningPool, poolPartRootKey, poolsOfCluster, waitFor, type PoolPartScope } from "../pool-parts.ts";
import { readBootstrapToken, readClusterPki } from "../pki.ts";
import type { WorkloadClients } from "../workload.ts";
import { ensureJoinToken, JOIN_TOKEN_TTL_MS } from "../machine/jointoken.ts";
import { isUnavailable } from "../machine/node.ts";

export const BOOTSTRAP_CONFIG_COMPONENT = "slipway.dev/bootstrapconfig-controller";
/** The condition saying whether the join token is kept valid in the cluster's API. */
export const CONDITION_JOIN_TOKEN_VALID = "JoinTokenValid";
/** How often a ready configuration makes its join token valid again. */
const TOKEN_REFRESH_MS = 3_600_000;

/** The Secret a BootstrapConfig's data goes in (key `value`). */
export function bootstrapDataSecretName(config: string): string {
  return `${config}-bootstrap-data`;
}

/**
 * The key of the data Secret holding the bootstrap as its parts (JSON: version, secret files, commands),
 * beside `value` (the user data with the files inline).
 */
export const BOOTSTRAP_PARTS_KEY = "bootstrap";

export interface BootstrapConfigScope extends PoolPartScope<BootstrapConfigObject> {
  pollMs: number;
  workloads: WorkloadClients;
  /** The infrastructure holding the control-plane load balancer, and the one of the pool's connection. */
  controlPlaneInfrastructure?: InfrastructureObject;
  poolInfrastructure?: InfrastructureObject;
  /** The cluster's PKI Secret and bootstrap token. */
  secrets?: { pki: SecretObject; token: string };
  /** Whether the join token is kept valid in the cluster's API (condition JoinTokenValid). */
  token?: { status: "True" | "False" | "Unknown"; reason: string; message: string };
}

/** Nothing is done before a pool owns the configuration (the pool adopts it). */
export const awaitOwner: Phase<BootstrapConfigScope> = awaitPoolOwner("this configuration", "spec.template.bootstrap.configRef");

/** The join needs the cluster's control-plane endpoint (not the control plane itself: joins wait for init). */
export const awaitControlPlaneEndpoint: Phase<BootstrapConfigScope> = (_ctx, scope) => {
  if (!scope.controlPlaneInfrastructure?.status?.loadBalancer) return waitFor(scope, "WaitingForControlPlaneEndpoint", `the control-plane load balancer of cluster ${scope.cluster!.metadata.name} does not exist yet`);
};

/** Reads the cluster's PKI and bootstrap token: all the join needs besides the endpoint. */
export const readClusterSecrets: Phase<BootstrapConfigScope> = async (ctx, scope) => {
  const namespace = scope.object.metadata.namespace;
  const cluster = scope.cluster!.metadata.name!;
  const secrets = ctx.client.of<SecretObject>(secretKind);
  const [pki, token] = await Promise.all([secrets.tryGet(namespace, names.pkiSecret(cluster)), secrets.tryGet(namespace, names.tokenSecret(cluster))]);
  if (!pki || !token) return waitFor(scope, "WaitingForClusterSecrets", `waiting for the PKI and bootstrap token Secrets of cluster ${cluster}`, scope.pollMs);
  scope.secrets = { pki, token: readBootstrapToken(token) };
};

/**
 * Keeps the join token valid in the cluster's API once the control plane is initialised (before that,
 * `kubeadm init` makes it, valid for a day, and the joins wait for init). Data not rendered yet waits
 * for a valid token then, as a Machine does before its instance is made; data already rendered stays
 * ready while the cluster's API cannot be reached, and the refresh is tried again.
 */
export const keepJoinTokenValid: Phase<BootstrapConfigScope> = async (ctx, scope) => {
  const cluster = scope.cluster!;
  if (!isTrue(cluster.status?.conditions, CONDITION_CONTROL_PLANE_INITIALIZED)) {
    scope.token = { status: "Unknown", reason: "WaitingForControlPlane", message: `kubeadm init of cluster ${cluster.metadata.name} issues the join token; it is kept valid from then on` };
    return;
  }
  let problem: { reason: string; message: string } | undefined;
  const kube = await scope.workloads.forCluster(scope.object.metadata.namespace!, cluster.metadata.name!);
  if (!kube) problem = { reason: "WaitingForKubeconfig", message: `waiting for Secret ${names.kubeconfigSecret(cluster.metadata.name!)} to keep the join token valid` };
  else {
    try {
      await ensureJoinToken(kube, scope.secrets!.token, ctx.clock.now(), JOIN_TOKEN_TTL_MS);
    } catch (error) {
      if (!isUnavailable(error) && !(error instanceof KubeApiError)) throw error;
      problem = { reason: "WaitingForJoinToken", message: `refreshing the join token in the cluster's API: ${(error as Error).message}` };
    }
  }
  if (!problem) {
    scope.token = { status: "True", reason: "Refreshed", message: "the join token is valid in the cluster's API for a day at least" };
    return { requeueAfterMs: TOKEN_REFRESH_MS, idle: true };
  }
  if (!scope.object.status?.ready) return waitFor(scope, problem.reason, problem.message, scope.pollMs);
  scope.token = { status: "False", ...problem };
  return { requeueAfterMs: scope.pollMs };
};

/** Renders the join into the Secret (made once, rewritten when what it holds changes). */
export const renderJoinData: Phase<BootstrapConfigScope> = async (ctx, scope) => {
  const config = scope.object;
  const pool = scope.pool!;
  const cluster = scope.cluster!;
  const namespace = config.metadata.namespace;
  const secrets = ctx.client.of<SecretObject>(secretKind);
  const { pki: pkiSecret, token } = scope.secrets!;
  const lb = scope.controlPlaneInfrastructure!.status!.loadBalancer!;
  // A pool in another cloud than the control plane's reaches its API at the public name only.
  const otherCloud = scope.poolInfrastructure?.status?.publicAddresses === true && scope.poolInfrastructure.metadata.uid !== scope.controlPlaneInfrastructure!.metadata.uid;
  const host = !otherCloud && lb.internalHost ? lb.internalHost : lb.host;
  const taints = config.spec?.taints ?? pool.spec.taints ?? [];
  // Where the pool's instances get public addresses (the cluster spans clouds), each fills its own in at boot.
  const publicAddress = scope.poolInfrastructure?.status?.publicAddresses === true;
  const join = joinBootstrap({
    kubernetesVersion: config.spec?.version ?? pool.spec.version ?? cluster.spec.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION,
    controlPlaneEndpoint: `${host}:${lb.port}`,
    bootstrapToken: token,
    caCertHashes: [caCertHash(readClusterPki(pkiSecret).ca.certPem)],
    node: {
      labels: { ...(pool.spec.labels ?? {}), ...(config.spec?.labels ?? {}), [LABEL_CLUSTER]: cluster.metadata.name!, [LABEL_POOL]: pool.metadata.name! },
      ...(taints.length > 0 ? { taints: taints.map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect })) } : {}),
      ...(publicAddress ? { nodeIp: LOCAL_IPV4 } : {}),
    },
  });
  const bootstrap = publicAddress ? fillingAddresses(join) : join;
  const value = Buffer.from(renderUserData(bootstrap), "utf8").toString("base64");
  // The parts, for infrastructure that keeps the secret files in its cloud's secret store instead of the user data.
  const parts = Buffer.from(JSON.stringify(bootstrap), "utf8").toString("base64");
  const name = bootstrapDataSecretName(config.metadata.name!);
  const existing = await secrets.tryGet(namespace, name);
  // What the data was rendered for, so the launch template takes it only once it is the pool's current.
  const annotations = { [ANNOTATION_RENDERED_FOR]: launchTemplateKey(pool.spec) };
  if (!existing) {
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace, labels: { [LABEL_CLUSTER]: cluster.metadata.name!, [LABEL_POOL]: pool.metadata.name! }, annotations, ownerReferences: [controllerRef(config)] },
      type: "Opaque",
      data: { value, [BOOTSTRAP_PARTS_KEY]: parts },
    } as SecretObject;
    if (await createIfAbsent(() => secrets.create(secret))) await ctx.event(config, "Normal", "BootstrapDataReady", `bootstrap data of pool ${pool.metadata.name} written to Secret ${name}`);
  } else if (existing.data?.value !== value || existing.data?.[BOOTSTRAP_PARTS_KEY] !== parts) {
    await secrets.patch(namespace, name, "merge", { metadata: { annotations }, data: { value, [BOOTSTRAP_PARTS_KEY]: parts } });
    await ctx.event(config, "Normal", "BootstrapDataUpdated", `bootstrap data of pool ${pool.metadata.name} rewritten in Secret ${name}`);
  } else if (existing.metadata.annotations?.[ANNOTATION_RENDERED_FOR] !== annotations[ANNOTATION_RENDERED_FOR]) {
    await secrets.patch(namespace, name, "merge", { metadata: { annotations } });
  }
  const status = (config.status ??= {});
  status.dataSecretName = name;
  status.ready = true;
};

export const BOOTSTRAP_CONFIG_PHASES = [awaitOwner, awaitControlPlaneEndpoint, readClusterSecrets, keepJoinTokenValid, renderJoinData];

/** Sums a reconcile up into the status: ready or why not, and whether the join token is kept valid. */
export function summarizeBootstrapConfig(ctx: ReconcileContext, scope: BootstrapConfigScope, error: unknown): void {
  const status = (scope.object.status ??= {});
  const now = nowTimestamp(new Date(ctx.clock.now()));
  delete status.reason;
  delete status.message;
  if (scope.waiting && !status.ready) {
    status.reason = scope.waiting.reason;
    status.message = scope.waiting.message;
    setCondition(status, { type: "Ready", status: "False", reason: scope.waiting.reason, message: scope.waiting.message }, now);
  } else if (error && !status.ready) {
    setCondition(status, { type: "Ready", status: "False", reason: "RenderFailed", message: (error as Error).message }, now);
  } else if (status.ready) {
    setCondition(status, { type: "Ready", status: "True", reason: "DataSecretAvailable", message: `Secret ${status.dataSecretName}` }, now);
  }
  if (scope.token) setCondition(status, { type: CONDITION_JOIN_TOKEN_VALID, ...scope.token }, now);
}

export function registerBootstrapConfigController(manager: ControllerManager, deps: { workloads: WorkloadClients }, options: { pollMs?: number; concurrency?: number } = {}): Controller<BootstrapConfigObject> {
  const configs = manager.informer(bootstrapConfigKind);
  const pools = manager.informer(machinePoolKind);
  const clusters = manager.informer(clusterKind);
  const infrastructures = manager.informer(infrastructureKind);
  const pollMs = options.pollMs ?? 1000;
  const reconcile = objectReconciler<BootstrapConfigObject, BootstrapConfigScope>({
    kind: bootstrapConfigKind,
    cache: configs.cache,
    observedGeneration: true,
    phases: BOOTSTRAP_CONFIG_PHASES,
    scope: (_ctx, base) => {
      const pool = owningPool(pools, base.object);
      const namespace = base.object.metadata.namespace;
      const cluster = pool && clusters.cache.get(keyFor(namespace, pool.spec.clusterName));
      const cpConnection = cluster?.spec.controlPlane.connection;
      return {
        ...base,
        pollMs,
        workloads: deps.workloads,
        pool,
        cluster,
        controlPlaneInfrastructure: cluster && cpConnection ? infrastructures.cache.get(keyFor(namespace, names.infrastructure(cluster.metadata.name!, cpConnection))) : undefined,
        poolInfrastructure: pool ? infrastructures.cache.get(keyFor(namespace, names.infrastructure(pool.spec.clusterName, pool.spec.connection))) : undefined,
      };
    },
    summarize: summarizeBootstrapConfig,
  });
  const clusterOfConfig = poolPartRootKey(configs, pools);
  const controller = manager.add<BootstrapConfigObject>({
    name: "bootstrapconfig",
    component: BOOTSTRAP_CONFIG_COMPONENT,
    informer: configs,
    reconcile,
    concurrency: options.concurrency ?? 4,
    rootKey: clusterOfConfig,
    priority: olderClustersFirst(clusters.cache, clusterOfConfig),
  });
  // A pool adopting the configuration, and its cluster's control plane coming up, requeue it.
  const configOf = namedByPool(bootstrapConfigKind.kind, (template) => template.bootstrap.configRef);
  controller.watch<MachinePoolObject>(pools, configOf);
  const poolsOf = poolsOfCluster(pools);
  controller.watch<ClusterObject>(
    clusters,
    (cluster) => poolsOf(cluster.metadata.namespace, cluster.metadata.name!).flatMap(configOf),
    (previous, cluster) => isTrue(previous.status?.conditions, CONDITION_CONTROL_PLANE_INITIALIZED) !== isTrue(cluster.status?.conditions, CONDITION_CONTROL_PLANE_INITIALIZED),
  );
  controller.watch<InfrastructureObject>(
    infrastructures,
    (infra) => poolsOf(infra.metadata.namespace, infra.spec.clusterName).flatMap(configOf),
    (previous, infra) => Boolean(previous.status?.loadBalancer) !== Boolean(infra.status?.loadBalancer),
  );
  return controller;
}
