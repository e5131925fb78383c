// Public IPs: addresses from the documentation ranges, allocated at once, held by at most one instance.
import type { CloudCore } from "./core.ts";
import { InsufficientCapacityError } from "./errors.ts";
import { lowestFreePublicAddress } from "./ipam.ts";
import { findOwned, requireUnused } from "./lookup.ts";
import type { PublicIpRecord } from "./records.ts";
import { defineResource } from "./resource-kinds.ts";
import { CreatePublicIpInputSchema, type CreatePublicIpInput } from "./schemas.ts";
import type { PublicIp } from "./types.ts";
import { plainView, viewOf } from "./views.ts";

/** A free public address (across every account: addresses are unique in the cloud). */
export function allocatePublicAddress(core: CloudCore): string {
  const used = new Set<string>(core.state.all("publicIp").map((ip) => ip.address));
  for (const instance of core.state.all("instance")) {
    if (instance.ephemeralPublicIp && instance.publicIp && instance.state !== "terminated") used.add(instance.publicIp);
  }
  const address = lowestFreePublicAddress(used, core.publicRange);
  if (!address) throw new InsufficientCapacityError("no public addresses left in the pool; retry later");
  return address;
}

export class PublicIpService {
  constructor(private readonly core: CloudCore) {}

  /** Allocates an address; runs once per idempotency token. */
  createPublicIp(account: string, region: string, input: CreatePublicIpInput): PublicIpRecord {
    this.core.quotas.requireRoom(account, region, { publicIps: 1 });
    const record: PublicIpRecord = {
      ...this.core.newRecord("publicIp", account, region, input.tags),
      state: "available",
      address: allocatePublicAddress(this.core),
    };
    this.core.state.put(record);
    return record;
  }

  deletePublicIp(account: string, region: string, id: string): void {
    const record = findOwned(this.core, account, region, "publicIp", id);
    const holder = record.instanceId ? this.core.state.get("instance", record.instanceId) : undefined;
    requireUnused(this.core, record, holder && holder.state !== "terminated" ? [holder] : []);
    this.core.write(() => this.core.state.remove(record.id, { ...viewOf(this.core, record), state: "deleted" }));
  }
}

export const publicIps = defineResource({
  kind: "publicIp",
  noun: "public IP",
  names: { one: "PublicIp", many: "PublicIps" },
  collection: "public-ips",
  idPrefix: "eip",
  service: (core) => new PublicIpService(core),
  create: {
    input: CreatePublicIpInputSchema,
    build: (service, account, region, input) => service.createPublicIp(account, region, input),
  },
  /** DependencyViolation while an instance holds it. */
  delete: { run: (service, account, region, id) => service.deletePublicIp(account, region, id) },
  view: (_core, record: PublicIpRecord): PublicIp => plainView(record),
  actions: {},
  quota: () => ({ publicIps: 1 }),
});
