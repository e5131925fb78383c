// The sim provider: one Connection's view of the sim cloud, through `CloudApi` exactly as a provider talks
// to a real cloud's API. It is the reference implementation of the rules in `../provider.ts`.
import { createHash } from "node:crypto";
import type * as Sim from "../../simcloud/types.ts";
import {
  ProviderError,
  type Capabilities,
  type Catalogue,
  type CloudEstimates,
  type ClusterInfrastructure,
  type CreateOptions,
  type FirewallRule,
  type ImageInfo,
  type MachineTypeInfo,
  type InstanceChanges,
  type Machines,
  type Provider,
  type QuotaReport,
  type ResourceInfos,
  type ResourceKind,
  type ResourceSpecs,
  type Tags,
} from "../provider.ts";
import { toProviderError } from "./errors.ts";
import { SimDns } from "./dns.ts";
import { SimPools } from "./pools.ts";
import { SimReservations } from "./reservations.ts";
import { SimBootstrapSecrets } from "./secrets.ts";
import { instanceInfo, loadBalancerInfo, plainInfo } from "./views.ts";

/** What the provider does with one kind of resource. */
interface KindOperations<K extends ResourceKind> {
  create(spec: ResourceSpecs[K], options: CreateOptions): Promise<ResourceInfos[K]>;
  get(id: string): Promise<ResourceInfos[K]>;
  list(tags: Tags): Promise<ResourceInfos[K][]>;
  delete(id: string): Promise<void>;
}

type OperationsByKind = { [K in ResourceKind]: KindOperations<K> };

const NOUN: Record<ResourceKind, string> = {
  network: "network",
  subnet: "subnet",
  securityGroup: "security group",
  keyPair: "key pair",
  loadBalancer: "load balancer",
  instance: "instance",
};

/** Load balancer names: letters, digits and dashes, at most 32 characters. */
const LB_NAME_MAX = 32;

/**
 * A name the cloud accepts for a load balancer: other characters become dashes, and a name too long keeps
 * its start and gets a hash of the whole, so that the same name always maps to the same cloud name.
 */
export function loadBalancerName(name: string): string {
  const cleaned = name.replace(/[^a-zA-Z0-9-]/g, "-");
  if (cleaned.length <= LB_NAME_MAX) return cleaned;
  const hash = createHash("sha256").update(name).digest("hex").slice(0, 8);
  return `${cleaned.slice(0, LB_NAME_MAX - 9).replace(/-+$/, "")}-${hash}`;
}

/** The sim cloud wants both ports of every rule; a rule without ports opens the whole range. */
function simRule(rule: FirewallRule): Sim.SecurityGroupRule {
  const fromPort = rule.fromPort ?? 0;
  const toPort = rule.toPort ?? (rule.fromPort === undefined ? 65535 : rule.fromPort);
  return { direction: rule.direction, protocol: rule.protocol, fromPort, toPort, cidr: rule.cidr };
}

function isNotFound(error: unknown): boolean {
  return error instanceof ProviderError && error.kind === "notFound";
}

/** An IaaS cloud: the sim provider implements every capability of the contract. */
export class SimProvider implements Provider, Catalogue, ClusterInfrastructure, Machines {
  readonly provider = "sim";
  readonly capabilities: Capabilities;
  private readonly operations: OperationsByKind;

  /**
   * @param api the cloud, for the Connection's account
   * @param region the Connection's region
   * @param connection namespace/name of the Connection, for messages
   * @param endpoint the cloud's URL when it is reached over HTTP (machines read their bootstrap secret there)
   */
  constructor(
    private readonly api: Sim.CloudApi,
    readonly region: string,
    private readonly connection = "",
    endpoint?: string,
  ) {
    this.operations = this.kindOperations();
    const reservations = new SimReservations(api, region, (what, run) => this.call(what, run));
    const dns = new SimDns(api, region, (what, run) => this.call(what, run));
    const poolInfrastructure = new SimPools(api, region, (what, run) => this.call(what, run));
    const bootstrapSecrets = new SimBootstrapSecrets(api, region, (what, run) => this.call(what, run), endpoint);
    this.capabilities = { catalogue: this, clusterInfrastructure: this, machines: this, reservations, dns, poolInfrastructure, bootstrapSecrets };
  }

  /** Runs one cloud call; any failure becomes a classified ProviderError saying what was attempted. */
  private async call<R>(what: string, run: () => Promise<R>): Promise<R> {
    try {
      return await run();
    } catch (error) {
      const where = this.connection ? ` (connection ${this.connection})` : "";
      throw toProviderError(error, `${what} in sim region ${this.region}${where}`);
    }
  }

  /** Deletes, treating NotFound as success (rule 3). */
  private async deleteQuietly(kind: ResourceKind, id: string, run: () => Promise<unknown>): Promise<void> {
    try {
      await this.call(`delete ${NOUN[kind]} ${id}`, run);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  /** The subnet an instance or load balancer is placed in, to check it matches the rest of the spec. */
  private async subnet(id: string, purpose: string): Promise<Sim.Subnet> {
    return this.call(`${purpose}: look up subnet ${id}`, () => this.api.getSubnet(this.region, id));
  }

  private invalid(message: string): ProviderError {
    return new ProviderError("invalid", `${message} in sim region ${this.region}`);
  }

  private kindOperations(): OperationsByKind {
    const { api, region } = this;
    return {
      network: {
        create: (spec, { token, tags }) =>
          this.call("create network", () => api.createNetwork(region, { cidr: spec.cidr, tags, clientToken: token })).then((r) =>
            plainInfo("network", r),
          ),
        get: (id) => this.call(`get network ${id}`, () => api.getNetwork(region, id)).then((r) => plainInfo("network", r)),
        list: (tags) => this.call("list networks", () => api.listNetworks(region, { tags })).then((rs) => rs.map((r) => plainInfo("network", r))),
        delete: (id) => this.deleteQuietly("network", id, () => api.deleteNetwork(region, id)),
      },
      subnet: {
        create: (spec, { token, tags }) =>
          this.call("create subnet", () =>
            api.createSubnet(region, { networkId: spec.networkId, zone: spec.zone, cidr: spec.cidr, tags, clientToken: token }),
          ).then((r) => plainInfo("subnet", r)),
        get: (id) => this.call(`get subnet ${id}`, () => api.getSubnet(region, id)).then((r) => plainInfo("subnet", r)),
        list: (tags) => this.call("list subnets", () => api.listSubnets(region, { tags })).then((rs) => rs.map((r) => plainInfo("subnet", r))),
        delete: (id) => this.deleteQuietly("subnet", id, () => api.deleteSubnet(region, id)),
      },
      securityGroup: {
        create: (spec, { token, tags }) =>
          this.call("create security group", () =>
            api.createSecurityGroup(region, {
              networkId: spec.networkId,
              name: spec.name,
              description: spec.description,
              rules: spec.rules.map(simRule),
              tags,
              clientToken: token,
            }),
          ).then((r) => plainInfo("securityGroup", r)),
        get: (id) => this.call(`get security group ${id}`, () => api.getSecurityGroup(region, id)).then((r) => plainInfo("securityGroup", r)),
        list: (tags) =>
          this.call("list security groups", () => api.listSecurityGroups(region, { tags })).then((rs) => rs.map((r) => plainInfo("securityGroup", r))),
        delete: (id) => this.deleteQuietly("securityGroup", id, () => api.deleteSecurityGroup(region, id)),
      },
      keyPair: {
        create: (spec, { token, tags }) =>
          this.call("create key pair", () =>
            api.createKeyPair(region, { name: spec.name, publicKey: spec.publicKey, tags, clientToken: token }),
          ).then((r) => plainInfo("keyPair", r)),
        get: (id) => this.call(`get key pair ${id}`, () => api.getKeyPair(region, id)).then((r) => plainInfo("keyPair", r)),
        list: (tags) => this.call("list key pairs", () => api.listKeyPairs(region, { tags })).then((rs) => rs.map((r) => plainInfo("keyPair", r))),
        delete: (id) => this.deleteQuietly("keyPair", id, () => api.deleteKeyPair(region, id)),
      },
      loadBalancer: {
        create: async (spec, { token, tags }) => {
          const first = spec.subnetIds[0];
          if (first !== undefined) {
            const subnet = await this.subnet(first, "create load balancer");
            if (subnet.networkId !== spec.networkId) {
              throw this.invalid(`load balancer ${spec.name}: subnet ${first} belongs to network ${subnet.networkId}, not ${spec.networkId}`);
            }
          }
          const created = await this.call("create load balancer", () =>
            api.createLoadBalancer(region, {
              name: loadBalancerName(spec.name),
              subnetIds: spec.subnetIds,
              listeners: spec.listeners.map((l) => ({ port: l.port, targetPort: l.targetPort, protocol: "tcp" as const })),
              ...(spec.internal ? { scheme: "internal" as const } : {}),
              tags,
              clientToken: token,
            }),
          );
          return loadBalancerInfo(created);
        },
        get: (id) => this.call(`get load balancer ${id}`, () => api.getLoadBalancer(region, id)).then(loadBalancerInfo),
        list: (tags) => this.call("list load balancers", () => api.listLoadBalancers(region, { tags })).then((rs) => rs.map(loadBalancerInfo)),
        delete: (id) => this.deleteQuietly("loadBalancer", id, () => api.deleteLoadBalancer(region, id)),
      },
      instance: {
        create: async (spec, { token, tags }) => {
          const placement = spec.placement;
          if (!placement) throw this.invalid("instance: a placement (subnet and security groups) is required");
          const subnet = await this.subnet(placement.subnetId, "create instance");
          if (subnet.zone !== spec.zone) {
            throw this.invalid(`instance: subnet ${placement.subnetId} is in zone ${subnet.zone}, not ${spec.zone}`);
          }
          const created = await this.call("create instance", () =>
            api.createInstance(region, {
              subnetId: placement.subnetId,
              machineType: spec.machineType,
              imageId: spec.imageId,
              securityGroupIds: placement.securityGroupIds,
              userData: spec.userData,
              ...(placement.keyPairId === undefined ? {} : { keyPairId: placement.keyPairId }),
              ...(placement.publicIp ? { assignPublicIp: true } : {}),
              ...(spec.reservationId === undefined ? {} : { reservationId: spec.reservationId }),
              tags,
              clientToken: token,
            }),
          );
          return instanceInfo(created);
        },
        get: (id) => this.call(`get instance ${id}`, () => api.getInstance(region, id)).then(instanceInfo),
        list: (tags) => this.call("list instances", () => api.listInstances(region, { tags })).then((rs) => rs.map(instanceInfo)),
        // Deleting an instance is terminating it; terminating one already terminating is a no-op.
        delete: (id) => this.deleteQuietly("instance", id, () => api.terminateInstance(region, id)),
      },
    };
  }

  /** The cloud refuses an unknown region as an invalid parameter, and its message names the region. */
  async zones(): Promise<string[]> {
    const zones = await this.call("describe zones", () => this.api.describeZones(this.region));
    return zones.map((z) => z.name);
  }

  async machineTypes(): Promise<MachineTypeInfo[]> {
    const types = await this.call("describe machine types", () => this.api.describeMachineTypes(this.region));
    return types.map((t) => ({ name: t.name, vcpus: t.vcpus, memoryMiB: t.memoryMiB, hourlyPrice: t.hourlyPrice }));
  }

  async images(): Promise<ImageInfo[]> {
    const images = await this.call("describe images", () => this.api.describeImages(this.region));
    return images.map((i) => ({ id: i.id, name: i.name }));
  }

  /** The region's published prices and the cloud's usual durations (its latency profile's means). */
  async estimates(): Promise<CloudEstimates> {
    const regions = await this.call("describe regions", () => this.api.describeRegions());
    const region = regions.find((r) => r.name === this.region);
    if (!region) throw this.invalid(`unknown region "${this.region}" (known: ${regions.map((r) => r.name).join(", ")})`);
    return { prices: { ...region.prices }, durationsMs: { ...region.expectedDurationsMs } };
  }

  async quota(): Promise<QuotaReport> {
    const quota = await this.call("get quota", () => this.api.getQuota(this.region));
    return { limits: { ...quota.limits }, usage: { ...quota.usage } };
  }

  create<K extends ResourceKind>(kind: K, spec: ResourceSpecs[K], options: CreateOptions): Promise<ResourceInfos[K]> {
    return this.operations[kind].create(spec, options);
  }

  async get<K extends ResourceKind>(kind: K, id: string): Promise<ResourceInfos[K] | undefined> {
    try {
      return await this.operations[kind].get(id);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Resources carrying every tag that still exist: terminated instances the cloud still shows are left out. */
  async findTagged<K extends ResourceKind>(kind: K, tags: Tags): Promise<ResourceInfos[K][]> {
    const found = await this.operations[kind].list(tags);
    return found.filter((r) => r.state !== "gone");
  }

  delete(kind: ResourceKind, id: string): Promise<void> {
    return this.operations[kind].delete(id);
  }

  async registerTargets(loadBalancerId: string, instanceIds: string[]): Promise<void> {
    if (instanceIds.length === 0) return;
    await this.call(`register targets with load balancer ${loadBalancerId}`, () =>
      this.api.registerTargets(this.region, loadBalancerId, instanceIds),
    );
  }

  async firewallRules(securityGroupId: string): Promise<FirewallRule[]> {
    const group = await this.call(`get security group ${securityGroupId}`, () => this.api.getSecurityGroup(this.region, securityGroupId));
    return group.rules.map((rule) => ({ ...rule }));
  }

  async setFirewallRules(securityGroupId: string, rules: FirewallRule[]): Promise<void> {
    await this.call(`set the rules of security group ${securityGroupId}`, () => this.api.setSecurityGroupRules(this.region, securityGroupId, rules.map(simRule)));
  }

  async deregisterTargets(loadBalancerId: string, instanceIds: string[]): Promise<void> {
    if (instanceIds.length === 0) return;
    try {
      await this.call(`deregister targets from load balancer ${loadBalancerId}`, () =>
        this.api.deregisterTargets(this.region, loadBalancerId, instanceIds),
      );
    } catch (error) {
      // A load balancer that is gone has no targets left to remove.
      if (!isNotFound(error)) throw error;
    }
  }

  async instanceChanges(cursor?: string): Promise<InstanceChanges> {
    const [epoch, after] = cursor === undefined ? [] : [cursor.slice(0, cursor.lastIndexOf(":")), Number(cursor.slice(cursor.lastIndexOf(":") + 1))];
    const answer = await this.call("read the instance state changes", () => this.api.describeInstanceEvents(this.region, after, epoch));
    const next = `${answer.epoch}:${answer.cursor}`;
    if (answer.reset) return { cursor: next, changed: "all" };
    return { cursor: next, changed: [...new Set(answer.events.map((e) => e.instanceId))] };
  }

  async consoleOutput(instanceId: string): Promise<string[]> {
    const instance = await this.call(`read the console of instance ${instanceId}`, () => this.api.getInstance(this.region, instanceId));
    return [...instance.bootLog];
  }
}
