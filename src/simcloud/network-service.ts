// Networks, subnets and security groups: created pending, available after the profile's delay; deleted at
// once, but only when nothing uses them any more.
import { checkZone } from "./catalog.ts";
import type { CloudCore } from "./core.ts";
import { InvalidParameterError } from "./errors.ts";
import { contains, overlaps, parseCidr } from "./ipam.ts";
import { findOwned, requireReady, requireUnused } from "./lookup.ts";
import { RecordIndex } from "./record-index.ts";
import type { NetworkRecord, SecurityGroupRecord, SubnetRecord } from "./records.ts";
import { action, defineResource } from "./resource-kinds.ts";
import {
  checkInput,
  CreateNetworkInputSchema,
  CreateSecurityGroupInputSchema,
  CreateSubnetInputSchema,
  type CreateNetworkInput,
  type CreateSecurityGroupInput,
  type CreateSubnetInput,
  SecurityGroupRulesSchema,
  type SecurityGroupRule,
} from "./schemas.ts";
import type { Network, SecurityGroup } from "./types.ts";
import { plainView, subnetView, viewOf } from "./views.ts";

function checkPrefix(cidr: string, field: string): void {
  const { prefix } = parseCidr(cidr, field);
  if (prefix < 16 || prefix > 28) {
    throw new InvalidParameterError(`${field}: "${cidr}" must be between /16 and /28`, { details: { field } });
  }
}

export class NetworkService {
  // What is built in a network or uses a subnet or group, kept current: a create or delete that walked
  // every resource of a kind instead made a cloud of ten thousand networks quadratic.
  private readonly subnetsIn: RecordIndex<"subnet">;
  private readonly groupsIn: RecordIndex<"securityGroup">;
  private readonly loadBalancersIn: RecordIndex<"loadBalancer">;
  private readonly loadBalancersOn: RecordIndex<"loadBalancer">;
  private readonly instancesIn: RecordIndex<"instance">;
  private readonly instancesWithGroup: RecordIndex<"instance">;

  constructor(private readonly core: CloudCore) {
    this.subnetsIn = new RecordIndex(core.state, "subnet", (s) => [s.networkId]);
    this.groupsIn = new RecordIndex(core.state, "securityGroup", (g) => [g.networkId]);
    this.loadBalancersIn = new RecordIndex(core.state, "loadBalancer", (lb) => [lb.networkId]);
    this.loadBalancersOn = new RecordIndex(core.state, "loadBalancer", (lb) => lb.subnetIds);
    this.instancesIn = new RecordIndex(core.state, "instance", (i) => (i.state === "terminated" ? [] : [i.networkId]));
    this.instancesWithGroup = new RecordIndex(core.state, "instance", (i) => (i.state === "terminated" ? [] : i.securityGroupIds));
    const becomeAvailable = (record: NetworkRecord | SubnetRecord | SecurityGroupRecord) => {
      core.cancelTransition(record);
      record.state = "available";
      core.write(() => core.state.put(record));
    };
    core.onTransition("network", becomeAvailable);
    core.onTransition("subnet", becomeAvailable);
    core.onTransition("securityGroup", becomeAvailable);
  }

  /** Removes a record now; idempotency tokens that named it answer its last view, marked deleted. */
  private remove(record: NetworkRecord | SubnetRecord | SecurityGroupRecord): void {
    this.core.write(() => {
      this.core.cancelTransition(record);
      this.core.state.remove(record.id, { ...viewOf(this.core, record), state: "deleted" });
    });
  }

  /** Makes a network (pending → available); runs once per idempotency token. */
  createNetwork(account: string, region: string, input: CreateNetworkInput): NetworkRecord {
    this.core.quotas.requireRoom(account, region, { networks: 1 });
    const record: NetworkRecord = {
      ...this.core.newRecord("network", account, region, input.tags),
      state: "pending",
      cidr: input.cidr,
    };
    this.core.schedule(record, "available", this.core.sampleDelay("networkCreate"));
    return record;
  }

  deleteNetwork(account: string, region: string, id: string): void {
    const network = findOwned(this.core, account, region, "network", id);
    requireUnused(this.core, network, [...this.subnetsIn.get(id), ...this.groupsIn.get(id), ...this.loadBalancersIn.get(id), ...this.instancesIn.get(id)]);
    this.remove(network);
  }

  /** Makes a subnet in a zone, inside its available network's range; runs once per idempotency token. */
  createSubnet(account: string, region: string, input: CreateSubnetInput): SubnetRecord {
    const network = findOwned(this.core, account, region, "network", input.networkId);
    requireReady(this.core, network);
    checkZone(region, input.zone);
    checkPrefix(input.cidr, "subnet.cidr");
    const cidr = parseCidr(input.cidr, "subnet.cidr");
    if (!contains(parseCidr(network.cidr), cidr)) {
      throw new InvalidParameterError(`subnet.cidr: ${input.cidr} is not inside the network's ${network.cidr}`, {
        details: { field: "subnet.cidr" },
      });
    }
    const clash = this.subnetsIn.get(network.id).find((s) => overlaps(parseCidr(s.cidr), cidr));
    if (clash) {
      throw new InvalidParameterError(`subnet.cidr: ${input.cidr} overlaps subnet ${clash.id} (${clash.cidr})`, {
        details: { field: "subnet.cidr" },
      });
    }
    const record: SubnetRecord = {
      ...this.core.newRecord("subnet", account, region, input.tags),
      state: "pending",
      networkId: network.id,
      zone: input.zone,
      cidr: input.cidr,
    };
    this.core.schedule(record, "available", this.core.sampleDelay("subnetCreate"));
    return record;
  }

  deleteSubnet(account: string, region: string, id: string): void {
    const subnet = findOwned(this.core, account, region, "subnet", id);
    requireUnused(this.core, subnet, [...this.core.instancesBySubnet.get(id), ...this.loadBalancersOn.get(id)]);
    this.remove(subnet);
  }

  /** Makes a security group with its rules in an available network; runs once per idempotency token. */
  createSecurityGroup(account: string, region: string, input: CreateSecurityGroupInput): SecurityGroupRecord {
    const network = findOwned(this.core, account, region, "network", input.networkId);
    requireReady(this.core, network);
    const sameName = this.groupsIn.get(network.id).find((sg) => sg.name === input.name);
    if (sameName) {
      throw new InvalidParameterError(`securityGroup.name: "${input.name}" already exists in ${network.id} (${sameName.id})`, {
        details: { field: "securityGroup.name" },
      });
    }
    const record: SecurityGroupRecord = {
      ...this.core.newRecord("securityGroup", account, region, input.tags),
      state: "pending",
      networkId: network.id,
      name: input.name,
      description: input.description ?? "",
      rules: structuredClone(input.rules),
    };
    this.core.schedule(record, "available", this.core.sampleDelay("securityGroupCreate"));
    return record;
  }

  /** Replaces a security group's rules; instances using it are filtered by the new ones at once. */
  setSecurityGroupRules(account: string, region: string, id: string, rules: SecurityGroupRule[]): SecurityGroup {
    const group = findOwned(this.core, account, region, "securityGroup", id);
    group.rules = structuredClone(rules);
    this.core.write(() => this.core.state.put(group));
    return plainView(group);
  }

  deleteSecurityGroup(account: string, region: string, id: string): void {
    const group = findOwned(this.core, account, region, "securityGroup", id);
    requireUnused(this.core, group, this.instancesWithGroup.get(id));
    this.remove(group);
  }
}

/** Checks of a security group's rules that need no other resource. */
function checkRules(input: { rules: SecurityGroupRule[] }): void {
  input.rules.forEach((rule, index) => {
    parseCidr(rule.cidr, `securityGroup.rules.${index}.cidr`);
    if (rule.fromPort > rule.toPort) {
      throw new InvalidParameterError(`securityGroup.rules.${index}: fromPort ${rule.fromPort} is above toPort ${rule.toPort}`, {
        details: { field: `securityGroup.rules.${index}.fromPort` },
      });
    }
  });
}

/** One service for the three kinds of the network. */
const networkService = (core: CloudCore) => new NetworkService(core);

export const networks = defineResource({
  kind: "network",
  noun: "network",
  names: { one: "Network", many: "Networks" },
  collection: "networks",
  idPrefix: "vpc",
  service: networkService,
  create: {
    input: CreateNetworkInputSchema,
    check: (input) => checkPrefix(input.cidr, "network.cidr"),
    build: (service, account, region, input) => service.createNetwork(account, region, input),
  },
  /** DependencyViolation while subnets, security groups, load balancers or live instances remain. */
  delete: { run: (service, account, region, id) => service.deleteNetwork(account, region, id) },
  view: (_core, record: NetworkRecord): Network => plainView(record),
  actions: {},
  quota: () => ({ networks: 1 }),
});

export const subnets = defineResource({
  kind: "subnet",
  noun: "subnet",
  names: { one: "Subnet", many: "Subnets" },
  collection: "subnets",
  idPrefix: "subnet",
  service: networkService,
  create: {
    input: CreateSubnetInputSchema,
    build: (service, account, region, input) => service.createSubnet(account, region, input),
  },
  /** DependencyViolation while instances or load balancers use it. */
  delete: { run: (service, account, region, id) => service.deleteSubnet(account, region, id) },
  view: subnetView,
  actions: {},
});

export const securityGroups = defineResource({
  kind: "securityGroup",
  noun: "security group",
  names: { one: "SecurityGroup", many: "SecurityGroups" },
  collection: "security-groups",
  idPrefix: "sg",
  service: networkService,
  create: {
    input: CreateSecurityGroupInputSchema,
    check: checkRules,
    build: (service, account, region, input) => service.createSecurityGroup(account, region, input),
  },
  /** DependencyViolation while an instance that is not terminated uses it. */
  delete: { run: (service, account, region, id) => service.deleteSecurityGroup(account, region, id) },
  view: (_core, record: SecurityGroupRecord): SecurityGroup => plainView(record),
  actions: {
    /** Replaces every rule (what `rules` lists is the whole new set). */
    setSecurityGroupRules: action({
      path: "rules",
      body: (rules: SecurityGroupRule[]) => ({ rules }),
      parse: (body: unknown): [SecurityGroupRule[]] => {
        const input = checkInput(SecurityGroupRulesSchema, body ?? {}, "securityGroup");
        checkRules(input);
        return [input.rules];
      },
      run: (service: NetworkService, account: string, region: string, id: string, rules: SecurityGroupRule[]) =>
        service.setSecurityGroupRules(account, region, id, rules),
    }),
  },
});
