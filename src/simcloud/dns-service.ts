// DNS: hosted zones and their records, as Route 53's private hosted zones keep them. A zone holds the names
// under its domain; each account sees its own zones (two accounts may each have a zone of the same name,
// one account only one), and the cloud's resolver answers an account's machines from that account's zones. An A record holds
// IPv4 addresses or is an alias of a load balancer (resolving to wherever the load balancer leads, as
// Route 53's alias records do); an SRV record holds "priority weight port target" values. A name has at
// most one record of a type. Records are available at once; a zone with records cannot be deleted.
import { isIPv4 } from "node:net";
import { Type, type Static } from "@sinclair/typebox";
import type { CloudCore } from "./core.ts";
import { InvalidParameterError } from "./errors.ts";
import { findOwned, requireUnused } from "./lookup.ts";
import { RecordIndex } from "./record-index.ts";
import { defineResource, type ResourceView } from "./resource-kinds.ts";
import { CreateCommon, Strict } from "./schemas.ts";
import { plainView, viewOf } from "./views.ts";

/** A DNS name: dot-separated labels of letters, digits and hyphens (an SRV label may start with _), no trailing dot. */
const DNS_NAME = "^(?=.{1,253}$)(_?[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\\._?[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$";

export const CreateDnsZoneInputSchema = Strict({
  name: Type.String({ pattern: DNS_NAME, description: "The zone's domain, e.g. eu-west-1.sim.slipway.internal." }),
  ...CreateCommon,
});
export type CreateDnsZoneInput = Static<typeof CreateDnsZoneInputSchema>;

export const DNS_RECORD_TYPES = ["A", "SRV"] as const;
export type DnsRecordType = (typeof DNS_RECORD_TYPES)[number];

export const CreateDnsRecordInputSchema = Strict({
  zoneId: Type.String({ minLength: 1, maxLength: 64 }),
  name: Type.String({ pattern: DNS_NAME, description: "The full name, inside the zone's domain." }),
  type: Type.Union(DNS_RECORD_TYPES.map((t) => Type.Literal(t))),
  values: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 300 }), { minItems: 1, maxItems: 20 })),
  /** An A record that resolves to a load balancer of the same account and region, instead of addresses. */
  aliasTarget: Type.Optional(Strict({ loadBalancerId: Type.String({ minLength: 1, maxLength: 64 }) })),
  ttl: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400 })),
  ...CreateCommon,
});
export type CreateDnsRecordInput = Static<typeof CreateDnsRecordInputSchema>;

export interface DnsZone extends ResourceView<"dnsZone"> {
  state: "available";
  name: string;
}

export interface DnsRecord extends ResourceView<"dnsRecord"> {
  state: "available";
  zoneId: string;
  name: string;
  type: DnsRecordType;
  values?: string[];
  aliasTarget?: { loadBalancerId: string };
  ttl: number;
}

export type DnsZoneRecord = DnsZone;
export type DnsRecordRecord = DnsRecord;

/** What a name resolves to: a load balancer (by its own DNS name) or addresses; nothing when no A record holds it. */
export type Resolution = { loadBalancer: string } | { addresses: string[] } | undefined;

function invalid(field: string, message: string): InvalidParameterError {
  return new InvalidParameterError(`${field}: ${message}`, { details: { field } });
}

/** "priority weight port target", as an SRV record's value is written. */
const SRV_VALUE = /^\d{1,5} \d{1,5} \d{1,5} \S+$/;

/** Checks of a record's input alone: values or alias as its type allows. */
function checkRecord(input: CreateDnsRecordInput): void {
  if (input.aliasTarget && input.values) throw invalid("dnsRecord.values", "give values or aliasTarget, not both");
  if (input.aliasTarget && input.type !== "A") throw invalid("dnsRecord.aliasTarget", `only an A record may be an alias, not ${input.type}`);
  if (!input.aliasTarget && !input.values) throw invalid("dnsRecord.values", "required (or aliasTarget for an A record)");
  for (const [i, value] of (input.values ?? []).entries()) {
    if (input.type === "A" && !isIPv4(value)) throw invalid(`dnsRecord.values[${i}]`, `"${value}" is not an IPv4 address`);
    if (input.type === "SRV" && !SRV_VALUE.test(value)) throw invalid(`dnsRecord.values[${i}]`, `"${value}" is not "priority weight port target"`);
  }
}

export class DnsService {
  private readonly zonesByName: RecordIndex<"dnsZone">;
  private readonly recordsByName: RecordIndex<"dnsRecord">;
  private readonly recordsByZone: RecordIndex<"dnsRecord">;
  private readonly recordsByAlias: RecordIndex<"dnsRecord">;

  constructor(private readonly core: CloudCore) {
    this.zonesByName = new RecordIndex(core.state, "dnsZone", (zone) => [`${zone.account}/${zone.name}`]);
    this.recordsByName = new RecordIndex(core.state, "dnsRecord", (record) => [`${record.account}/${record.name}`]);
    this.recordsByZone = new RecordIndex(core.state, "dnsRecord", (record) => [record.zoneId]);
    this.recordsByAlias = new RecordIndex(core.state, "dnsRecord", (record) => (record.aliasTarget ? [record.aliasTarget.loadBalancerId] : []));
  }

  createDnsZone(account: string, region: string, input: CreateDnsZoneInput): DnsZoneRecord {
    const name = input.name.toLowerCase();
    const taken = this.zonesByName.get(`${account}/${name}`)[0];
    if (taken) throw invalid("dnsZone.name", `zone ${name} already exists (${taken.id})`);
    const record: DnsZoneRecord = { ...this.core.newRecord("dnsZone", account, region, input.tags), state: "available", name };
    this.core.state.put(record);
    return record;
  }

  /** DependencyViolation while the zone holds records. */
  deleteDnsZone(account: string, region: string, id: string): void {
    const record = findOwned(this.core, account, region, "dnsZone", id);
    requireUnused(this.core, record, this.recordsByZone.get(id));
    this.core.write(() => this.core.state.remove(record.id, { ...viewOf(this.core, record), state: "deleted" }));
  }

  createDnsRecord(account: string, region: string, input: CreateDnsRecordInput): DnsRecordRecord {
    const zone = findOwned(this.core, account, region, "dnsZone", input.zoneId);
    const name = input.name.toLowerCase();
    if (name !== zone.name && !name.endsWith(`.${zone.name}`)) throw invalid("dnsRecord.name", `${name} is not inside zone ${zone.name}`);
    if (this.recordsByName.get(`${account}/${name}`).some((r) => r.type === input.type)) throw invalid("dnsRecord.name", `${name} already has an ${input.type} record`);
    if (input.aliasTarget) findOwned(this.core, account, region, "loadBalancer", input.aliasTarget.loadBalancerId);
    const record: DnsRecordRecord = {
      ...this.core.newRecord("dnsRecord", account, region, input.tags),
      state: "available",
      zoneId: zone.id,
      name,
      type: input.type,
      ...(input.values ? { values: [...input.values] } : {}),
      ...(input.aliasTarget ? { aliasTarget: { loadBalancerId: input.aliasTarget.loadBalancerId } } : {}),
      ttl: input.ttl ?? 300,
    };
    this.core.write(() => this.core.state.put(record));
    this.nameChanged(name);
    return record;
  }

  deleteDnsRecord(account: string, region: string, id: string): void {
    const record = findOwned(this.core, account, region, "dnsRecord", id);
    this.core.write(() => this.core.state.remove(record.id, { ...viewOf(this.core, record), state: "deleted" }));
    this.nameChanged(record.name);
  }

  /** What `name` resolves to now for the account's machines, through its A record (an alias of a load balancer that is gone resolves to nothing). */
  resolve(account: string, name: string): Resolution {
    const record = this.recordsByName.get(`${account}/${name.toLowerCase()}`).find((r) => r.type === "A");
    if (!record) return undefined;
    if (record.values) return { addresses: [...record.values] };
    const lb = this.core.state.get("loadBalancer", record.aliasTarget!.loadBalancerId);
    return lb ? { loadBalancer: lb.dnsName } : undefined;
  }

  /** The names whose A record is an alias of the load balancer with that DNS name. */
  aliasesOf(loadBalancerDnsName: string): string[] {
    const lb = this.core.loadBalancersByDnsName.get(loadBalancerDnsName.toLowerCase())[0];
    if (!lb) return [];
    return this.recordsByAlias.get(lb.id).map((r) => r.name);
  }

  private nameChanged(name: string): void {
    for (const hooks of this.core.hooks) hooks.onNameChanged?.(name);
  }
}

/** Zones and records share one service (its indexes of names). */
const dnsService = (core: CloudCore): DnsService => new DnsService(core);

export const dnsZones = defineResource({
  kind: "dnsZone",
  noun: "DNS zone",
  names: { one: "DnsZone", many: "DnsZones" },
  collection: "dns-zones",
  idPrefix: "zone",
  service: dnsService,
  create: {
    input: CreateDnsZoneInputSchema,
    build: (service, account, region, input) => service.createDnsZone(account, region, input),
  },
  /** DependencyViolation while it holds records. */
  delete: { run: (service, account, region, id) => service.deleteDnsZone(account, region, id) },
  view: (_core, record: DnsZoneRecord): DnsZone => plainView(record),
  actions: {},
});

export const dnsRecords = defineResource({
  kind: "dnsRecord",
  noun: "DNS record",
  names: { one: "DnsRecord", many: "DnsRecords" },
  collection: "dns-records",
  idPrefix: "rr",
  service: dnsService,
  create: {
    input: CreateDnsRecordInputSchema,
    check: checkRecord,
    build: (service, account, region, input) => service.createDnsRecord(account, region, input),
  },
  delete: { run: (service, account, region, id) => service.deleteDnsRecord(account, region, id) },
  view: (_core, record: DnsRecordRecord): DnsRecord => plainView(record),
  actions: {},
});
