// Networks, subnets and security groups: created pending, available after the profile's delay; deleted at
// once, but only when nothing uses them any more.
import { checkRegion, checkZone } from "./catalog.ts";
import type { CloudCore } from "./core.ts";
import { InvalidParameterError } from "./errors.ts";
import { contains, overlaps, parseCidr } from "./ipam.ts";
import { findOwned, listOwned, requireReady, requireUnused } from "./lookup.ts";
import type { NetworkRecord, ResourceRecord, SecurityGroupRecord, SubnetRecord } from "./records.ts";
import {
  CreateNetworkInputSchema,
  CreateSecurityGroupInputSchema,
  CreateSubnetInputSchema,
  checkInput,
  type CreateNetworkInput,
  type CreateSecurityGroupInput,
  type CreateSubnetInput,
} from "./schemas.ts";
import type { Network, SecurityGroup, Subnet } from "./types.ts";
import { subnetView, viewOf } from "./views.ts";

function checkPrefix(cidr: string, field: string): void {
  const { prefix } = parseCidr(cidr, field);
  if (prefix < 16 || prefix > 28) {
    throw new InvalidParameterError(`${field}: "${cidr}" must be between /16 and /28`, { details: { field } });
  }
}

export class NetworkService {
  constructor(private readonly core: CloudCore) {
    const becomeAvailable = (record: ResourceRecord) => {
      if (record.kind !== "network" && record.kind !== "subnet" && record.kind !== "securityGroup") return;
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

  createNetwork(account: string, region: string, raw: CreateNetworkInput): Network {
    checkRegion(region);
    const input = checkInput(CreateNetworkInputSchema, raw, "network");
    checkPrefix(input.cidr, "network.cidr");
    return this.core.createOnce(account, "network", region, input, (r) => viewOf(this.core, r) as Network, () => {
      this.core.quotas.requireRoom(account, region, { networks: 1 });
      const record: NetworkRecord = {
        id: this.core.newId("network"),
        kind: "network",
        account,
        region,
        tags: { ...input.tags },
        createdAt: this.core.iso(),
        state: "pending",
        cidr: input.cidr,
      };
      this.core.schedule(record, "available", this.core.sampleDelay("networkCreate"));
      return record;
    });
  }

  deleteNetwork(account: string, region: string, id: string): void {
    const network = findOwned(this.core, account, region, "network", id);
    const inNetwork = (r: { networkId: string }) => r.networkId === id;
    requireUnused(network, [
      ...this.core.state.all("subnet").filter(inNetwork),
      ...this.core.state.all("securityGroup").filter(inNetwork),
      ...this.core.state.all("loadBalancer").filter(inNetwork),
      ...this.core.state.all("instance").filter((i) => inNetwork(i) && i.state !== "terminated"),
    ]);
    this.remove(network);
  }

  createSubnet(account: string, region: string, raw: CreateSubnetInput): Subnet {
    checkRegion(region);
    const input = checkInput(CreateSubnetInputSchema, raw, "subnet");
    return this.core.createOnce(account, "subnet", region, input, (r) => subnetView(this.core, r), () => {
      const network = findOwned(this.core, account, region, "network", input.networkId);
      requireReady(network);
      checkZone(region, input.zone);
      checkPrefix(input.cidr, "subnet.cidr");
      const cidr = parseCidr(input.cidr, "subnet.cidr");
      if (!contains(parseCidr(network.cidr), cidr)) {
        throw new InvalidParameterError(`subnet.cidr: ${input.cidr} is not inside the network's ${network.cidr}`, {
          details: { field: "subnet.cidr" },
        });
      }
      const clash = this.core.state
        .all("subnet")
        .find((s) => s.networkId === network.id && overlaps(parseCidr(s.cidr), cidr));
      if (clash) {
        throw new InvalidParameterError(`subnet.cidr: ${input.cidr} overlaps subnet ${clash.id} (${clash.cidr})`, {
          details: { field: "subnet.cidr" },
        });
      }
      const record: SubnetRecord = {
        id: this.core.newId("subnet"),
        kind: "subnet",
        account,
        region,
        tags: { ...input.tags },
        createdAt: this.core.iso(),
        state: "pending",
        networkId: network.id,
        zone: input.zone,
        cidr: input.cidr,
      };
      this.core.schedule(record, "available", this.core.sampleDelay("subnetCreate"));
      return record;
    });
  }

  deleteSubnet(account: string, region: string, id: string): void {
    const subnet = findOwned(this.core, account, region, "subnet", id);
    requireUnused(subnet, [
      ...this.core.state.all("instance").filter((i) => i.subnetId === id && i.state !== "terminated"),
      ...this.core.state.all("loadBalancer").filter((lb) => lb.subnetIds.includes(id)),
    ]);
    this.remove(subnet);
  }

  createSecurityGroup(account: string, region: string, raw: CreateSecurityGroupInput): SecurityGroup {
    checkRegion(region);
    const input = checkInput(CreateSecurityGroupInputSchema, raw, "securityGroup");
    input.rules.forEach((rule, index) => {
      parseCidr(rule.cidr, `securityGroup.rules.${index}.cidr`);
      if (rule.fromPort > rule.toPort) {
        throw new InvalidParameterError(`securityGroup.rules.${index}: fromPort ${rule.fromPort} is above toPort ${rule.toPort}`, {
          details: { field: `securityGroup.rules.${index}.fromPort` },
        });
      }
    });
    const view = (r: SecurityGroupRecord) => viewOf(this.core, r) as SecurityGroup;
    return this.core.createOnce(account, "securityGroup", region, input, view, () => {
      const network = findOwned(this.core, account, region, "network", input.networkId);
      requireReady(network);
      const sameName = listOwned(this.core, account, region, "securityGroup").find(
        (sg) => sg.networkId === network.id && sg.name === input.name,
      );
      if (sameName) {
        throw new InvalidParameterError(`securityGroup.name: "${input.name}" already exists in ${network.id} (${sameName.id})`, {
          details: { field: "securityGroup.name" },
        });
      }
      const record: SecurityGroupRecord = {
        id: this.core.newId("securityGroup"),
        kind: "securityGroup",
        account,
        region,
        tags: { ...input.tags },
        createdAt: this.core.iso(),
        state: "pending",
        networkId: network.id,
        name: input.name,
        description: input.description ?? "",
        rules: structuredClone(input.rules),
      };
      this.core.schedule(record, "available", this.core.sampleDelay("securityGroupCreate"));
      return record;
    });
  }

  deleteSecurityGroup(account: string, region: string, id: string): void {
    const group = findOwned(this.core, account, region, "securityGroup", id);
    requireUnused(
      group,
      this.core.state.all("instance").filter((i) => i.securityGroupIds.includes(id) && i.state !== "terminated"),
    );
    this.remove(group);
  }
}
