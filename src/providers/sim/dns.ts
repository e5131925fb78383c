// The sim provider's DNS: the sim cloud's zones and records through the dns capability of the contract. The
// connection's zone is `<region>.sim.slipway.internal`, made on first use (found by its name afterwards,
// and made with a token derived from it, so two callers at once make one).
import type { DnsRecord } from "../../simcloud/dns-service.ts";
import type * as Sim from "../../simcloud/types.ts";
import { isProviderError, type CreateOptions, type Dns, type DnsRecordInfo, type DnsRecordSpec, type Tags } from "../provider.ts";
import type { CloudCall } from "./reservations.ts";

/** The zone of a sim region's names. */
export function simZoneName(region: string): string {
  return `${region}.sim.slipway.internal`;
}

function recordInfo(r: DnsRecord): DnsRecordInfo {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    ...(r.values ? { values: [...r.values] } : {}),
    ...(r.aliasTarget ? { loadBalancerId: r.aliasTarget.loadBalancerId } : {}),
    tags: { ...r.tags },
  };
}

export class SimDns implements Dns {
  private zoneId: string | undefined;

  constructor(
    private readonly api: Sim.CloudApi,
    private readonly region: string,
    private readonly call: CloudCall,
  ) {}

  async zone(): Promise<{ id: string; name: string }> {
    const name = simZoneName(this.region);
    if (this.zoneId) return { id: this.zoneId, name };
    const zones = await this.call("list DNS zones", () => this.api.listDnsZones(this.region));
    const zone =
      zones.find((z) => z.name === name) ??
      (await this.call(`create DNS zone ${name}`, () => this.api.createDnsZone(this.region, { name, tags: { "slipway.dev/zone": name }, clientToken: `zone/${name}` })));
    this.zoneId = zone.id;
    return { id: zone.id, name };
  }

  async create(spec: DnsRecordSpec, { token, tags }: CreateOptions): Promise<DnsRecordInfo> {
    const zone = await this.zone();
    const created = await this.call(`create DNS record ${spec.type} ${spec.name}`, () =>
      this.api.createDnsRecord(this.region, {
        zoneId: zone.id,
        name: spec.name,
        type: spec.type,
        ...(spec.values ? { values: spec.values } : {}),
        ...(spec.loadBalancerId ? { aliasTarget: { loadBalancerId: spec.loadBalancerId } } : {}),
        tags,
        clientToken: token,
      }),
    );
    return recordInfo(created);
  }

  async findTagged(tags: Tags): Promise<DnsRecordInfo[]> {
    const found = await this.call("list DNS records", () => this.api.listDnsRecords(this.region, { tags }));
    return found.map(recordInfo);
  }

  async delete(id: string): Promise<void> {
    try {
      await this.call(`delete DNS record ${id}`, () => this.api.deleteDnsRecord(this.region, id));
    } catch (error) {
      if (!isProviderError(error, "notFound")) throw error;
    }
  }
}
