// What the sim cloud stores per resource: the public view plus internal fields (the pending transition,
// user data, the boot plan), which never leave the cloud. Views are made by dropping the internal fields.
import type { RecordOf, StoredResource } from "./resource-kinds.ts";
import type { BuiltinResources } from "./services.ts";
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
export interface Transition<A extends string = string> {
  action: A;
  at: number;
}

/** The fields a record has beyond its view; `A` names the transitions its kind schedules. */
interface Internal<A extends string = never> {
  transition?: Transition<A>;
}

export type NetworkRecord = Network & Internal<"available">;
export type SecurityGroupRecord = SecurityGroup & Internal<"available">;
export type KeyPairRecord = KeyPair & Internal;
export type PublicIpRecord = PublicIp & Internal;
/** Subnets store no free-address count: it is derived from the instances in them. */
export type SubnetRecord = Omit<Subnet, "availableIpCount"> & Internal<"available">;

export interface InstanceRecord extends Instance, Internal<"boot" | "stopped" | "terminated" | "die" | "purge"> {
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
export interface LoadBalancerRecord extends Omit<LoadBalancer, "targets">, Internal<"active" | "gone"> {
  targets: RegisteredTarget[];
}

/** The stored record of each registered kind. */
export type RecordOfKind = { [D in BuiltinResources[number] as D["kind"]]: RecordOf<D> };

export type ResourceRecord = RecordOfKind[ResourceKind];

/** The record of a kind: typed for the registered kinds, the common fields for any other. */
export type RecordFor<K extends string> = K extends ResourceKind ? RecordOfKind[K] : StoredResource<K>;

/** The transitions a record's kind schedules. */
export type TransitionAction<R extends StoredResource> = NonNullable<R["transition"]>["action"];
