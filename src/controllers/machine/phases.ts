// The Machine controller's phases. Create: wait for what the machine needs (its connection's
// infrastructure, the control-plane endpoint, the cluster's secrets), write its bootstrap data, create
// its instance (once: idempotency token), follow the instance until it runs, put control-plane machines
// behind the load balancer, and follow the node until it is Ready — then delete its bootstrap secret
// (bootstrap-secret.ts) and keep checking on both.
// Delete: cordon and drain the node, remove a control-plane node's etcd member, leave the load balancer,
// terminate the instance, delete what is left of its bootstrap secret, delete the node.
import type { ClusterObject, ConnectionObject, InfrastructureObject, MachineObject, MachinePoolObject, SecretObject } from "../../api/kinds.ts";
import { secretKind } from "../../api/core.ts";
import { ANNOTATION_SCALE_IN, machineKind } from "../../api/slipway/machine.ts";
import { DEFAULT_IMAGE } from "../../api/slipway/nodes.ts";
import { createIfAbsent, deleteIfPresent } from "../../api/presence.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import { KubeApiError, type KubeClient } from "../../kubeclient/index.ts";
import { ProviderError, type Capabilities, type CapabilityName, type InstanceInfo } from "../../providers/provider.ts";
import { getCondition, removeCondition, setCondition, type ConditionInput } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import { safetyNetInterval } from "../../runtime/informer.ts";
import type { Phase, PhaseResult, Scope } from "../../runtime/reconciler.ts";
import { cloudTags, controllerRef, idempotencyToken, TAG_OWNER_UID } from "../contract.ts";
import { CONDITION_CONTROL_PLANE_INITIALIZED, CONDITION_NETWORK_PLUGIN_INSTALLED, LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { names } from "../../api/slipway/names.ts";
import { LABEL_TEMPLATE_HASH } from "../../api/slipway/machinepool.ts";
import { poolTemplate } from "../machinepool/template.ts";
import { readBootstrapToken, readClusterPki } from "../pki.ts";
import { ConnectionUnusableError, type ProviderResolver } from "../providers.ts";
import type { WorkloadClients } from "../workload.ts";
import { renderUserData, type BootstrapSecretRef } from "../../bootstrap/cloudinit.ts";
import { machineBootstrap } from "./bootstrap.ts";
import { deleteBootstrapSecret, deleteSecretOfReadyNode, removeJoinedBootstrapSecret, storeBootstrapSecret } from "./bootstrap-secret.ts";
import { clusterIssuer } from "../realm/issuer.ts";
import { hostEndpointsOf, leaveHostEndpoint, serveHostEndpoint } from "./endpoint.ts";
import { ETCD_MEMBER_REMOVED, isEtcdRetryable, removeMember } from "./etcd.ts";
import { ensureJoinToken } from "./jointoken.ts";
import { cordonNode, deleteNode, drainNode, isUnavailable, nodeIsReady, nodeNotReadyMessage, readNode, type WorkloadNode } from "./node.ts";
import type { NodeWatch } from "./node-watch.ts";
import { zoneFor } from "./zones.ts";
import { readyForMachines } from "../infrastructure/status.ts";
import {
  BOOTSTRAP_READY,
  INSTANCE_READY,
  LOAD_BALANCER_TARGET,
  NODE_DRAINED,
  NODE_JOINED,
  NODE_READY,
  REASONS,
  bootstrapFailureReason,
  bootstrapSecretFailure,
  has,
  isControlPlane,
  isFailedForGood,
  isInitMachine,
  isRegisteredTarget,
  kubeadmFailure, kubeadmRetrying,
  setFailure,
  since,
} from "./status.ts";

export interface MachineDependencies {
  providers: ProviderResolver;
  workloads: WorkloadClients;
}

/** The controller's timings, in milliseconds (defaults in controller.ts). */
export interface MachineTimings {
  /** Delay between checks while the machine is on its way (instance booting, node joining). */
  pollMs: number;
  /** Delay between checks on a Running machine (its instance and node still there). */
  healthCheckMs: number;
  /**
   * The same where the cloud's feed of instance changes requeues the machine when its instance changes
   * (instance-watch.ts): only a safety net, for a node that goes away while its instance runs.
   */
  followedHealthCheckMs: number;
  /**
   * The same where, besides, the node's changes requeue the machine (one watch of its cluster's nodes,
   * node-watch.ts, current): both ways a Running machine can break are followed, so the check only
   * guards against a change that was never told. The least delay: beyond SAFETY_CHECKS_PER_SECOND per
   * second over the fleet's machines it grows with the fleet (safetyNetInterval).
   */
  watchedHealthCheckMs: number;
  /** The instance must run within this long of its creation. */
  bootDeadlineMs: number;
  /** The node must join within this long of the instance running. */
  joinDeadlineMs: number;
  /** How long deletion waits for an unreachable workload API before it gives up draining. */
  drainTimeoutMs: number;
  /** Delay before retrying a create the cloud refused (quota, capacity, spec): a fixed cause recovers. */
  retryFailedAfterMs: number;
}

export interface MachineScope extends Scope<MachineObject> {
  deps: MachineDependencies;
  timings: MachineTimings;
  /** Whether a change of the machine's instance requeues it (the connection's instance feed answers). */
  instancesFollowed?: boolean;
  /** The watches of the workload clusters' nodes: a machine reads its node there while its cluster's is current. */
  nodes?: NodeWatch;
  /** How many machines the controller holds: the safety-net check of a Running machine is spread over them. */
  fleetMachines?: number;
  /** From the informer caches (undefined: not there). */
  cluster?: ClusterObject;
  connection?: ConnectionObject;
  /** The Infrastructure of the machine's connection. */
  infrastructure?: InfrastructureObject;
  /** The Infrastructure that holds the control-plane load balancer. */
  controlPlaneInfrastructure?: InfrastructureObject;
  pool?: MachinePoolObject;
  /** The machines of its cluster, from the cache (to spread machines over zones). */
  clusterMachines?: readonly MachineObject[];
  /** The capacity reservation the machine launches into: its cluster's lease's, for its connection and machine type. */
  reservationId?: string;
  /** The reservation's zone: a machine launched into it goes there, whatever the spread would choose. */
  reservationZone?: string;
  /** Read by earlier phases for later ones. */
  secrets?: { pki: SecretObject; token: SecretObject };
  userData?: string;
}

/** A duration for messages: "90s", "1.5s", "15m". */
export function formatDuration(ms: number): string {
  if (ms >= 120_000) return `${Math.round((ms / 60_000) * 10) / 10}m`;
  return `${Math.round(ms / 100) / 10}s`;
}

function now(ctx: ReconcileContext): string {
  return nowTimestamp(new Date(ctx.clock.now()));
}

function condition(ctx: ReconcileContext, scope: MachineScope, input: ConditionInput): void {
  setCondition((scope.object.status ??= {}), input, now(ctx));
}

function describe(scope: MachineScope): string {
  return `machine ${scope.object.metadata.name}`;
}

/** A capability of the machine's connection: its machines, or (for the load balancer) its cluster infrastructure. */
async function capabilityOf<C extends CapabilityName>(scope: MachineScope, capability: C): Promise<Capabilities[C]> {
  if (!scope.connection) throw new ConnectionUnusableError(`connection "${scope.object.spec.connection}" does not exist`);
  return scope.deps.providers.capability(scope.connection, capability);
}

/** Ends the machine for good: its owner replaces it. */
async function fail(ctx: ReconcileContext, scope: MachineScope, reason: string, message: string): Promise<PhaseResult> {
  setFailure((scope.object.status ??= {}), reason, message);
  ctx.log.info({ step: "fail", reason }, message);
  await ctx.event(scope.object, "Warning", reason, `${describe(scope)} failed: ${message}`);
  return { halt: true };
}

/**
 * Waits for something, checking again after a quarter of the time already waited (since the condition
 * last changed, or since `from` if later), between the poll delay and ten times it: a quick step is
 * seen at once, and thousands of machines waiting on a slow one do not all poll at full speed.
 */
function wait(ctx: ReconcileContext, scope: MachineScope, input: ConditionInput, from = 0): PhaseResult {
  condition(ctx, scope, input);
  const now = ctx.clock.now();
  const waited = now - Math.max(since(scope.object, input.type) ?? now, from);
  const { pollMs } = scope.timings;
  return { halt: true, requeueAfterMs: Math.min(10 * pollMs, Math.max(pollMs, waited / 4)) };
}

/** Looks again later as wait() would, without holding the remaining phases back. */
function paced(ctx: ReconcileContext, scope: MachineScope, type: string): PhaseResult {
  const now = ctx.clock.now();
  const waited = now - (since(scope.object, type) ?? now);
  const { pollMs } = scope.timings;
  return { requeueAfterMs: Math.min(10 * pollMs, Math.max(pollMs, waited / 4)) };
}

/**
 * Waits for something the machine reads from an informer and whose change requeues it (controller.ts):
 * the poll is only a safety net, so it is slow and idle (behind every other key). With 40,000 machines
 * waiting, even one such poll each per 10 s was more work than the controllers could do.
 */
function waitWatched(ctx: ReconcileContext, scope: MachineScope, input: ConditionInput): PhaseResult {
  condition(ctx, scope, input);
  return { halt: true, requeueAfterMs: 30 * scope.timings.pollMs, idle: true };
}

/** The name of the machine's node: a scale-set instance's host name (its id unless named), else the machine's name. */
export function nodeNameOf(machine: MachineObject): string {
  const instance = machine.spec.scaleSetInstance;
  return instance ? (instance.nodeName ?? instance.instanceId) : machine.metadata.name!;
}

/**
 * A machine standing for a scale-set instance takes the instance as it is: the cloud launched it from
 * the pool's launch template, with the bootstrap data of the pool's BootstrapConfig. No Event of its own:
 * the pool's InstancesFound names the instance and its machine, and the machine's spec.scaleSetInstance
 * and InstanceReady condition show it.
 */
export const adoptScaleSetInstance: Phase<MachineScope> = (ctx, scope) => {
  const machine = scope.object;
  const instance = machine.spec.scaleSetInstance;
  if (!instance || machine.status?.instanceId) return;
  const status = (machine.status ??= {});
  status.instanceId = instance.instanceId;
  if (machine.spec.providerID) status.providerID = machine.spec.providerID;
  condition(ctx, scope, { type: BOOTSTRAP_READY, status: "True", reason: REASONS.bootstrapDataReady, message: `launched by scale set ${instance.scaleSetId} from its launch template` });
  condition(ctx, scope, { type: INSTANCE_READY, status: "False", reason: REASONS.instanceProvisioning, message: `instance ${instance.instanceId} of scale set ${instance.scaleSetId}` });
};

/** A failed machine stays as it is until its owner deletes it. */
export const skipFailed: Phase<MachineScope> = (_ctx, scope) => (isFailedForGood(scope.object) ? { halt: true } : undefined);

/** Waits until the infrastructure, the control-plane endpoint and the cluster's secrets exist. */
export const awaitPrerequisites: Phase<MachineScope> = async (ctx, scope) => {
  if (scope.object.status?.instanceId) return;
  const { spec, metadata } = scope.object;
  // The cluster, connection and infrastructures come from informers, and their changes requeue the machine.
  const waiting = (reason: string, message: string) => waitWatched(ctx, scope, { type: BOOTSTRAP_READY, status: "False", reason, message });
  if (!scope.cluster || scope.cluster.metadata.deletionTimestamp) {
    return waiting(REASONS.waitingForCluster, `cluster ${spec.clusterName} does not exist or is being deleted`);
  }
  if (!scope.connection) return waiting(REASONS.waitingForConnection, `connection ${spec.connection} does not exist`);
  const infraName = names.infrastructure(spec.clusterName, spec.connection);
  if (!readyForMachines(scope.infrastructure)) return waiting(REASONS.waitingForInfrastructure, `infrastructure ${infraName} is not ready yet`);
  if (!scope.controlPlaneInfrastructure?.status?.loadBalancer) {
    return waiting(REASONS.waitingForControlPlaneEndpoint, `the control-plane load balancer of cluster ${spec.clusterName} does not exist yet`);
  }
  const secrets = ctx.client.of<SecretObject>(secretKind);
  const [pki, token] = await Promise.all([
    secrets.tryGet(metadata.namespace, names.pkiSecret(spec.clusterName)),
    secrets.tryGet(metadata.namespace, names.tokenSecret(spec.clusterName)),
  ]);
  if (!pki || !token) {
    const missing = [!pki && names.pkiSecret(spec.clusterName), !token && names.tokenSecret(spec.clusterName)].filter(Boolean).join(" and ");
    return wait(ctx, scope, { type: BOOTSTRAP_READY, status: "False", reason: REASONS.waitingForClusterSecrets, message: `waiting for Secret ${missing}` });
  }
  scope.secrets = { pki, token };
};

/**
 * A machine that joins a cluster whose control plane is initialised joins with the cluster's bootstrap
 * token: before its instance is made, the token is made valid again for as long as the machine may take
 * to boot and join (jointoken.ts). Machines made before the control plane is initialised join with the
 * token `kubeadm init` has just made.
 */
export const refreshJoinToken: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  if (machine.status?.instanceId || isInitMachine(machine) || controlPlaneInitializedAt(scope) === undefined) return;
  const waiting = (message: string) => wait(ctx, scope, { type: BOOTSTRAP_READY, status: "False", reason: REASONS.waitingForJoinToken, message });
  const kube = await scope.deps.workloads.forCluster(machine.metadata.namespace!, machine.spec.clusterName);
  if (!kube) return waiting(`waiting for Secret ${names.kubeconfigSecret(machine.spec.clusterName)} to refresh the join token`);
  const { bootDeadlineMs, joinDeadlineMs } = scope.timings;
  try {
    const outcome = await ensureJoinToken(kube, readBootstrapToken(scope.secrets!.token), ctx.clock.now(), bootDeadlineMs + joinDeadlineMs);
    if (outcome !== "valid") ctx.log.info({ step: "refreshJoinToken", outcome }, "join token made valid again");
  } catch (error) {
    if (isUnavailable(error) || error instanceof KubeApiError) return waiting(`refreshing the join token in the cluster's API: ${(error as Error).message}`);
    throw error;
  }
};

function decode(secret: SecretObject | undefined): string | undefined {
  const value = secret?.data?.value;
  return value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8");
}

/**
 * Writes the machine's user data into its bootstrap Secret, once. A pool machine's node labels and
 * taints come from its pool: only from the template the machine was made from (a cache that has not
 * seen the pool's change yet is waited for; a pool that moved on rolls the machine away).
 */
export const ensureBootstrapData: Phase<MachineScope> = async (ctx, scope) => {
  if (scope.object.status?.instanceId) return;
  const machine = scope.object;
  const namespace = machine.metadata.namespace;
  const name = names.bootstrapSecret(machine.metadata.name!);
  const secrets = ctx.client.of<SecretObject>(secretKind);
  let existing = await secrets.tryGet(namespace, name);
  if (existing?.metadata.ownerReferences?.some((r) => r.kind === machine.kind && r.uid !== machine.metadata.uid)) {
    // Left by an earlier machine of the same name, not yet collected: its user data is not this machine's.
    await deleteIfPresent(() => secrets.delete(namespace, name, { preconditions: { uid: existing!.metadata.uid! } }));
    existing = undefined;
  }
  let userData = decode(existing);
  const madeFrom = machine.metadata.labels?.[LABEL_TEMPLATE_HASH];
  if (userData === undefined && scope.pool && madeFrom !== undefined && poolTemplate(scope.pool.spec).hash !== madeFrom) {
    const message = `pool ${scope.pool.metadata.name} has template ${poolTemplate(scope.pool.spec).hash}, the machine was made from ${madeFrom}`;
    return wait(ctx, scope, { type: BOOTSTRAP_READY, status: "False", reason: REASONS.waitingForPoolTemplate, message });
  }
  if (userData === undefined) {
    const lb = scope.controlPlaneInfrastructure!.status!.loadBalancer!;
    // A cluster naming a realm trusts its issuer from the start: its machines wait for the OIDCClient.
    const oidc = await clusterIssuer(ctx.client, scope.cluster!);
    if (oidc && "waiting" in oidc) return wait(ctx, scope, { type: BOOTSTRAP_READY, status: "False", reason: "WaitingForOIDCClient", message: oidc.waiting });
    const onHosts = (await hostEndpointsOf(scope)) !== undefined;
    const bootstrap = machineBootstrap({
      machine,
      cluster: scope.cluster!,
      // A machine of another cloud than the control plane's reaches its API at the public name only.
      endpoint: { host: lb.host, port: lb.port, ...(lb.internalHost && !inOtherCloud(scope) ? { internalHost: lb.internalHost } : {}) },
      ...(oidc ? { oidc: oidc.issuer } : {}),
      pki: { ...readClusterPki(scope.secrets!.pki), ...(oidc ? { oidcCaPem: oidc.caPem } : {}) },
      token: readBootstrapToken(scope.secrets!.token),
      pool: scope.pool,
      // Booted instances take turns to join on the host; hosts reached over SSH are made one at a time.
      takeTurn: !onHosts,
      // As ensureInstance launches it: with a public address where the cluster spans clouds (hosts have their own).
      publicAddress: !onHosts && scope.infrastructure?.status?.publicAddresses === true,
    });
    // Where the cloud keeps secrets, the token and keys go there and the user data only names the secret.
    let reference: BootstrapSecretRef | undefined;
    try {
      reference = await storeBootstrapSecret(ctx, scope, bootstrap);
    } catch (error) {
      return createRefused(ctx, scope, error);
    }
    userData = renderUserData(bootstrap, reference);
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace, labels: { [LABEL_CLUSTER]: machine.spec.clusterName }, ownerReferences: [controllerRef(machine)] },
      type: "Opaque",
      data: { value: Buffer.from(userData, "utf8").toString("base64") },
    } as SecretObject;
    // The InstanceCreated event names the Secret; one made by an earlier attempt holds what it rendered.
    if (!(await createIfAbsent(() => secrets.create(secret)))) userData = decode(await secrets.get(namespace, name));
  }
  scope.userData = userData;
  condition(ctx, scope, { type: BOOTSTRAP_READY, status: "True", reason: REASONS.bootstrapDataReady, message: `Secret ${name}` });
};

/**
 * What the cloud refused: wait as it asked (throttled), retry with backoff (transient), or report the
 * cause and try again later (quota, capacity, a spec it refuses: someone may fix it meanwhile).
 */
async function createRefused(ctx: ReconcileContext, scope: MachineScope, error: unknown): Promise<PhaseResult> {
  if (error instanceof ProviderError && error.kind === "throttled") return { halt: true, requeueAfterMs: error.retryAfterMs ?? scope.timings.pollMs };
  if (error instanceof ProviderError && error.retryable && error.kind !== "capacity") throw error;
  if (!(error instanceof ProviderError) && !(error instanceof ConnectionUnusableError)) throw error;
  const reason = error instanceof ProviderError && error.kind === "quota" ? REASONS.quotaExceeded : REASONS.createMachineFailed;
  const message = error.message;
  condition(ctx, scope, { type: INSTANCE_READY, status: "False", reason, message });
  await ctx.event(scope.object, "Warning", reason, `creating the instance of ${describe(scope)} failed: ${message}`);
  return { halt: true, requeueAfterMs: scope.timings.retryFailedAfterMs };
}

/** Whether the machine is in another cloud than the cluster's control plane (its infrastructure gives it a public address). */
function inOtherCloud(scope: MachineScope): boolean {
  return scope.infrastructure?.status?.publicAddresses === true && scope.infrastructure.metadata.uid !== scope.controlPlaneInfrastructure?.metadata.uid;
}

function addressesOf(machine: MachineObject, instance: InstanceInfo): NonNullable<MachineObject["status"]>["addresses"] {
  return [
    ...(instance.privateIp ? [{ type: "InternalIP" as const, address: instance.privateIp }] : []),
    ...(instance.publicIp ? [{ type: "ExternalIP" as const, address: instance.publicIp }] : []),
    { type: "Hostname" as const, address: machine.metadata.name! },
  ];
}

/** Creates the instance unless one was recorded; the token makes a repeated create return the first. */
export const ensureInstance: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  if (machine.status?.instanceId) return;
  const infra = scope.infrastructure!.status!;
  const image = machine.spec.image ?? DEFAULT_IMAGE;
  let instance: InstanceInfo;
  try {
    // Hosts have no images and no network to place the machine in: it is a whole host, as it is.
    const onHosts = (await hostEndpointsOf(scope)) !== undefined;
    const imageId = onHosts ? image : infra.images?.[image];
    const zone = scope.reservationZone ?? zoneFor(machine, infra.zones ?? [], scope.clusterMachines ?? []);
    const subnetId = zone ? (infra.subnets?.[zone] ?? (zone === infra.zones?.[0] ? infra.subnetId : undefined)) : undefined;
    if (!imageId) throw new ProviderError("invalid", `image ${image} is not resolved in infrastructure ${scope.infrastructure!.metadata.name}`);
    if (!zone || (!onHosts && (!subnetId || !infra.securityGroupId))) {
      throw new ProviderError("invalid", `infrastructure ${scope.infrastructure!.metadata.name} reports no zone, subnet or security group`);
    }
    const machines = await capabilityOf(scope, "machines");
    const cluster = scope.cluster!;
    instance = await machines.create(
      "instance",
      {
        zone,
        machineType: machine.spec.machineType,
        imageId,
        userData: scope.userData!,
        ...(onHosts
          ? {}
          : {
              placement: {
                subnetId: subnetId!,
                securityGroupIds: [infra.securityGroupId!],
                ...(infra.keyPairId ? { keyPairId: infra.keyPairId } : {}),
                // Where the cluster spans clouds, the other clouds' nodes reach this one at its public address.
                ...(infra.publicAddresses ? { publicIp: true } : {}),
              },
            }),
        ...(scope.reservationId ? { reservationId: scope.reservationId } : {}),
      },
      {
        token: idempotencyToken(machine.metadata.uid!, "instance"),
        tags: cloudTags({ namespace: cluster.metadata.namespace!, name: cluster.metadata.name!, uid: cluster.metadata.uid! }, machine, machine.spec.role),
      },
    );
  } catch (error) {
    return createRefused(ctx, scope, error);
  }
  const status = (machine.status ??= {});
  status.instanceId = instance.id;
  status.providerID = instance.providerId;
  status.zone = instance.zone;
  status.addresses = addressesOf(machine, instance);
  // The boot deadline counts from here, not from an earlier refused create.
  removeCondition(status, INSTANCE_READY);
  condition(ctx, scope, { type: INSTANCE_READY, status: "False", reason: REASONS.instanceProvisioning, message: `instance ${instance.id} is ${instance.cloudState}` });
  ctx.log.info({ step: "createInstance", instance: instance.id, zone: instance.zone }, "instance created");
  await ctx.event(machine, "Normal", "InstanceCreated", `created instance ${instance.id} in zone ${instance.zone}, user data from Secret ${names.bootstrapSecret(machine.metadata.name!)}`);
};

/** Records the instance's provider ID in the spec, as nodes carry it (set once). */
export const recordProviderId: Phase<MachineScope> = async (ctx, scope) => {
  const { metadata, spec, status } = scope.object;
  if (!status?.providerID || spec.providerID) return;
  const patched = await ctx.client.of(machineKind).patch(metadata.namespace, metadata.name!, "merge", { spec: { providerID: status.providerID } });
  // Carry on from the object as written, keeping the status this reconcile has built so far.
  scope.object = { ...structuredClone(patched), status };
};

/** Follows the instance: running goes on; failed or gone ends the machine; pending waits (up to the deadline). */
export const followInstance: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  const id = machine.status!.instanceId!;
  const instance = await (await capabilityOf(scope, "machines")).get("instance", id);
  const wasRunning = has(machine, INSTANCE_READY);
  if (!instance || instance.state === "gone" || instance.state === "deleting" || instance.state === "failed") {
    const reason = instance?.reason?.code ?? (instance?.state === "failed" ? REASONS.instanceFailed : REASONS.instanceGone);
    const detail = instance?.reason?.message ?? (instance ? `the instance is ${instance.cloudState}` : "the instance no longer exists");
    condition(ctx, scope, { type: INSTANCE_READY, status: "False", reason, message: `instance ${id}: ${detail}` });
    return fail(ctx, scope, reason, `instance ${id}${wasRunning ? " stopped serving" : " did not boot"}: ${detail}`);
  }
  machine.status!.addresses = addressesOf(machine, instance);
  if (instance.state === "pending") {
    const started = since(machine, INSTANCE_READY) ?? ctx.clock.now();
    if (ctx.clock.now() - started > scope.timings.bootDeadlineMs) {
      return fail(ctx, scope, REASONS.deadlineExceeded, `instance ${id} did not run within ${formatDuration(scope.timings.bootDeadlineMs)}`);
    }
    const booting: ConditionInput = { type: INSTANCE_READY, status: "False", reason: REASONS.instanceProvisioning, message: `instance ${id} is ${instance.cloudState}` };
    // Where the cloud's feed requeues the machine when its instance runs, the poll is only a safety net.
    if (scope.instancesFollowed) {
      const watched = waitWatched(ctx, scope, booting);
      return { ...watched, requeueAfterMs: Math.min(watched.requeueAfterMs!, Math.max(scope.timings.pollMs, scope.timings.bootDeadlineMs - (ctx.clock.now() - started))) };
    }
    return wait(ctx, scope, booting);
  }
  if (!wasRunning) {
    condition(ctx, scope, { type: INSTANCE_READY, status: "True", reason: REASONS.instanceRunning, message: `instance ${id} is running` });
    await ctx.event(machine, "Normal", "InstanceRunning", `instance ${id} is running`);
  }
};

/**
 * Control-plane machines serve the API behind the control-plane load balancer: the instance is registered
 * once, and the condition is True only while the cloud reports the target healthy (its health checks
 * pass once the API server on it answers — during `kubeadm init` for the first machine, after the join
 * for the others). It does not hold the node back: kubeadm runs meanwhile.
 */
export const registerLoadBalancerTarget: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  if (!isControlPlane(machine) || (await hostEndpointsOf(scope))) return;
  const lb = scope.controlPlaneInfrastructure?.status?.loadBalancer;
  if (!lb) {
    return wait(ctx, scope, { type: LOAD_BALANCER_TARGET, status: "False", reason: REASONS.waitingForControlPlaneEndpoint, message: "the control-plane load balancer is not known" });
  }
  const id = machine.status!.instanceId!;
  const infrastructure = await capabilityOf(scope, "clusterInfrastructure");
  const target = isRegisteredTarget(machine) ? (await infrastructure.get("loadBalancer", lb.id))?.targets.find((t) => t.instanceId === id) : undefined;
  if (!target) {
    await infrastructure.registerTargets(lb.id, [id]);
    condition(ctx, scope, { type: LOAD_BALANCER_TARGET, status: "False", reason: REASONS.healthChecksPending, message: `instance ${id} is a target of load balancer ${lb.id}; waiting for its health checks` });
    await ctx.event(machine, "Normal", "LoadBalancerTargetRegistered", `instance ${id} registered with the control-plane load balancer ${lb.id}`);
    return paced(ctx, scope, LOAD_BALANCER_TARGET);
  }
  if (target.health === "healthy") {
    if (!has(machine, LOAD_BALANCER_TARGET)) await ctx.event(machine, "Normal", "LoadBalancerTargetHealthy", `load balancer ${lb.id} reports instance ${id} healthy`);
    condition(ctx, scope, { type: LOAD_BALANCER_TARGET, status: "True", reason: REASONS.targetHealthy, message: `instance ${id} is a healthy target of load balancer ${lb.id}` });
    return;
  }
  const reason = target.health === "initial" ? REASONS.healthChecksPending : REASONS.targetUnhealthy;
  const detail = `load balancer ${lb.id} reports instance ${id} ${target.health}${target.reason ? ` (${target.reason})` : ""}`;
  if (has(machine, LOAD_BALANCER_TARGET)) await ctx.event(machine, "Warning", REASONS.targetUnhealthy, detail);
  condition(ctx, scope, { type: LOAD_BALANCER_TARGET, status: "False", reason, message: detail });
  return paced(ctx, scope, LOAD_BALANCER_TARGET);
};

/** When a Running machine is checked again: rarely where its instance's changes requeue it, more rarely where its node's do too. */
export function healthCheckDelay(scope: MachineScope): number {
  if (!scope.instancesFollowed) return scope.timings.healthCheckMs;
  // Followed both ways, the check is only a safety net: its rate over the fleet is held (safetyNetInterval).
  return nodeWatched(scope) ? safetyNetInterval(scope.timings.watchedHealthCheckMs, scope.fleetMachines ?? 0) : scope.timings.followedHealthCheckMs;
}

/** What the workload API says of the machine's node: there, absent, or nothing (with why). */
type NodeLookup = { node: WorkloadNode } | { absent: true } | { unknown: string };

async function findNode(scope: MachineScope, kube: KubeClient | undefined): Promise<NodeLookup> {
  if (!kube) return { unknown: "the cluster's kubeconfig does not exist yet" };
  const { metadata, spec } = scope.object;
  const name = nodeNameOf(scope.object);
  let node: WorkloadNode | undefined;
  // A cluster being deleted is not watched (controller.ts); its API is asked, if at all, directly.
  const watched = clusterGoing(scope) ? undefined : scope.nodes?.lookup(metadata.namespace!, spec.clusterName, kube, name);
  if (watched) node = watched.node;
  else {
    try {
      node = await readNode(kube, name);
    } catch (error) {
      // Unreachable (not up yet, or down), or refusing us: either way it tells nothing about the node.
      if (isUnavailable(error) || error instanceof KubeApiError) return { unknown: `the cluster's API: ${(error as Error).message}` };
      throw error;
    }
  }
  // A node of the same name left by an earlier machine is not this machine's node.
  const providerID = node?.spec?.providerID;
  if (!node || (providerID && providerID !== scope.object.status?.providerID)) return { absent: true };
  return { node };
}

/** Whether the machine's node is watched: its changes requeue the machine, which need not poll for them. */
function nodeWatched(scope: MachineScope): boolean {
  return scope.nodes?.watching(scope.object.metadata.namespace!, scope.object.spec.clusterName) ?? false;
}

/**
 * When the cluster's control plane was initialised (its ControlPlaneInitialized condition turned True),
 * or undefined while it is not. Only then can a joining machine's node appear.
 */
function controlPlaneInitializedAt(scope: MachineScope): number | undefined {
  return clusterConditionTrueAt(scope, CONDITION_CONTROL_PLANE_INITIALIZED);
}

/** When the cluster's condition turned True; undefined while it is not True. */
function clusterConditionTrueAt(scope: MachineScope, type: string): number | undefined {
  const condition = getCondition(scope.cluster?.status?.conditions, type);
  return condition?.status === "True" ? Date.parse(condition.lastTransitionTime ?? "") || 0 : undefined;
}

/** Follows the node: joined, then Ready; a kubeadm failure or a missed deadline ends the machine. */
export const observeNode: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  const status = machine.status!;
  // A joining machine waits (kubeadm join retries discovery) until the control plane is initialised:
  // there is no API to ask before, and the cluster's change requeues it (controller.ts). Asking the
  // cloud and a cluster API that is not there yet, every poll, was most of the fleet's polling.
  const initializedAt = controlPlaneInitializedAt(scope);
  if (!status.bootstrapped && !isInitMachine(machine) && initializedAt === undefined) {
    return waitWatched(ctx, scope, { type: NODE_JOINED, status: "False", reason: REASONS.waitingForControlPlane, message: `waiting for the control plane of cluster ${machine.spec.clusterName} to be initialised` });
  }
  const kube = await scope.deps.workloads.forCluster(machine.metadata.namespace!, machine.spec.clusterName);
  const lookup = await findNode(scope, kube);
  if ("node" in lookup) {
    const { node } = lookup;
    const kubelet = node.status?.nodeInfo?.kubeletVersion;
    if (kubelet) status.kubeletVersion = kubelet;
    if (node.metadata.uid) status.nodeUID = node.metadata.uid;
    if (!status.bootstrapped) {
      status.bootstrapped = true;
      status.nodeName = node.metadata.name;
      condition(ctx, scope, { type: NODE_JOINED, status: "True", reason: REASONS.nodeJoined, message: `node ${node.metadata.name} joined the cluster` });
      await ctx.event(machine, "Normal", "NodeJoined", `node ${node.metadata.name} joined cluster ${machine.spec.clusterName}`);
    }
    if (!nodeIsReady(node)) {
      status.nodeReady = false;
      const notReady: ConditionInput = { type: NODE_READY, status: "False", reason: REASONS.nodeNotReady, message: nodeNotReadyMessage(node) };
      // No node is Ready before the network plugin runs, and the cluster's change requeues the machine
      // (controller.ts): polling meanwhile was, at 10,000 clusters, what kept joined nodes waiting minutes.
      const networkAt = clusterConditionTrueAt(scope, CONDITION_NETWORK_PLUGIN_INSTALLED);
      if (networkAt === undefined) return waitWatched(ctx, scope, { ...notReady, message: `${notReady.message} (the cluster's network plugin is not applied yet)` });
      // The node turning Ready requeues the machine where its cluster's nodes are watched.
      if (nodeWatched(scope)) return waitWatched(ctx, scope, notReady);
      return wait(ctx, scope, notReady, networkAt);
    }
    if (!status.nodeReady) {
      // The bootstrap secret goes as the node turns Ready: one Event says both.
      const secret = await deleteSecretOfReadyNode(ctx, scope);
      await ctx.event(machine, "Normal", "NodeReady", `node ${node.metadata.name} is Ready${secret ? `; ${secret}` : ""}`);
    }
    status.nodeReady = true;
    condition(ctx, scope, { type: NODE_READY, status: "True", reason: REASONS.nodeReady, message: `node ${node.metadata.name} is Ready` });
    // A healthy machine is looked at again now and then, behind the machines still on their way.
    return { requeueAfterMs: healthCheckDelay(scope), idle: true };
  }
  if (status.bootstrapped) {
    if ("unknown" in lookup) {
      // A hiccup of the cluster's API says nothing about a Ready node: it is looked at again idly. A
      // node not yet seen Ready is waited for as before, ahead of the idle checks of a large fleet.
      if (status.nodeReady) return { requeueAfterMs: healthCheckDelay(scope), idle: true };
      return wait(ctx, scope, { type: NODE_READY, status: "False", reason: REASONS.nodeNotReady, message: `node ${status.nodeName ?? machine.metadata.name} could not be read: ${lookup.unknown}` });
    }
    status.nodeReady = false;
    condition(ctx, scope, { type: NODE_JOINED, status: "False", reason: REASONS.nodeGone, message: `node ${status.nodeName ?? machine.metadata.name} was removed from the cluster` });
    return fail(ctx, scope, REASONS.nodeGone, `node ${status.nodeName ?? machine.metadata.name} was removed from the cluster`);
  }
  const output = await (await capabilityOf(scope, "machines")).consoleOutput(status.instanceId!);
  const unreadable = bootstrapSecretFailure(output);
  if (unreadable) {
    const message = `the machine could not read its bootstrap secret at boot: ${unreadable}`;
    condition(ctx, scope, { type: NODE_JOINED, status: "False", reason: REASONS.bootstrapSecretUnavailable, message });
    return fail(ctx, scope, REASONS.bootstrapSecretUnavailable, message);
  }
  const printed = kubeadmFailure(output);
  if (printed) {
    const reason = bootstrapFailureReason(machine);
    condition(ctx, scope, { type: NODE_JOINED, status: "False", reason, message: printed });
    return fail(ctx, scope, reason, printed);
  }
  // The deadline runs from the instance running, or from the control plane being initialised if later.
  const running = Math.max(since(machine, INSTANCE_READY) ?? ctx.clock.now(), initializedAt ?? 0);
  if (ctx.clock.now() - running > scope.timings.joinDeadlineMs) {
    const message = `node ${machine.metadata.name} did not join within ${formatDuration(scope.timings.joinDeadlineMs)} of its instance running and the control plane being initialised`;
    condition(ctx, scope, { type: NODE_JOINED, status: "False", reason: REASONS.deadlineExceeded, message });
    return fail(ctx, scope, REASONS.deadlineExceeded, message);
  }
  const retrying = kubeadmRetrying(output);
  const why = "unknown" in lookup ? ` (${lookup.unknown})` : retrying ? `: ${retrying}` : "";
  return wait(ctx, scope, { type: NODE_JOINED, status: "False", reason: REASONS.waitingForNode, message: `waiting for node ${machine.metadata.name} to join${why}` });
};

export const machinePhases: readonly Phase<MachineScope>[] = [
  skipFailed,
  adoptScaleSetInstance,
  awaitPrerequisites,
  refreshJoinToken,
  ensureBootstrapData,
  ensureInstance,
  recordProviderId,
  serveHostEndpoint,
  followInstance,
  registerLoadBalancerTarget,
  observeNode,
  removeJoinedBootstrapSecret,
];

// ---- delete ----

/** The cluster is going away as a whole: its API is not worth draining through. */
function clusterGoing(scope: MachineScope): boolean {
  return !scope.cluster || scope.cluster.metadata.deletionTimestamp !== undefined;
}

/**
 * Cordons the node and evicts its pods through the Eviction API (DaemonSet and static pods stay), unless
 * the cluster is going. Evictions a PodDisruptionBudget refuses are tried again until the drain timeout
 * (from the deletion), after which the machine goes anyway, saying which pods were still there.
 */
export const drain: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  const nodeName = machine.status?.nodeName;
  if (!nodeName || has(machine, NODE_DRAINED)) return;
  const skipped = async (message: string, warn: boolean, reason: string = REASONS.drainSkipped) => {
    condition(ctx, scope, { type: NODE_DRAINED, status: "True", reason, message });
    if (warn) await ctx.event(machine, "Warning", reason, `node ${nodeName} was not drained: ${message}`);
  };
  if (clusterGoing(scope)) return skipped(`cluster ${machine.spec.clusterName} is being deleted`, false);
  const kube = await scope.deps.workloads.forCluster(machine.metadata.namespace!, machine.spec.clusterName);
  if (!kube) return skipped("the cluster's kubeconfig does not exist", true);
  const deletedAt = Date.parse(machine.metadata.deletionTimestamp ?? "") || ctx.clock.now();
  const timedOut = ctx.clock.now() - deletedAt > scope.timings.drainTimeoutMs;
  try {
    const started = getCondition(machine.status?.conditions, NODE_DRAINED) !== undefined;
    if (!(await cordonNode(kube, nodeName))) return skipped(`node ${nodeName} no longer exists`, false, REASONS.drained);
    if (!started) await ctx.event(machine, "Normal", "DrainingNode", `cordoned node ${nodeName}; evicting its pods`);
    const pass = await drainNode(kube, nodeName);
    if (pass.evicted.length > 0) await ctx.event(machine, "Normal", "PodsEvicted", `evicted ${pass.evicted.length} pod(s) from node ${nodeName}: ${pass.evicted.join(", ")}`);
    if (pass.blocked.length === 0) {
      condition(ctx, scope, { type: NODE_DRAINED, status: "True", reason: REASONS.drained, message: `node ${nodeName} cordoned and drained` });
      await ctx.event(machine, "Normal", "NodeDrained", `node ${nodeName} drained`);
      return;
    }
    const blocked = `${pass.blocked.length} pod(s) could not be evicted: ${pass.blocked.map((b) => `${b.pod}: ${b.message}`).join("; ")}`;
    if (timedOut) return skipped(`the drain did not finish within ${formatDuration(scope.timings.drainTimeoutMs)}; ${blocked}; the machine is deleted anyway`, true, REASONS.drainTimedOut);
    await ctx.event(machine, "Warning", REASONS.evictionBlocked, `node ${nodeName}: ${blocked}; trying again`);
    return wait(ctx, scope, { type: NODE_DRAINED, status: "False", reason: REASONS.evictionBlocked, message: `node ${nodeName}: ${blocked}` });
  } catch (error) {
    if (!isUnavailable(error)) throw error;
    if (timedOut) return skipped(`the cluster's API did not answer: ${(error as Error).message}`, true);
    return wait(ctx, scope, { type: NODE_DRAINED, status: "False", reason: "WorkloadApiUnreachable", message: (error as Error).message });
  }
};

/**
 * A drained control-plane node's etcd member is removed (etcd.ts), unless the cluster goes as a whole. An
 * etcd that refuses (no quorum now) or an API that does not answer is tried again until the drain
 * timeout (from the deletion), after which the machine goes anyway, with a warning.
 */
export const removeEtcdMember: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  const nodeName = machine.status?.nodeName;
  if (!isControlPlane(machine) || !nodeName || has(machine, ETCD_MEMBER_REMOVED)) return;
  const done = (reason: string, message: string) => condition(ctx, scope, { type: ETCD_MEMBER_REMOVED, status: "True", reason, message });
  if (clusterGoing(scope)) return done("ClusterDeleted", `cluster ${machine.spec.clusterName} is being deleted`);
  const kube = await scope.deps.workloads.forCluster(machine.metadata.namespace!, machine.spec.clusterName);
  if (!kube) return done("NoKubeconfig", "the cluster's kubeconfig does not exist");
  const deletedAt = Date.parse(machine.metadata.deletionTimestamp ?? "") || ctx.clock.now();
  try {
    const removed = await removeMember(kube, nodeName);
    if (removed.outcome === "absent") return done("NotAMember", `node ${nodeName} is no etcd member`);
    done("Removed", `member ${removed.id} removed; ${removed.left} member(s) left`);
    await ctx.event(machine, "Normal", "EtcdMemberRemoved", `removed etcd member ${removed.id} of node ${nodeName}; ${removed.left} member(s) left`);
  } catch (error) {
    if (!isUnavailable(error) && !isEtcdRetryable(error)) throw error;
    const message = (error as Error).message;
    if (ctx.clock.now() - deletedAt > scope.timings.drainTimeoutMs) {
      done("RemovalTimedOut", `the member could not be removed within ${formatDuration(scope.timings.drainTimeoutMs)}: ${message}`);
      await ctx.event(machine, "Warning", "EtcdMemberNotRemoved", `the etcd member of node ${nodeName} could not be removed (${message}); the machine is deleted anyway`);
      return;
    }
    return wait(ctx, scope, { type: ETCD_MEMBER_REMOVED, status: "False", reason: "RemovingMember", message: `removing the etcd member of node ${nodeName}: ${message}` });
  }
};

/** Control-plane machines leave the load balancer before their instance goes. */
export const deregisterLoadBalancerTarget: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  const id = machine.status?.instanceId;
  const lb = scope.controlPlaneInfrastructure?.status?.loadBalancer;
  const endpoints = isControlPlane(machine) && scope.connection ? await hostEndpointsOf(scope) : undefined;
  if (endpoints) return leaveHostEndpoint(ctx, scope, endpoints);
  if (!isControlPlane(machine) || !id || !isRegisteredTarget(machine)) return;
  if (lb) await (await capabilityOf(scope, "clusterInfrastructure")).deregisterTargets(lb.id, [id]);
  condition(ctx, scope, { type: LOAD_BALANCER_TARGET, status: "False", reason: "Deregistered", message: `instance ${id} left the control-plane load balancer` });
  await ctx.event(machine, "Normal", "LeftLoadBalancer", `instance ${id} left the control-plane load balancer`);
};

/** The machine's instance: the one recorded, else one made by a create whose answer was lost. */
async function instanceIdOf(scope: MachineScope): Promise<string | undefined> {
  const machine = scope.object;
  if (machine.status?.instanceId) return machine.status.instanceId;
  // Only a machine that got as far as creating may have an instance nobody recorded.
  if (!has(machine, BOOTSTRAP_READY) || !scope.connection) return undefined;
  const found = await (await capabilityOf(scope, "machines")).findTagged("instance", { [TAG_OWNER_UID]: machine.metadata.uid! });
  return found[0]?.id;
}

/** Terminates the instance (a scale set's: removes it from the set) and waits until it is gone. */
export const terminateInstance: Phase<MachineScope> = async (ctx, scope) => {
  const id = await instanceIdOf(scope);
  if (!id) return;
  const machines = await capabilityOf(scope, "machines");
  const instance = await machines.get("instance", id);
  const member = scope.object.spec.scaleSetInstance;
  if (member && instance && instance.state !== "gone" && instance.state !== "deleting") {
    // Exactly this instance leaves the set: scaled in (the desired capacity goes down with it) or replaced.
    // A pool that is going away wants no replacement either.
    const decrementDesired = scope.object.metadata.annotations?.[ANNOTATION_SCALE_IN] === "true" || !scope.pool || scope.pool.metadata.deletionTimestamp !== undefined;
    await (await capabilityOf(scope, "poolInfrastructure")).removeInstance(member.scaleSetId, id, { decrementDesired });
    ctx.log.info({ step: "terminateInstance", instance: id, scaleSet: member.scaleSetId, decrementDesired }, "removing instance from its scale set");
    await ctx.event(scope.object, "Normal", "RemovingInstance", `removing instance ${id} from scale set ${member.scaleSetId}${decrementDesired ? " and lowering its desired capacity" : "; the scale set replaces it"}`);
    return wait(ctx, scope, { type: INSTANCE_READY, status: "False", reason: "InstanceTerminating", message: `instance ${id} is leaving scale set ${member.scaleSetId}` });
  }
  if (!instance || instance.state === "gone") {
    if (getCondition(scope.object.status?.conditions, INSTANCE_READY)?.reason !== "InstanceTerminated") {
      condition(ctx, scope, { type: INSTANCE_READY, status: "False", reason: "InstanceTerminated", message: `instance ${id} is terminated` });
      await ctx.event(scope.object, "Normal", "InstanceTerminated", `instance ${id} is terminated`);
    }
    return;
  }
  if (instance.state !== "deleting") {
    await machines.delete("instance", id);
    ctx.log.info({ step: "terminateInstance", instance: id }, "terminating instance");
    await ctx.event(scope.object, "Normal", "TerminatingInstance", `terminating instance ${id}`);
  }
  return wait(ctx, scope, { type: INSTANCE_READY, status: "False", reason: "InstanceTerminating", message: `instance ${id} is terminating` });
};

/** Removes the Node object, unless the cluster goes as a whole (its API goes with it). */
export const deleteNodeObject: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  const nodeName = machine.status?.nodeName;
  if (!nodeName || clusterGoing(scope)) return;
  const kube = await scope.deps.workloads.forCluster(machine.metadata.namespace!, machine.spec.clusterName);
  if (!kube) return;
  try {
    await deleteNode(kube, nodeName);
    await ctx.event(machine, "Normal", "NodeDeleted", `deleted node ${nodeName}`);
  } catch (error) {
    if (!isUnavailable(error)) throw error;
  }
};

export const machineDeletePhases: readonly Phase<MachineScope>[] = [drain, removeEtcdMember, deregisterLoadBalancerTarget, terminateInstance, deleteBootstrapSecret, deleteNodeObject];
