// The public shape of the sim cloud: what its resources look like and the operations of `CloudApi`, which
// both the in-process `SimCloud` and the HTTP `SimCloudClient` implement, so callers use either unchanged.
// The operations on resources are derived from the registered kinds (services.ts): create<Kind>,
// get<Kind>, list<Kinds>, delete<Kind> and each kind's actions.
import type { ResourcesApi, ViewOf } from "./resource-kinds.ts";
import type { BuiltinResources } from "./services.ts";
import type { Listener, ResourceFilter, SecurityGroupRule, Tags } from "./schemas.ts";

export type {
  CreateInstanceInput,
  CreateKeyPairInput,
  CreateLoadBalancerInput,
  CreateNetworkInput,
  CreatePublicIpInput,
  CreateSecurityGroupInput,
  CreateSubnetInput,
  ListFilter,
  Listener,
  ResourceFilter,
  SecurityGroupRule,
  Tags,
} from "./schemas.ts";

export interface Region {
  name: string;
  displayName: string;
  zones: string[];
  /** On-demand prices in US dollars per hour of what is billed besides machines. */
  prices: RegionPrices;
  /**
   * How long operations take here on average, in real milliseconds (the latency profile's means times
   * the time scale), so that a client can estimate how long its work will take.
   */
  expectedDurationsMs?: ExpectedDurations;
}

export interface RegionPrices {
  loadBalancerHourly: number;
  publicIpHourly: number;
}

export interface ExpectedDurations {
  networkCreate: number;
  subnetCreate: number;
  securityGroupCreate: number;
  loadBalancerProvision: number;
  targetHealthy: number;
  instanceBoot: number;
  kubeadmInit: number;
  kubeadmJoin: number;
}

export interface Zone {
  name: string;
  region: string;
  state: "available";
}

export interface MachineType {
  name: string;
  family: "general" | "memory";
  vcpus: number;
  memoryMiB: number;
  /** On-demand price in US dollars per hour in this region. */
  hourlyPrice: number;
}

export interface Image {
  id: string;
  name: string;
  region: string;
  os: "ubuntu";
  version: string;
  architecture: "x86_64";
  /**
   * Set on images that carry a Kubernetes node's software: kubelet, kubeadm and kubectl of `version`
   * (v1.MINOR.PATCH), the container runtime named (e.g. containerd://1.7.22), swap off and IP forwarding
   * on. Plain images carry none of it: user data must install it.
   */
  kubernetes?: { version: string; containerRuntime: string };
}

/** The kinds of resource the cloud offers (as registered in services.ts). */
export type ResourceKind = BuiltinResources[number]["kind"];

/** Fields every resource has. `state` "deleted" is only seen when an idempotency token outlives its resource. */
export interface ResourceBase {
  id: string;
  kind: ResourceKind;
  account: string;
  region: string;
  tags: Tags;
  createdAt: string;
}

export interface Network extends ResourceBase {
  kind: "network";
  state: "pending" | "available" | "deleted";
  cidr: string;
}

export interface Subnet extends ResourceBase {
  kind: "subnet";
  state: "pending" | "available" | "deleted";
  networkId: string;
  zone: string;
  cidr: string;
  /** Addresses left for instances (five per subnet are reserved, as on public clouds). */
  availableIpCount: number;
}

export interface SecurityGroup extends ResourceBase {
  kind: "securityGroup";
  state: "pending" | "available" | "deleted";
  networkId: string;
  name: string;
  description: string;
  rules: SecurityGroupRule[];
}

export interface KeyPair extends ResourceBase {
  kind: "keyPair";
  state: "available" | "deleted";
  name: string;
  publicKey: string;
  /** OpenSSH-style fingerprint: "SHA256:" and the unpadded base64 SHA-256 of the key blob. */
  fingerprint: string;
}

/** pending → running → stopping → stopped (stop) or terminated (terminate); stopped → pending (start). */
export type InstanceState = "pending" | "running" | "stopping" | "stopped" | "terminated";

export interface StateReason {
  /** e.g. "UserInitiatedShutdown", "BootFailed", "InstanceFailure", "AdminKilled". */
  code: string;
  message: string;
}

export interface Instance extends ResourceBase {
  kind: "instance";
  state: InstanceState;
  /** Why the instance last stopped or terminated. */
  stateReason?: StateReason;
  zone: string;
  networkId: string;
  subnetId: string;
  machineType: string;
  vcpus: number;
  memoryMiB: number;
  imageId: string;
  keyPairId?: string;
  securityGroupIds: string[];
  privateIp: string;
  publicIp?: string;
  /** The public IP resource associated at launch, if any. */
  publicIpId?: string;
  /** The capacity reservation it was launched into, if any (it ends with the reservation). */
  reservationId?: string;
  /** SHA-256 of the user data (the data itself only through getInstanceUserData). */
  userDataSha256?: string;
  /** When the instance last reached running. */
  launchedAt?: string;
  terminatedAt?: string;
  /** What the instance printed while booting (cloud-init style lines). */
  bootLog: string[];
}

export type TargetHealthState = "initial" | "healthy" | "unhealthy" | "unused";

export interface LoadBalancerTarget {
  instanceId: string;
  health: TargetHealthState;
  /** Why the target is not healthy, e.g. "Target.NotRunning", "Elb.InitialHealthChecking". */
  reason?: string;
  registeredAt: string;
}

export interface LoadBalancer extends ResourceBase {
  kind: "loadBalancer";
  state: "provisioning" | "active" | "deleting" | "deleted";
  name: string;
  scheme: "internet-facing" | "internal";
  networkId: string;
  subnetIds: string[];
  listeners: Listener[];
  targets: LoadBalancerTarget[];
  dnsName: string;
  /** Where clients connect: the DNS name unless a workload emulator published another endpoint. */
  host: string;
  /** The first listener's port unless a workload emulator published another endpoint. */
  port: number;
  /** A path prefix under host:port, when a workload emulator serves several APIs on one port. */
  path?: string;
}

export interface PublicIp extends ResourceBase {
  kind: "publicIp";
  state: "available" | "in-use" | "deleted";
  /** An address from a documentation range (never contacted). */
  address: string;
  instanceId?: string;
}

/** The view of any resource. */
export type CloudResource = ViewOf<BuiltinResources[number]>;

export interface QuotaLimits {
  vcpus: number;
  instances: number;
  networks: number;
  loadBalancers: number;
  publicIps: number;
}

export interface Quota {
  account: string;
  region: string;
  limits: QuotaLimits;
  usage: QuotaLimits;
}

/** The operations of the cloud that are not about one kind of resource. */
export interface CatalogApi {
  /** Lists the regions with their zones. */
  describeRegions(): Promise<Region[]>;
  /** Lists the zones of a region. */
  describeZones(region: string): Promise<Zone[]>;
  /** Lists the machine types offered in a region, with prices. */
  describeMachineTypes(region: string): Promise<MachineType[]>;
  /** Lists the images of a region (ids differ per region). */
  describeImages(region: string): Promise<Image[]>;
  /** Returns the account's limits and current usage in a region (for pre-flight checks). */
  getQuota(region: string): Promise<Quota>;
  /** Lists every resource of the account (all regions unless filtered), e.g. to find what a tag left. */
  listResources(filter?: ResourceFilter): Promise<CloudResource[]>;
  /**
   * The account's instance state changes in a region after `after` (a cursor of an earlier answer, with
   * its epoch); without one, the current cursor and no changes (instance-events.ts).
   */
  describeInstanceEvents(region: string, after?: number, epoch?: string): Promise<InstanceEvents>;
}

/** One change of an instance's state ("gone" once its record is removed). */
export interface InstanceEvent {
  instanceId: string;
  state: string;
}

export interface InstanceEvents {
  /** The feed's start: a cursor is only meaningful with the epoch it came with. */
  epoch: string;
  /** Ask for what follows this next time. */
  cursor: number;
  events: InstanceEvent[];
  /** The cursor asked from could not be answered (too old, or from an earlier start): look at every instance again. */
  reset: boolean;
}

/**
 * The operations of the cloud for one account: the catalogue's, and those of every registered kind of
 * resource (createNetwork, getNetwork, listNetworks, deleteNetwork, …, stopInstance, registerTargets, …; see
 * each kind's descriptor). Creates return at once with a pending state; transitions happen later. Every
 * create accepts `clientToken`: the same token returns the same resource.
 */
export type CloudApi = CatalogApi & ResourcesApi<BuiltinResources>;
