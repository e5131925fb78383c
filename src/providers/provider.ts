// The provider contract: what Slipway needs from a cloud, and the rules every provider keeps.
//
// A provider is opened for one Connection (an account in one region) and builds what clusters need:
// networks, subnets, security groups, key pairs, load balancers and instances.
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
//  6. never return or log user data, private keys or credentials.
// `conformance.ts` holds every provider to these rules; the `sim` provider is the reference.

export type ResourceKind = "network" | "subnet" | "securityGroup" | "keyPair" | "loadBalancer" | "instance";

export type ResourceState = "pending" | "ready" | "failed" | "deleting" | "gone";

export type Tags = Record<string, string>;

export interface FirewallRule {
  direction: "ingress" | "egress";
  protocol: "tcp" | "udp" | "icmp" | "all";
  fromPort?: number;
  toPort?: number;
  cidr: string;
}

/** What each kind of resource is created from. */
export interface ResourceSpecs {
  network: { cidr: string };
  subnet: { networkId: string; zone: string; cidr: string };
  securityGroup: { networkId: string; name: string; description: string; rules: FirewallRule[] };
  keyPair: { name: string; publicKey: string };
  loadBalancer: { name: string; networkId: string; subnetIds: string[]; listeners: { port: number; targetPort: number }[] };
  instance: {
    zone: string;
    subnetId: string;
    machineType: string;
    imageId: string;
    keyPairId?: string;
    securityGroupIds: string[];
    /** cloud-init user data; secret (it carries bootstrap credentials). */
    userData: string;
    publicIp?: boolean;
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

/** One connection's view of a cloud. */
export interface CloudProvider {
  readonly provider: string;
  readonly region: string;
  /** Zones of the region; fails with an `invalid` ProviderError when the region does not exist. */
  zones(): Promise<string[]>;
  machineTypes(): Promise<MachineTypeInfo[]>;
  images(): Promise<ImageInfo[]>;
  quota(): Promise<QuotaReport>;
  /** Prices and usual durations, for plans; a provider that publishes neither leaves it out. */
  estimates?(): Promise<CloudEstimates>;

  create<K extends ResourceKind>(kind: K, spec: ResourceSpecs[K], options: CreateOptions): Promise<ResourceInfos[K]>;
  /** The resource, or undefined when it does not exist (any more). */
  get<K extends ResourceKind>(kind: K, id: string): Promise<ResourceInfos[K] | undefined>;
  /** Resources carrying every given tag that still exist: none in state `gone`. */
  findTagged<K extends ResourceKind>(kind: K, tags: Tags): Promise<ResourceInfos[K][]>;
  delete(kind: ResourceKind, id: string): Promise<void>;

  registerTargets(loadBalancerId: string, instanceIds: string[]): Promise<void>;
  deregisterTargets(loadBalancerId: string, instanceIds: string[]): Promise<void>;
  /** What an instance printed while booting (cloud-init and kubeadm lines), for failure messages. */
  consoleOutput(instanceId: string): Promise<string[]>;
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

export interface ProviderFactory {
  readonly name: string;
  open(target: ConnectionTarget): CloudProvider;
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

// ---- the extension point ----

const factories = new Map<string, ProviderFactory>();

/** Providers register themselves here; adding a cloud touches only its own folder and this list. */
export function registerProvider(factory: ProviderFactory): void {
  factories.set(factory.name, factory);
}

export function providerFactory(name: string): ProviderFactory | undefined {
  return factories.get(name);
}

export function providerNames(): string[] {
  return [...factories.keys()].sort();
}
