// What the sim cloud stores per resource: the public view plus internal fields (the pending transition,
// user data, the boot plan), which never leave the cloud. Views are made by dropping the internal fields.
import type {
  Instance,
  KeyPair,
  LoadBalancer,
  Network,
  PublicIp,
  ResourceKind,
  SecurityGroup,
  Subnet,
} from "./types.ts";

/** A state change due at a moment (epoch milliseconds); at most one per resource. Survives restarts. */
export interface Transition {
  action: "available" | "boot" | "stopped" | "terminated" | "die" | "purge" | "active" | "gone";
  at: number;
}

interface Internal {
  transition?: Transition;
}

export type NetworkRecord = Network & Internal;
export type SecurityGroupRecord = SecurityGroup & Internal;
export type KeyPairRecord = KeyPair & Internal;
export type PublicIpRecord = PublicIp & Internal;
/** Subnets store no free-address count: it is derived from the instances in them. */
export type SubnetRecord = Omit<Subnet, "availableIpCount"> & Internal;

export interface InstanceRecord extends Instance, Internal {
  userData: string;
  /** Boots so far (the user data's one-time steps run on the first). */
  bootCount: number;
  /** Epoch ms of the last transition to running. */
  runningSince?: number;
  /** Drawn at launch or start: how much slower this boot is, and when the instance dies once running. */
  slowFactor: number;
  dieAfterMs?: number;
  /** True when the public address belongs to the instance and goes with it. */
  ephemeralPublicIp: boolean;
}

export interface RegisteredTarget {
  instanceId: string;
  registeredAt: string;
  /** Real milliseconds of passing health checks a running target needs before it counts as healthy. */
  healthCheckMs: number;
}

/** Target health is derived on read from the instances and the clock. */
export interface LoadBalancerRecord extends Omit<LoadBalancer, "targets">, Internal {
  targets: RegisteredTarget[];
}

export interface RecordOfKind {
  network: NetworkRecord;
  subnet: SubnetRecord;
  securityGroup: SecurityGroupRecord;
  keyPair: KeyPairRecord;
  instance: InstanceRecord;
  loadBalancer: LoadBalancerRecord;
  publicIp: PublicIpRecord;
}

export type ResourceRecord = RecordOfKind[ResourceKind];

/** Id prefixes, as public clouds write them. */
export const ID_PREFIX: Record<ResourceKind, string> = {
  network: "vpc",
  subnet: "subnet",
  securityGroup: "sg",
  keyPair: "key",
  instance: "i",
  loadBalancer: "lb",
  publicIp: "eip",
};

/** Human names of the kinds, for messages. */
export const KIND_NOUN: Record<ResourceKind, string> = {
  network: "network",
  subnet: "subnet",
  securityGroup: "security group",
  keyPair: "key pair",
  instance: "instance",
  loadBalancer: "load balancer",
  publicIp: "public IP",
};
