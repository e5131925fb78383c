// The provider contract: what Slipway needs from a cloud or a set of hosts, and the rules every provider
// keeps.
//
// A provider is opened for one Connection (an account in one region, or a set of hosts) and offers some
// of these capabilities, as Cluster API splits infrastructure-cluster, infrastructure-machine and bootstrap
// providers:
//  - `catalogue`: zones, machine types, images and quota of the region;
//  - `clusterInfrastructure`: what a cluster needs around its machines in one connection — network,
//    subnet, security group, key pair and the control plane's load balancer;
//  - `machines`: instances (create, get, find by tags, delete) and their console output;
//  - `reservations`: capacity held for a time window (EC2 capacity reservations, Blazar leases), which
//    instances launch into by the reservation's id.
//  - `dns`: names in a zone of the connection (A records, plain or aliases of a load balancer; SRV), which
//    give a cluster's API a stable name.
//  - `poolInfrastructure`: a cloud's scale sets (AWS Auto Scaling groups, Azure VM scale sets, GCP managed
//    instance groups): identical instances the cloud itself keeps at a desired count over zones.
//  - `bootstrapSecrets`: a store the cloud keeps secrets in for a while (Secrets Manager, SSM), so that a
//    machine's user data carries a reference and its bootstrap token and keys are read once at boot.
//    A provider without it (ssh: it copies the bootstrap files over SSH) puts them in the user data.
// An IaaS cloud (the `sim` provider) offers all of them; a provider of hosts reached over SSH offers
// `machines` (and perhaps a catalogue of its hosts) and has no network or load balancer. Controllers ask
// for the capability they need (`capabilityOf`), and a connection whose provider lacks it fails with
// `CapabilityMissingError`.
//
// Every provider MUST:
//  1. accept an idempotency token on every create: the same token returns the resource the first call
//     made (even after a crash between the call and its answer), never a second one;
//  2. tag every resource it creates with the tags it is given (they name the cluster and the owning
//     object), and find resources by those tags (`findTagged`);
//  3. treat NotFound on delete as success, and make delete of a resource already being deleted a no-op;
//  4. classify every failure as one of the ProviderError kinds below — transient, throttled (with the
//     wait the cloud asked for), quota, capacity, invalid, permission, notFound, dependency — so that
//     controllers decide to retry, wait, or fail without reading messages;
//  5. report resource states in the common vocabulary (`pending`, `ready`, `failed`, `deleting`, `gone`)
//     with the cloud's own state kept in `cloudState`;
//  6. never return or log user data, private keys or credentials;
//  7. declare in `capabilities` exactly the capabilities it implements, each one whole.
// `conformance/` holds every provider to these rules, capability by capability; the `sim` provider is the
// reference and passes all of them. Providers are installed in `index.ts`, one line each.

/** Resources of the cluster infrastructure capability. */
export type InfrastructureResourceKind = "network" | "subnet" | "securityGroup" | "keyPair" | "loadBalancer";
/** Resources of the machines capability. */
export type MachineResourceKind = "instance";
export type ResourceKind = InfrastructureResourceKind | MachineResourceKind;

export type ResourceState = "pending" | "ready" | "failed" | "deleting" | "gone";

export type Tags = Record<string, string>;

export interface FirewallRule {
  direction: "ingress" | "egress";
  protocol: "tcp" | "udp" | "icmp" | "all";
  fromPort?: number;
  toPort?: number;
  cidr: string;
}

/** Where an instance goes in its connection's cluster infrastructure. */
export interface InstancePlacement {
  subnetId: string;
  securityGroupIds: string[];
  keyPairId?: string;
  publicIp?: boolean;
}

/** What each kind of resource is created from. */
export interface ResourceSpecs {
  network: { cidr: string };
  subnet: { networkId: string; zone: string; cidr: string };
  securityGroup: { networkId: string; name: string; description: string; rules: FirewallRule[] };
  keyPair: { name: string; publicKey: string };
  loadBalancer: {
    name: string;
    networkId: string;
    subnetIds: string[];
    listeners: { port: number; targetPort: number }[];
    /** Reachable only from inside its network: no public address, no public name. */
    internal?: boolean;
  };
  instance: {
    zone: string;
    machineType: string;
    imageId: string;
    /** cloud-init user data; secret (it carries bootstrap credentials). */
    userData: string;
    /**
     * Where the instance goes in the cluster infrastructure: a provider that has cluster infrastructure
     * requires it (and refuses an instance without one as invalid); a provider of hosts has none.
     */
    placement?: InstancePlacement;
    /** A capacity reservation (of the reservations capability) to launch into: active, same zone and machine type. */
    reservationId?: string;
  };
}

export interface ResourceBase {
  id: string;
  kind: ResourceKind;
  state: ResourceState;
  /** The cloud's own word for the state, for messages. */
  cloudState: string;
  tags: Tags;
  createdAt?: string;
}

export interface InstanceInfo extends ResourceBase {
  kind: "instance";
  zone: string;
  privateIp?: string;
  publicIp?: string;
  /** The cloud's id in the form Kubernetes nodes carry (`sim://region/i-…`). */
  providerId: string;
  /** Why an instance failed or went away (e.g. BootFailed, InstanceFailure). */
  reason?: { code: string; message: string };
}

export interface LoadBalancerInfo extends ResourceBase {
  kind: "loadBalancer";
  /** The stable name kubeadm puts in certificates and join data: `dnsName:port`. */
  dnsName: string;
  port: number;
  /** Where clients reach the API behind it (may differ from dnsName when the cloud says so). */
  url: string;
  /** Registered targets with the health the cloud's checks report, and the cloud's reason when not healthy. */
  targets: { instanceId: string; health: "initial" | "healthy" | "unhealthy" | "unused"; reason?: string }[];
}

export type ResourceInfo = ResourceBase | InstanceInfo | LoadBalancerInfo;

export interface ResourceInfos {
  network: ResourceBase;
  subnet: ResourceBase;
  securityGroup: ResourceBase;
  keyPair: ResourceBase;
  loadBalancer: LoadBalancerInfo;
  instance: InstanceInfo;
}

export interface MachineTypeInfo {
  name: string;
  vcpus: number;
  memoryMiB: number;
  hourlyPrice?: number;
}

export interface ImageInfo {
  id: string;
  name: string;
}

/** Countable resources, as quotas limit them. */
export interface QuotaResources {
  vcpus: number;
  instances: number;
  networks: number;
  loadBalancers: number;
  publicIps: number;
}

export interface QuotaReport {
  limits: QuotaResources;
  usage: QuotaResources;
}

/** Operations whose usual duration a plan needs to estimate how long building takes. */
export type EstimatedOperation =
  | "networkCreate"
  | "subnetCreate"
  | "securityGroupCreate"
  | "loadBalancerProvision"
  | "targetHealthy"
  | "instanceBoot"
  | "kubeadmInit"
  | "kubeadmJoin";

/** What building costs and how long it takes in the region, as far as the cloud publishes it. */
export interface CloudEstimates {
  /** Hourly prices in US dollars of what is billed besides machines (machine types carry theirs). */
  prices: { loadBalancerHourly?: number; publicIpHourly?: number };
  /** Usual durations in milliseconds; an operation left out is not known. */
  durationsMs: Partial<Record<EstimatedOperation, number>>;
}

export interface CreateOptions {
  /** Idempotency token: at most 64 characters, stable across retries of the same intent. */
  token: string;
  tags: Tags;
}

// ---- capabilities ----

/** Resources of some kinds, made with a token and tags, found by id or by tags, and deleted (rules 1–3, 5). */
export interface TaggedResources<K extends ResourceKind> {
  create<R extends K>(kind: R, spec: ResourceSpecs[R], options: CreateOptions): Promise<ResourceInfos[R]>;
  /** The resource, or undefined when it does not exist (any more). */
  get<R extends K>(kind: R, id: string): Promise<ResourceInfos[R] | undefined>;
  /** Resources carrying every given tag that still exist: none in state `gone`. */
  findTagged<R extends K>(kind: R, tags: Tags): Promise<ResourceInfos[R][]>;
  delete(kind: K, id: string): Promise<void>;
}

/** What the region offers, checked before anything is built. */
export interface Catalogue {
  /** Zones of the region; fails with an `invalid` ProviderError when the region does not exist. */
  zones(): Promise<string[]>;
  machineTypes(): Promise<MachineTypeInfo[]>;
  images(): Promise<ImageInfo[]>;
  quota(): Promise<QuotaReport>;
  /** Prices and usual durations, for plans; a provider that publishes neither leaves it out. */
  estimates?(): Promise<CloudEstimates>;
}

/** What a cluster needs around its machines in one connection. */
export interface ClusterInfrastructure extends TaggedResources<InfrastructureResourceKind> {
  registerTargets(loadBalancerId: string, instanceIds: string[]): Promise<void>;
  deregisterTargets(loadBalancerId: string, instanceIds: string[]): Promise<void>;
  /** A security group's rules as they are now (a provider whose rules cannot change after creation has none). */
  firewallRules?(securityGroupId: string): Promise<FirewallRule[]>;
  /** Replaces a security group's rules with `rules`, whole. */
  setFirewallRules?(securityGroupId: string, rules: FirewallRule[]): Promise<void>;
}

/** The machines nodes run on. */
export interface Machines extends TaggedResources<MachineResourceKind> {
  /** What an instance printed while booting (cloud-init and kubeadm lines), for failure messages. */
  consoleOutput(instanceId: string): Promise<string[]>;
  /**
   * The instances whose state changed since `cursor` (an opaque cursor of an earlier answer), as a cloud's
   * event bus tells them; without a cursor, only the cursor to start from. `changed: "all"` when the
   * cloud cannot say (the cursor is too old): every instance must be looked at again. A provider without
   * such a feed leaves it out, and its machines are checked on a timer instead.
   */
  instanceChanges?(cursor?: string): Promise<InstanceChanges>;
}

export interface InstanceChanges {
  cursor: string;
  changed: string[] | "all";
}

/** What a capacity reservation holds: `count` instances of a machine type in a zone for [startTime, endTime). */
export interface ReservationSpec {
  zone: string;
  machineType: string;
  count: number;
  /** RFC 3339; a time already past means now. */
  startTime: string;
  /** RFC 3339, after startTime. */
  endTime: string;
}

/** scheduled (before its start), active (instances may launch into it), ended (expired or cancelled). */
export type ReservationPhase = "scheduled" | "active" | "ended";

export interface ReservationInfo extends ReservationSpec {
  id: string;
  phase: ReservationPhase;
  /** The cloud's own word for the state, for messages (e.g. expired, cancelled). */
  cloudState: string;
  /** Instances launched into it that hold a place now. */
  inUse: number;
  tags: Tags;
}

/**
 * Capacity held for a time window. Rules beside those of every create (1–3, 6): a reservation the cloud
 * cannot hold is refused with a `capacity` error whose message names the shortfall; a window that ends
 * before it starts is `invalid`; only instances created with the reservation's id use its capacity, and
 * nobody else (no other account, no instance without it) can take it while it is active; when it ends
 * (its end time, or delete) the instances launched into it are terminated.
 */
export interface Reservations {
  create(spec: ReservationSpec, options: CreateOptions): Promise<ReservationInfo>;
  /** The reservation, or undefined when the cloud no longer knows it. */
  get(id: string): Promise<ReservationInfo | undefined>;
  /** Reservations carrying every given tag, ended ones included while the cloud still shows them. */
  findTagged(tags: Tags): Promise<ReservationInfo[]>;
  /** Cancels a reservation; one already ended or gone is a success. */
  delete(id: string): Promise<void>;
}

/** A record of a name in the connection's DNS zone. */
export interface DnsRecordSpec {
  /** The full name, inside the zone (`zone().name`). */
  name: string;
  type: "A" | "SRV";
  /** A: IPv4 addresses; SRV: "priority weight port target". Absent when `loadBalancerId` is given. */
  values?: string[];
  /** An A record that leads wherever a load balancer of the cluster infrastructure leads (an alias). */
  loadBalancerId?: string;
}

export interface DnsRecordInfo extends DnsRecordSpec {
  id: string;
  tags: Tags;
}

/**
 * Names in a DNS zone of the connection. Rules beside those of every create (1–3, 6): the zone is the
 * connection's, shared by every cluster in it (made on first use, never deleted by a cluster); a name
 * outside it, or one that already has a record of that type, is `invalid`; a record exists at once.
 */
export interface Dns {
  /** The connection's zone, made if it does not exist yet. */
  zone(): Promise<{ id: string; name: string }>;
  create(spec: DnsRecordSpec, options: CreateOptions): Promise<DnsRecordInfo>;
  /** Records carrying every given tag. */
  findTagged(tags: Tags): Promise<DnsRecordInfo[]>;
  /** Deletes a record; one already gone is a success. */
  delete(id: string): Promise<void>;
}

// ---- pool infrastructure ----

/** What every instance of a pool is launched from. */
export interface PoolTemplate {
  machineType: string;
  imageId: string;
  /** cloud-init user data of every instance; secret (it carries bootstrap credentials). */
  userData: string;
}

/** Which hosts a pool of a provider of hosts may take: those carrying every label, and those named. */
export interface HostSelection {
  labels?: Tags;
  names?: string[];
}

export interface PoolSpec extends PoolTemplate {
  name: string;
  /** For a provider of hosts: the hosts the pool may take (its placement's subnets and groups are empty). */
  hosts?: HostSelection;
  /** Where the instances go: one subnet per zone they are spread over, with their security groups. */
  placement: { subnetIds: string[]; securityGroupIds: string[]; keyPairId?: string; publicIp?: boolean };
  minSize: number;
  maxSize: number;
  /** How many instances the cloud keeps; between minSize and maxSize. */
  desired: number;
}

/** A change of a pool: sizes, and/or a new template for instances launched from now on. */
export interface PoolChange {
  minSize?: number;
  maxSize?: number;
  desired?: number;
  template?: PoolTemplate;
}

export interface PoolInstanceInfo {
  instanceId: string;
  /** The id Kubernetes nodes carry (`spec.providerID`), as for the machines capability. */
  providerId: string;
  /**
   * The name the instance's node registers under, when it is not the instance id: a pool's instances
   * share one bootstrap data that names no node, so each joins under its own host name (a cloud's
   * instance is named after its id; a host of one's own has a name of its own).
   */
  nodeName?: string;
  zone: string;
  /** pending (booting), ready (in service), leaving (removed, replaced or scaled in; no longer counted). */
  state: "pending" | "ready" | "leaving";
  healthy: boolean;
  /** Protected from scale-in. */
  protected: boolean;
  /** Launched from the pool's current template. */
  upToDate: boolean;
}

export interface PoolInfo {
  id: string;
  name: string;
  /** ready while the pool exists (whatever its instances do), deleting, gone. */
  state: ResourceState;
  cloudState: string;
  tags: Tags;
  zones: string[];
  minSize: number;
  maxSize: number;
  desired: number;
  /** Instances that count towards `desired` (pending or ready). */
  replicas: number;
  /** Instances in service. */
  readyReplicas: number;
  instances: PoolInstanceInfo[];
  /** Why the pool is not at its desired size, while the cloud gives a reason (quota, capacity, protection). */
  message?: string;
}

/**
 * Pools of identical instances the cloud keeps at a desired size (the infrastructure of a MachinePool).
 * Rules beside those of every create (1–3, 6): the pool and every instance it launches carry the tags it
 * is given; the cloud launches, replaces (an instance that fails or is deleted) and removes instances
 * itself, spread over the placement's zones; a size outside minSize..maxSize is `invalid`, its message
 * naming the field, and nothing is made or changed; a pool that cannot reach its size (quota, capacity)
 * says why in `message` and keeps trying, it does not fail; scale-in never removes a protected instance;
 * `removeInstance` removes exactly the instance named (protected or not) and lowers `desired` when asked
 * — removing one that is already leaving or gone is a success and lowers nothing twice; deleting a pool
 * deletes its instances. Every instance boots from the one template, so its user data names no node: each
 * instance has its own host name (its node's name) and `providerId`, as the machines capability's have.
 *
 * A provider of hosts (ssh) offers pools as sets of the hosts it already has: `spec.hosts` selects the
 * hosts a pool may take, and an instance is a claimed host (its id the host's, as for `machines`). Its
 * size is what it can claim now, all or nothing: a `desired` above the free hosts matching is `capacity`,
 * naming how many are free, and claims none of them (no pool is made, or the size stays); lowering
 * `desired`, `removeInstance` and `delete` clean the hosts and release them as deleting a machine does;
 * `removeInstance` without `decrementDesired` takes another free matching host if there is one; instances
 * are never removed on the provider's own account (protection changes nothing).
 */
export interface PoolInfrastructure {
  create(spec: PoolSpec, options: CreateOptions): Promise<PoolInfo>;
  /** The pool, or undefined when it does not exist (any more). */
  get(id: string): Promise<PoolInfo | undefined>;
  /** Pools carrying every given tag that still exist. */
  findTagged(tags: Tags): Promise<PoolInfo[]>;
  update(id: string, change: PoolChange): Promise<PoolInfo>;
  /** The pool's instances, leaving ones included. */
  instances(id: string): Promise<PoolInstanceInfo[]>;
  /** Removes a chosen instance (after it was drained); `decrementDesired` false has it replaced. */
  removeInstance(id: string, instanceId: string, options: { decrementDesired: boolean }): Promise<void>;
  /** Protects instances from scale-in, or lifts the protection. */
  protect(id: string, instanceIds: string[], protect: boolean): Promise<void>;
  /** Deletes the pool and its instances; one already deleting or gone is a success. */
  delete(id: string): Promise<void>;
}

/** A machine's bootstrap secret material, kept by the cloud until the machine joined (or the lifetime ends). */
export interface BootstrapSecretSpec {
  /** Unique in the connection: letters, digits and /_+=.@-, at most 256 characters. */
  name: string;
  /** The material; never answered again by the provider. */
  value: string;
  /** The cloud deletes the secret this long after it was made, read or not. */
  ttlSeconds: number;
  /** Only running instances of the connection's account carrying every one of these tags may read it. */
  readableBy: Tags;
}

/** Where a booting machine reads its secret from, with its own identity: written into its user data. */
export interface BootstrapSecretReference {
  id: string;
  region: string;
  /** The cloud API's endpoint, when the machine cannot know it otherwise. */
  endpoint?: string;
}

export interface BootstrapSecretInfo {
  id: string;
  name: string;
  tags: Tags;
  /** RFC 3339. */
  expiresAt: string;
  /** Reads so far (a machine reads it once, at boot). */
  reads: number;
  reference: BootstrapSecretReference;
}

/**
 * Secrets a machine reads once at boot. Rules beside those of every create (1–3, 6): the value is never
 * returned by any operation of the capability nor logged; only instances with the `readableBy` tags may
 * read it (not other instances, not other accounts); once its lifetime ends it is gone (`get` answers
 * undefined, `findTagged` leaves it out); a name already taken is `invalid`.
 */
export interface BootstrapSecrets {
  create(spec: BootstrapSecretSpec, options: CreateOptions): Promise<BootstrapSecretInfo>;
  /** The secret, or undefined once it expired or was deleted. */
  get(id: string): Promise<BootstrapSecretInfo | undefined>;
  /** Secrets carrying every given tag. */
  findTagged(tags: Tags): Promise<BootstrapSecretInfo[]>;
  /** Deletes a secret; one already gone is a success. */
  delete(id: string): Promise<void>;
}

export interface Capabilities {
  catalogue: Catalogue;
  clusterInfrastructure: ClusterInfrastructure;
  machines: Machines;
  reservations: Reservations;
  dns: Dns;
  poolInfrastructure: PoolInfrastructure;
  bootstrapSecrets: BootstrapSecrets;
}

export type CapabilityName = keyof Capabilities;

/** What each capability is, for messages. */
export const CAPABILITY_DESCRIPTIONS: Record<CapabilityName, string> = {
  catalogue: "a catalogue (zones, machine types, images, quota)",
  clusterInfrastructure: "cluster infrastructure (network, subnet, security group, key pair, load balancer)",
  machines: "machines (instances and their console output)",
  reservations: "capacity reservations (machines held in a zone for a time window)",
  dns: "DNS (names in a zone of the connection, leading to load balancers or addresses)",
  poolInfrastructure: "pool infrastructure (scale sets: instances the cloud keeps at a desired count over zones)",
  bootstrapSecrets: "bootstrap secrets (read once by a booting machine, then deleted)",
};

/** An API server behind a control-plane endpoint that one of the provider's own machines serves. */
export interface EndpointMember {
  /** The member's instance id. */
  name: string;
  address: string;
  port: number;
}

/**
 * Where a cluster's API is reached when the provider has no load balancer to offer (hosts): one of its own
 * machines serves the endpoint in front of the control plane's API servers. The machine is reserved
 * before any user data is rendered (the endpoint is written into it), and the cluster's first control
 * plane (the one whose user data initialises the cluster) is placed on it.
 */
export interface ControlPlaneEndpoints {
  /** Reserves the machine serving the endpoint; the same token gets the same machine, whoever holds it now. */
  reserve(options: CreateOptions): Promise<{ id: string; host: string; port: number }>;
  /** Serves the endpoint `id` in front of `members` (only a change of members reloads it). */
  setMembers(id: string, members: EndpointMember[]): Promise<void>;
  /** Gives back a reservation no machine took; one a machine took goes with that machine (NotFound is success). */
  release(id: string, token: string): Promise<void>;
}

/** One connection's view of a cloud, or of a set of hosts. */
export interface Provider {
  readonly provider: string;
  readonly region: string;
  /** The capabilities it implements (rule 7); one it lacks is absent. */
  readonly capabilities: Partial<Capabilities>;
  /** Offered by a provider without cluster infrastructure whose machines serve the control-plane endpoint. */
  readonly endpoints?: ControlPlaneEndpoints;
}

/** The capabilities a provider declares, in a fixed order. */
export function capabilitiesOf(provider: Provider): CapabilityName[] {
  return (Object.keys(CAPABILITY_DESCRIPTIONS) as CapabilityName[]).filter((name) => provider.capabilities[name] !== undefined);
}

/** A controller needs capabilities that the provider of a connection does not implement. */
export class CapabilityMissingError extends Error {
  override readonly name = "CapabilityMissingError";
  /** The condition reason this failure is reported under. */
  readonly reason = "CapabilityMissing";
  constructor(
    readonly provider: string,
    readonly missing: CapabilityName[],
    readonly offered: CapabilityName[],
    where = "",
  ) {
    const lacks = missing.map((name) => CAPABILITY_DESCRIPTIONS[name]).join(" nor ");
    super(`${where ? `${where}: ` : ""}provider "${provider}" does not offer ${lacks} (it offers: ${offered.join(", ") || "nothing"})`);
  }
}

/** Checks that a provider implements every capability in `needed`; CapabilityMissingError names those it lacks. */
export function requireCapabilities(provider: Provider, needed: readonly CapabilityName[], where?: string): void {
  const missing = needed.filter((name) => provider.capabilities[name] === undefined);
  if (missing.length > 0) throw new CapabilityMissingError(provider.provider, missing, capabilitiesOf(provider), where);
}

/** The capability a controller needs; CapabilityMissingError when the provider lacks it. */
export function capabilityOf<C extends CapabilityName>(provider: Provider, capability: C, where?: string): Capabilities[C] {
  requireCapabilities(provider, [capability], where);
  return provider.capabilities[capability] as Capabilities[C];
}

/** What a Connection resolves to before a provider is opened. */
export interface ConnectionTarget {
  /** namespace/name of the Connection, for messages. */
  name: string;
  provider: string;
  region: string;
  endpoint?: string;
  /** Keys of the Connection's credentials Secret. */
  credentials?: Record<string, string>;
}

/** A provider as installed: its name, and how a Connection is opened with it (see `index.ts`). */
export interface ProviderFactory {
  readonly name: string;
  open(target: ConnectionTarget): Provider;
}

// ---- errors ----

export type ProviderErrorKind = "transient" | "throttled" | "quota" | "capacity" | "invalid" | "permission" | "notFound" | "dependency";

export class ProviderError extends Error {
  override name = "ProviderError";
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
    readonly options: { retryAfterMs?: number; code?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }

  /** Worth retrying unchanged, after `retryAfterMs` when the cloud said so. */
  get retryable(): boolean {
    return this.kind === "transient" || this.kind === "throttled" || this.kind === "capacity" || this.kind === "dependency";
  }

  get retryAfterMs(): number | undefined {
    return this.options.retryAfterMs;
  }

  /** The cloud's own error code, if it had one. */
  get code(): string | undefined {
    return this.options.code;
  }
}

export function isProviderError(e: unknown, kind?: ProviderErrorKind): e is ProviderError {
  return e instanceof ProviderError && (kind === undefined || e.kind === kind);
}
