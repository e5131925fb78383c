// The infrastructure controller's phases: open the connection, resolve the catalogue, then the network,
// the subnet, and side by side the security group, the key pair and (in the control plane's connection)
// the API load balancer. Each step finds its resource before making one (resources.ts), records the id
// in status as soon as it has it, and asks to be called again while the cloud is still working, so a
// crash at any point resumes where it stopped. Deleting goes the other way, tolerant of what is gone.
import { createHash } from "node:crypto";
import type { ConnectionObject, InfrastructureObject } from "../../api/kinds.ts";
import type { OwnerReferenceT } from "../../api/meta.ts";
import { formatCidr, parseCidr } from "../../api/cidr.ts";
import {
  CapabilityMissingError,
  isProviderError,
  type Catalogue,
  type CapabilityName,
  type ClusterInfrastructure,
  type Dns,
  type FirewallRule,
  type InfrastructureResourceKind,
  type ResourceInfos,
  type ResourceSpecs,
  type Tags,
} from "../../providers/provider.ts";
import { getCondition, isTrue, setCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Phase, PhaseResult, Scope } from "../../runtime/reconciler.ts";
import { cloudTags, controllerOf, TAG_OWNER_UID, TAG_ROLE, TAG_ZONE } from "../contract.ts";
import { FINALIZER_INFRASTRUCTURE } from "../../api/slipway/infrastructure.ts";
import { names } from "../../api/slipway/names.ts";
import { ConnectionUnusableError, type ProviderResolver } from "../providers.ts";
import { DELETE_ORDER, deleteOwned, findOrCreate, RESOURCE_NAMES, TokenChainError } from "./resources.ts";
import { ensureClusterSshKey, SshKeySecretError } from "./sshkey.ts";
import { apiNamesOf, deleteApiRecords, endpointName, ensureApiRecords, type ApiNames } from "./api-names.ts";
import { ensureHostsInfrastructure, hostEndpointsOf, releaseHostsInfrastructure } from "./hosts.ts";
import { crossCloudRules, sameRules, type CrossCloudView } from "./crosscloud.ts";
import {
  CATALOG_RESOLVED,
  mayHaveCloudResources,
  nowOf,
  NETWORK_READY,
  REASON_DELETE_FAILED,
  REASON_VALIDATION_FAILED,
  RESOURCE_CONDITIONS,
  statusOf,
  stepFailed,
  stepInProgress,
  stepReady,
  type InfrastructureEvent,
  type Status,
} from "./status.ts";

/** The Kubernetes API port, on the load balancer and on the control-plane machines behind it. */
export const API_SERVER_PORT = 6443;
const SSH_PORT = 22;
const ANYWHERE = "0.0.0.0/0";

/** Timings, compiled from the controller's options. */
export interface InfrastructureSettings {
  /** How long a resource may take to be ready, retries included. */
  deadlineMs: number;
  /** The same for the load balancer. */
  loadBalancerDeadlineMs: number;
  /** Delay before looking again at something the cloud is still making or deleting. */
  pollMs: number;
  /** Delay before trying again after a permanent failure (a raised quota or an edited spec may fix it). */
  failureRetryMs: number;
  /** Delay before trying a delete again that something still depends on (instances terminating). */
  dependencyRetryMs: number;
}

/** The cluster an Infrastructure belongs to, as its tags and its SSH key Secret name it. */
export interface ClusterIdentity {
  namespace: string;
  name: string;
  uid: string;
  /** The Infrastructure's controller reference: the Cluster, which also owns the SSH key Secret. */
  owner: OwnerReferenceT;
}

export interface InfrastructureScope extends Scope<InfrastructureObject> {
  settings: InfrastructureSettings;
  providers: ProviderResolver;
  /** The Connection named in spec.connection, from the informer cache. */
  connection?: ConnectionObject;
  /** Set by openConnection (the catalogue) and openConnectionForDelete (the infrastructure only). */
  catalogue?: Catalogue;
  infrastructure?: ClusterInfrastructure;
  /** The provider's DNS, when it offers one (the API's names live there: api-names.ts). */
  dns?: Dns;
  cluster?: ClusterIdentity;
  /** Whether the cluster spans clouds and what this connection's rules for the others are made from. */
  crossCloud?: () => CrossCloudView | undefined;
  /**
   * Events about what this reconcile did, recorded once its status is written: a reconcile that worked
   * from a stale read (its write is refused) did nothing worth telling.
   */
  notices: InfrastructureEvent[];
}

function notify(scope: InfrastructureScope, type: InfrastructureEvent["type"], reason: string, message: string): void {
  scope.notices.push({ type, reason, message });
}

// ---- connection and catalogue ----

/** What cannot be used, and the reason it is reported under. */
interface Unusable {
  reason: string;
  message: string;
}

/**
 * Opens the connection's provider with the capabilities the infrastructure needs (the catalogue only to
 * build, not to delete) and sets them in the scope; says why it cannot, or undefined once it has.
 */
async function openProvider(scope: InfrastructureScope, needs: CapabilityName[]): Promise<Unusable | undefined> {
  const { spec } = scope.object;
  const connection = scope.connection;
  const unusable = (message: string) => ({ reason: REASON_VALIDATION_FAILED, message });
  if (!connection) return unusable(`connection "${spec.connection}" does not exist in namespace ${scope.object.metadata.namespace}`);
  if (connection.spec.region !== spec.region) {
    return unusable(`connection "${spec.connection}" builds in region ${connection.spec.region}, not in ${spec.region}`);
  }
  try {
    const provider = await scope.providers.open(connection, needs);
    scope.catalogue = provider.capabilities.catalogue;
    scope.infrastructure = provider.capabilities.clusterInfrastructure;
    scope.dns = provider.capabilities.dns;
    return undefined;
  } catch (error) {
    // A provider without what an infrastructure is made of says so under its own reason (CapabilityMissing).
    if (error instanceof ConnectionUnusableError) return { reason: error.cause instanceof CapabilityMissingError ? error.reason : REASON_VALIDATION_FAILED, message: error.message };
    throw error;
  }
}

function clusterIdentity(infra: InfrastructureObject): ClusterIdentity | string {
  const owner = controllerOf(infra);
  if (!owner || owner.kind !== "Cluster") return `the infrastructure has no owning Cluster (controller owner reference)`;
  if (owner.name !== infra.spec.clusterName) return `spec.clusterName is "${infra.spec.clusterName}" but the owning Cluster is "${owner.name}"`;
  return { namespace: infra.metadata.namespace ?? "", name: infra.spec.clusterName, uid: owner.uid, owner };
}

function validationFailed(ctx: ReconcileContext, scope: InfrastructureScope, message: string, reason = REASON_VALIDATION_FAILED): PhaseResult {
  setCondition(statusOf(scope.object), { type: CATALOG_RESOLVED, status: "False", reason, message }, nowOf(ctx));
  return { halt: true, requeueAfterMs: scope.settings.failureRetryMs };
}

/** Opens the provider of the connection and names the cluster; a missing or unusable one fails validation. */
export const openConnection: Phase<InfrastructureScope> = async (ctx, scope) => {
  const identity = clusterIdentity(scope.object);
  if (typeof identity === "string") return validationFailed(ctx, scope, identity);
  scope.cluster = identity;
  // A connection of hosts has nothing to build but its control-plane endpoint (hosts.ts).
  const endpoints = await hostEndpointsOf(scope);
  if (endpoints) return ensureHostsInfrastructure(ctx, scope, endpoints);
  const problem = await openProvider(scope, ["catalogue", "clusterInfrastructure"]);
  if (problem) return validationFailed(ctx, scope, problem.message, problem.reason);
};

function sortedList(names: Iterable<string>): string {
  return [...names].sort().join(", ");
}

/**
 * Resolves zones, machine types and images in the connection (again whenever the spec changes). The
 * first time, it also records the network step as started and stops: cloud resources are only ever made
 * by a reconcile that read a status saying so, which lets deletion know when there is nothing to delete.
 */
export const resolveCatalog: Phase<InfrastructureScope> = async (ctx, scope) => {
  const infra = scope.object;
  const status = statusOf(infra);
  const resolved = getCondition(status.conditions, CATALOG_RESOLVED);
  if (resolved?.status === "True" && resolved.observedGeneration === infra.metadata.generation) return;
  const provider = scope.catalogue!;
  let catalogue: [string[], Awaited<ReturnType<Catalogue["machineTypes"]>>, Awaited<ReturnType<Catalogue["images"]>>];
  try {
    catalogue = await Promise.all([provider.zones(), provider.machineTypes(), provider.images()]);
  } catch (error) {
    if (isProviderError(error) && !error.retryable && error.kind !== "notFound") return validationFailed(ctx, scope, error.message);
    if (isProviderError(error, "throttled")) return { halt: true, requeueAfterMs: error.retryAfterMs ?? scope.settings.pollMs };
    throw error;
  }
  const [zones, machineTypes, images] = catalogue;
  const wantedTypes = infra.spec.machineTypes ?? [];
  const wantedImages = infra.spec.images ?? [];
  const typeByName = new Map(machineTypes.map((t) => [t.name, t]));
  const imageByName = new Map(images.map((i) => [i.name, i]));
  const problems: string[] = [];
  const missingTypes = wantedTypes.filter((t) => !typeByName.has(t));
  const missingImages = wantedImages.filter((i) => !imageByName.has(i));
  if (zones.length === 0) problems.push(`region ${infra.spec.region} has no zones`);
  if (missingTypes.length > 0) {
    problems.push(`machine types not offered in ${infra.spec.region}: ${sortedList(missingTypes)} (offered: ${sortedList(typeByName.keys())})`);
  }
  if (missingImages.length > 0) {
    problems.push(`images not found in ${infra.spec.region}: ${sortedList(missingImages)} (available: ${sortedList(imageByName.keys())})`);
  }
  if (problems.length > 0) return validationFailed(ctx, scope, problems.join("; "));

  status.zones = zonesToUse(status.subnetId ? (status.zones ?? []) : [], zones, infra.spec.nodeCIDR);
  status.machineTypes = Object.fromEntries(wantedTypes.map((t) => [t, { vcpu: typeByName.get(t)!.vcpus, memoryMiB: typeByName.get(t)!.memoryMiB }]));
  status.images = Object.fromEntries(wantedImages.map((i) => [i, imageByName.get(i)!.id]));
  const now = nowOf(ctx);
  setCondition(
    status,
    {
      type: CATALOG_RESOLVED,
      status: "True",
      reason: "Resolved",
      message: `zone${status.zones.length > 1 ? "s" : ""} ${status.zones.join(", ")}; ${wantedTypes.length} machine type(s), ${wantedImages.length} image(s) resolved`,
      observedGeneration: infra.metadata.generation,
    },
    now,
  );
  if (!getCondition(status.conditions, NETWORK_READY)) {
    setCondition(status, { type: NETWORK_READY, status: "Unknown", reason: "Pending", message: "the network is made next" }, now);
    return { halt: true, requeueAfterMs: 1 };
  }
};

// ---- resources ----

/** How one resource is made: what it is made from, and where its id goes in status. */
interface ResourceStep<K extends InfrastructureResourceKind> {
  kind: K;
  recordedId: string | undefined;
  /** Further tags that single it out among its kind (a subnet's zone), made with it. */
  identity?: Tags;
  spec: () => ResourceSpecs[K] | Promise<ResourceSpecs[K]>;
  /** The token's purpose; names what the resource is built on, so that a rebuilt dependency gets a new one. */
  purpose: (spec: ResourceSpecs[K]) => string;
  record: (info: ResourceInfos[K]) => void;
}

type StepOutcome = { state: "ready" } | { state: "waiting"; afterMs: number } | { state: "failed"; afterMs: number } | { state: "error"; error: unknown };

/** Errors that retrying unchanged does not fix. */
function permanent(error: unknown): error is Error {
  if (isProviderError(error)) return !error.retryable && error.kind !== "notFound";
  return error instanceof TokenChainError || error instanceof SshKeySecretError;
}

async function runStep<K extends InfrastructureResourceKind>(ctx: ReconcileContext, scope: InfrastructureScope, step: ResourceStep<K>): Promise<StepOutcome> {
  const infra = scope.object;
  const status = statusOf(infra);
  const { settings } = scope;
  const { noun, title } = RESOURCE_NAMES[step.kind];
  const deadlineMs = step.kind === "loadBalancer" ? settings.loadBalancerDeadlineMs : settings.deadlineMs;
  const failed = (message: string): StepOutcome => {
    stepFailed(status, step.kind, message, nowOf(ctx));
    return { state: "failed", afterMs: settings.failureRetryMs };
  };
  const inProgress = (reason: string, message: string): StepOutcome | undefined =>
    stepInProgress(status, step.kind, reason, message, nowOf(ctx), deadlineMs).state === "expired"
      ? { state: "failed", afterMs: settings.failureRetryMs }
      : undefined;
  try {
    const found = await findOrCreate(scope.infrastructure!, {
      kind: step.kind,
      recordedId: step.recordedId,
      identity: { [TAG_OWNER_UID]: infra.metadata.uid!, [TAG_ROLE]: step.kind, ...step.identity },
      tags: { ...cloudTags(scope.cluster!, infra, step.kind), ...step.identity },
      ownerUid: infra.metadata.uid!,
      purpose: step.purpose,
      spec: step.spec,
      creating: () => {
        // A first create is no Event of its own: the cluster's CreatingInfrastructure names what is being
        // built, and <Resource>Ready says when it is. A create after one that an earlier reconcile began
        // (it failed, or left no resource) is; one of a resource lost once ready is <Resource>Lost.
        const before = getCondition(scope.original.status?.conditions, RESOURCE_CONDITIONS[step.kind].condition);
        if (before && before.status !== "True" && before.reason !== "Pending") notify(scope, "Normal", `Creating${title}`, `creating the ${noun} again (${before.reason ?? "not ready"})`);
        // From here on the resource is not ready, whatever the condition said before (it may have been lost).
        stepInProgress(status, step.kind, "Creating", `creating the ${noun}`, nowOf(ctx), deadlineMs);
      },
    });
    const { info } = found;
    step.record(info);
    if (found.lostId) notify(scope, "Warning", `${title}Lost`, `${noun} ${found.lostId} no longer exists in the cloud; replaced by ${info.id}`);
    if (found.origin === "adopted") {
      ctx.log.info({ step: step.kind, id: info.id }, `found the ${noun} by its tags`);
      notify(scope, "Normal", `Adopted${title}`, `found ${noun} ${info.id} by its tags`);
    }
    if (found.duplicates.length > 0) {
      notify(scope, "Warning", `Duplicate${title}Deleted`, `deleted ${noun}(s) ${found.duplicates.join(", ")} carrying the same tags as ${info.id}`);
    }
    switch (info.state) {
      case "ready":
        stepReady(status, step.kind, `${noun} ${info.id} is ready`, nowOf(ctx));
        return { state: "ready" };
      case "failed":
        return failed(`${noun} ${info.id} failed (${info.cloudState})`);
      case "deleting":
        return inProgress("Replacing", `${noun} ${info.id} is being deleted; a new one is made once it is gone`) ?? { state: "waiting", afterMs: settings.pollMs };
      default: {
        // One this infrastructure made is Creating until ready, whichever reconcile looks (a change of the
        // word alone would be one more status write, and say nothing new).
        const creating = found.origin === "created" || getCondition(status.conditions, RESOURCE_CONDITIONS[step.kind].condition)?.reason === "Creating";
        return (
          inProgress(creating ? "Creating" : "Provisioning", `waiting for ${noun} ${info.id} to be ready (${info.cloudState})`) ?? {
            state: "waiting",
            afterMs: settings.pollMs,
          }
        );
      }
    }
  } catch (error) {
    if (permanent(error)) return failed(error.message);
    // A hiccup while looking at a resource already ready says nothing about the resource: it stays ready.
    if (!isTrue(status.conditions, RESOURCE_CONDITIONS[step.kind].condition)) {
      const expired = inProgress("Retrying", `retrying: ${error instanceof Error ? error.message : String(error)}`);
      if (expired) return expired;
    }
    if (isProviderError(error, "throttled")) return { state: "waiting", afterMs: error.retryAfterMs ?? settings.pollMs };
    return { state: "error", error };
  }
}

/** Continue when every step is ready; otherwise wait for the soonest requeue, or throw to back off. */
function settle(outcomes: StepOutcome[]): PhaseResult | undefined {
  const error = outcomes.find((o): o is { state: "error"; error: unknown } => o.state === "error");
  if (error) throw error.error;
  const delays = outcomes.flatMap((o) => (o.state === "waiting" || o.state === "failed" ? [o.afterMs] : []));
  return delays.length === 0 ? undefined : { halt: true, requeueAfterMs: Math.max(1, Math.min(...delays)) };
}

/** At most this many zones get a subnet and machines: a control plane of 3 survives the loss of any one. */
export const MAX_ZONES = 3;

/** The range `index` of `2^bits` equal parts of a network. */
function part(network: { base: number; prefix: number }, bits: number, index: number): string {
  const prefix = network.prefix + bits;
  const size = 2 ** (32 - prefix);
  const base = network.base + index * size;
  return formatCidr({ base, prefix, first: base, last: base + size - 1 });
}

/**
 * The subnet's range in the `index`-th zone used: the first half of the node range for the first zone
 * (the whole range when it cannot be split), the third and fourth quarters for the second and third.
 */
export function subnetCidr(nodeCidr: string, index = 0): string {
  const network = parseCidr(nodeCidr);
  if (index === 0) return network.prefix >= 28 ? nodeCidr : part(network, 1, 0);
  if (index >= MAX_ZONES || network.prefix > 26) throw new RangeError(`no subnet range for zone ${index + 1} in ${nodeCidr}`);
  return part(network, 2, index + 1);
}

/**
 * The zones that get a subnet: those already used (in their order: the first one holds the subnet made
 * before the others), then the region's others in the region's order, up to MAX_ZONES. A node range too
 * small to split in quarters (smaller than a /26) keeps one zone.
 */
export function zonesToUse(used: readonly string[], regionZones: readonly string[], nodeCidr: string): string[] {
  const max = parseCidr(nodeCidr).prefix > 26 ? 1 : MAX_ZONES;
  const zones = used.length > 0 ? [...used] : [];
  for (const zone of regionZones) {
    if (zones.length >= max) break;
    if (!zones.includes(zone)) zones.push(zone);
  }
  return zones;
}

/** The nodes' firewall: the API and SSH from anywhere, everything between nodes, everything out. */
export function nodeFirewallRules(nodeCidr: string): FirewallRule[] {
  return [
    { direction: "ingress", protocol: "tcp", fromPort: API_SERVER_PORT, toPort: API_SERVER_PORT, cidr: ANYWHERE },
    { direction: "ingress", protocol: "tcp", fromPort: SSH_PORT, toPort: SSH_PORT, cidr: ANYWHERE },
    { direction: "ingress", protocol: "all", cidr: nodeCidr },
    { direction: "egress", protocol: "all", cidr: ANYWHERE },
  ];
}

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 12);
}

export const ensureNetwork: Phase<InfrastructureScope> = async (ctx, scope) => {
  const infra = scope.object;
  const status = statusOf(infra);
  return settle([
    await runStep(ctx, scope, {
      kind: "network",
      recordedId: status.networkId,
      spec: () => ({ cidr: infra.spec.nodeCIDR }),
      purpose: () => "network",
      record: (info) => (status.networkId = info.id),
    }),
  ]);
};

/** One subnet per zone used; the first zone's is also `status.subnetId`, as it was when there was one. */
export const ensureSubnet: Phase<InfrastructureScope> = async (ctx, scope) => {
  const infra = scope.object;
  const status = statusOf(infra);
  const networkId = status.networkId!;
  const outcomes: StepOutcome[] = [];
  for (const [index, zone] of (status.zones ?? []).entries()) {
    outcomes.push(
      await runStep(ctx, scope, {
        kind: "subnet",
        recordedId: status.subnets?.[zone] ?? (index === 0 ? status.subnetId : undefined),
        identity: { [TAG_ZONE]: zone },
        spec: () => ({ networkId, zone, cidr: subnetCidr(infra.spec.nodeCIDR, index) }),
        // The first zone's token is the one of the single subnet made before zones were spread.
        purpose: (spec) => (index === 0 ? `subnet/${spec.networkId}` : `subnet/${spec.networkId}/${zone}`),
        record: (info) => {
          (status.subnets ??= {})[zone] = info.id;
          if (index === 0) status.subnetId = info.id;
        },
      }),
    );
  }
  return settle(outcomes);
};

function securityGroupStep(scope: InfrastructureScope, status: Status): ResourceStep<"securityGroup"> {
  const { spec } = scope.object;
  const networkId = status.networkId!;
  return {
    kind: "securityGroup",
    recordedId: status.securityGroupId,
    spec: () => ({
      networkId,
      name: `${names.infrastructure(spec.clusterName, spec.connection)}-nodes`,
      description: `Kubernetes nodes of cluster ${spec.clusterName}`,
      rules: nodeFirewallRules(spec.nodeCIDR),
    }),
    purpose: (s) => `securityGroup/${s.networkId}`,
    record: (info) => (status.securityGroupId = info.id),
  };
}

function keyPairStep(ctx: ReconcileContext, scope: InfrastructureScope, status: Status): ResourceStep<"keyPair"> {
  const { spec, metadata } = scope.object;
  const cluster = scope.cluster!;
  return {
    kind: "keyPair",
    recordedId: status.keyPairId,
    spec: async () => ({
      name: names.infrastructure(spec.clusterName, spec.connection),
      publicKey: await ensureClusterSshKey(ctx.client, metadata.namespace ?? "", cluster.name, cluster.owner),
    }),
    // A new cluster key (its Secret was replaced) is another key pair.
    purpose: (s) => `keyPair/${shortHash(s.publicKey)}`,
    record: (info) => (status.keyPairId = info.id),
  };
}

function loadBalancerStep(scope: InfrastructureScope, status: Status, names: ApiNames | undefined): ResourceStep<"loadBalancer"> {
  const networkId = status.networkId!;
  // In every zone used, so that the API stays reachable when a zone is lost.
  const subnetIds = (status.zones ?? []).map((zone, index) => status.subnets?.[zone] ?? (index === 0 ? status.subnetId! : ""));
  const internal = scope.object.spec.apiVisibility === "private";
  return {
    kind: "loadBalancer",
    recordedId: status.loadBalancer?.id,
    spec: () => ({
      name: `${scope.object.spec.clusterName}-api`,
      networkId,
      subnetIds,
      listeners: [{ port: API_SERVER_PORT, targetPort: API_SERVER_PORT }],
      ...(internal ? { internal } : {}),
    }),
    // A public API's token is the one it always had; a private one asks for another load balancer.
    purpose: (s) => `loadBalancer/${s.subnetIds.join(",")}${s.internal ? "/internal" : ""}`,
    // The url may change when the load balancer turns active (the cloud publishes its endpoint then). With
    // DNS, the API's name (api, or api-int for a private API) stands for the load balancer's generated one.
    record: (info) =>
      (status.loadBalancer = { id: info.id, host: names ? endpointName(names) : info.dnsName, ...(names ? { internalHost: names.internal } : {}), port: info.port, url: info.url }),
  };
}

/** The security group, the key pair and the control plane's load balancer, side by side; then the API's names. */
export const ensureAccessAndEndpoint: Phase<InfrastructureScope> = async (ctx, scope) => {
  const status = statusOf(scope.object);
  const names = await apiNamesOf(scope);
  const steps: Promise<StepOutcome>[] = [runStep(ctx, scope, securityGroupStep(scope, status)), runStep(ctx, scope, keyPairStep(ctx, scope, status))];
  if (scope.object.spec.controlPlane) steps.push(runStep(ctx, scope, loadBalancerStep(scope, status, names)));
  const outcomes = await Promise.all(steps);
  if (names && status.loadBalancer) outcomes.push(await apiRecordsStep(ctx, scope, names, status.loadBalancer.id));
  return settle(outcomes);
};

/** The API's DNS records alias the load balancer as soon as it exists (kubeadm waits for the name to resolve). */
async function apiRecordsStep(ctx: ReconcileContext, scope: InfrastructureScope, names: ApiNames, loadBalancerId: string): Promise<StepOutcome> {
  try {
    const made = await ensureApiRecords(scope, names, loadBalancerId);
    if (made.length > 0) notify(scope, "Normal", "CreatedDnsRecords", `${made.join(" and ")} lead to load balancer ${loadBalancerId}`);
    return { state: "ready" };
  } catch (error) {
    if (!permanent(error)) return { state: "error", error };
    stepFailed(statusOf(scope.object), "loadBalancer", `the API's DNS names: ${error.message}`, nowOf(ctx));
    return { state: "failed", afterMs: scope.settings.failureRetryMs };
  }
}

/**
 * Where the cluster spans clouds, machines made here get public addresses: decided before any step that
 * may wait (the load balancer), since machines are made as soon as its address exists.
 */
export const decidePublicAddresses: Phase<InfrastructureScope> = (_ctx, scope) => {
  if (scope.crossCloud?.()?.spans) statusOf(scope.object).publicAddresses = true;
};

/**
 * Where the cluster spans clouds: machines made here get public addresses, and the security group admits
 * the other clouds' node addresses on the Kubernetes ports (crosscloud.ts). The rules are compared with
 * the group's own on every reconcile, so a rule changed by hand is put back when a machine comes or goes.
 */
export const ensureCrossCloudRules: Phase<InfrastructureScope> = async (ctx, scope) => {
  const view = scope.crossCloud?.();
  const status = statusOf(scope.object);
  const provider = scope.infrastructure;
  if (!view || !status.securityGroupId || !provider?.firewallRules || !provider.setFirewallRules) return;
  if (!view.spans && !status.publicAddresses && !status.crossCloudRules) return;
  if (view.spans) status.publicAddresses = true;
  else delete status.publicAddresses;
  const crossCloud = view.spans ? crossCloudRules(view.input) : [];
  const wanted = [...nodeFirewallRules(scope.object.spec.nodeCIDR), ...crossCloud];
  try {
    const current = await provider.firewallRules(status.securityGroupId);
    if (!sameRules(current, wanted)) {
      await provider.setFirewallRules(status.securityGroupId, wanted);
      const addresses = new Set(crossCloud.map((rule) => rule.cidr)).size;
      notify(scope, "Normal", "UpdatedFirewallRules", `security group ${status.securityGroupId} admits ${addresses} node address(es) of the other clouds (${crossCloud.length} rule(s))`);
    }
  } catch (error) {
    if (isProviderError(error, "throttled")) return { halt: true, requeueAfterMs: error.retryAfterMs ?? scope.settings.pollMs };
    if (permanent(error)) {
      stepFailed(status, "securityGroup", `the rules for the other clouds: ${error.message}`, nowOf(ctx));
      return { halt: true, requeueAfterMs: scope.settings.failureRetryMs };
    }
    throw error;
  }
  if (crossCloud.length > 0) status.crossCloudRules = crossCloud.length;
  else delete status.crossCloudRules;
};

export const infrastructurePhases: readonly Phase<InfrastructureScope>[] = [
  openConnection,
  resolveCatalog,
  decidePublicAddresses,
  ensureNetwork,
  ensureSubnet,
  ensureAccessAndEndpoint,
  ensureCrossCloudRules,
];

// ---- deletion ----

function recordedIdsOf(status: Status, kind: InfrastructureResourceKind): (string | undefined)[] {
  switch (kind) {
    case "network":
      return [status.networkId];
    case "subnet":
      return [status.subnetId, ...Object.values(status.subnets ?? {})];
    case "securityGroup":
      return [status.securityGroupId];
    case "keyPair":
      return [status.keyPairId];
    case "loadBalancer":
      return [status.loadBalancer?.id];
  }
}

function forget(status: Status, kind: InfrastructureResourceKind): void {
  switch (kind) {
    case "network":
      delete status.networkId;
      break;
    case "subnet":
      delete status.subnetId;
      delete status.subnets;
      break;
    case "securityGroup":
      delete status.securityGroupId;
      break;
    case "keyPair":
      delete status.keyPairId;
      break;
    case "loadBalancer":
      delete status.loadBalancer;
      break;
  }
}

/** Something that must be fixed by hand before deletion can go on: said loudly, tried again later. */
async function deleteBlocked(ctx: ReconcileContext, scope: InfrastructureScope, message: string): Promise<PhaseResult> {
  const status = statusOf(scope.object);
  status.reason = REASON_DELETE_FAILED;
  status.message = message;
  await ctx.event(scope.object, "Warning", REASON_DELETE_FAILED, message);
  return { halt: true, requeueAfterMs: scope.settings.failureRetryMs };
}

/**
 * Opens the connection for deletion. Without one, nothing can be deleted: an infrastructure that never
 * started making resources goes at once; otherwise deletion waits, loudly, for the connection.
 */
export const openConnectionForDelete: Phase<InfrastructureScope> = async (ctx, scope) => {
  const endpoints = await hostEndpointsOf(scope);
  if (endpoints) return releaseHostsInfrastructure(scope, endpoints);
  const problem = await openProvider(scope, ["clusterInfrastructure"]);
  if (!problem) return;
  if (!mayHaveCloudResources(scope.object.status)) return;
  return deleteBlocked(
    ctx,
    scope,
    `${problem.message}; the cloud resources cannot be deleted until the connection can be used again (removing the finalizer ${FINALIZER_INFRASTRUCTURE} abandons them)`,
  );
};

/**
 * Deletes in dependency order everything recorded in status or tagged with this Infrastructure's uid —
 * the tags catch a resource whose id never reached the status — and waits until each kind is gone.
 */
export const deleteResources: Phase<InfrastructureScope> = async (ctx, scope) => {
  const provider = scope.infrastructure;
  if (!provider) return;
  const infra = scope.object;
  const status = statusOf(infra);
  const now = nowOf(ctx);
  // The API's names go first: they lead to the load balancer.
  if (scope.dns && infra.spec.controlPlane) {
    try {
      const deleted = await deleteApiRecords(scope.dns, scope);
      if (deleted.length > 0) notify(scope, "Normal", "DeletedDnsRecords", `deleted the DNS records of ${deleted.join(", ")}`);
    } catch (error) {
      if (!isProviderError(error) || error.retryable) throw error;
      return deleteBlocked(ctx, scope, `cannot delete the API's DNS records: ${error.message}`);
    }
  }
  for (const kind of DELETE_ORDER) {
    const { noun, title } = RESOURCE_NAMES[kind];
    let outcome: Awaited<ReturnType<typeof deleteOwned>>;
    try {
      outcome = await deleteOwned(provider, kind, recordedIdsOf(status, kind), { [TAG_OWNER_UID]: infra.metadata.uid! });
    } catch (error) {
      if (!isProviderError(error)) throw error;
      if (error.kind === "dependency") {
        status.message = `waiting to delete the ${noun}: ${error.message}`;
        return { halt: true, requeueAfterMs: scope.settings.dependencyRetryMs };
      }
      if (error.kind === "throttled") return { halt: true, requeueAfterMs: error.retryAfterMs ?? scope.settings.pollMs };
      if (error.retryable || error.kind === "notFound") throw error;
      return deleteBlocked(ctx, scope, `cannot delete the ${noun}: ${error.message}`);
    }
    if (outcome.remaining.length > 0) {
      status.message = `waiting for ${noun} ${outcome.remaining.map((r) => `${r.id} (${r.cloudState})`).join(", ")} to be deleted`;
      return { halt: true, requeueAfterMs: scope.settings.pollMs };
    }
    if (outcome.deleted.length > 0) notify(scope, "Normal", `Deleted${title}`, `deleted ${noun} ${outcome.deleted.join(", ")}`);
    forget(status, kind);
    const { condition } = RESOURCE_CONDITIONS[kind];
    if (getCondition(status.conditions, condition)) {
      setCondition(status, { type: condition, status: "False", reason: "Deleted", message: `the ${noun} is deleted` }, now);
    }
  }
  delete status.reason;
  status.message = "every cloud resource is deleted";
};

export const infrastructureDeletePhases: readonly Phase<InfrastructureScope>[] = [openConnectionForDelete, deleteResources];
