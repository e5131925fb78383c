// Quotas per account and region, and physical capacity per zone and machine type. Limits changed at run
// time are kept in the state file, like a quota increase granted by a real cloud.
import { InsufficientCapacityError, QuotaExceededError } from "./errors.ts";
import type { QuotaLimitsPatch } from "./schemas.ts";
import type { StateStore } from "./state.ts";
import type { Quota, QuotaLimits } from "./types.ts";

export const DEFAULT_QUOTA: QuotaLimits = { vcpus: 64, instances: 32, networks: 5, loadBalancers: 5, publicIps: 10 };

/** Instances of one machine type one zone can hold across all accounts, unless set otherwise. */
export const DEFAULT_ZONE_CAPACITY = 1000;

const QUOTA_NOUN: Record<keyof QuotaLimits, string> = {
  vcpus: "vCPU",
  instances: "instance",
  networks: "network",
  loadBalancers: "load balancer",
  publicIps: "public IP",
};

export class QuotaBook {
  constructor(
    private readonly state: StateStore,
    private readonly defaults: QuotaLimits = DEFAULT_QUOTA,
    private readonly defaultCapacity: number = DEFAULT_ZONE_CAPACITY,
  ) {}

  limits(account: string, region: string): QuotaLimits {
    return { ...this.defaults, ...this.state.setting<QuotaLimitsPatch>(`quota/${account}/${region}`) };
  }

  /** Changes some limits of an account in a region (the others keep their value). */
  setLimits(account: string, region: string, patch: QuotaLimitsPatch): QuotaLimits {
    const key = `quota/${account}/${region}`;
    this.state.setSetting(key, { ...this.state.setting<QuotaLimitsPatch>(key), ...patch });
    return this.limits(account, region);
  }

  /** What the account uses in the region; instances count until they are terminated. */
  usage(account: string, region: string): QuotaLimits {
    const mine = <T extends { account: string; region: string }>(r: T) => r.account === account && r.region === region;
    const count = (records: { account: string; region: string }[]) => records.reduce((n, r) => (mine(r) ? n + 1 : n), 0);
    // One pass over the instances: a create is checked against this, and a fleet has tens of thousands.
    let vcpus = 0;
    let instances = 0;
    let ephemeralIps = 0;
    for (const i of this.state.all("instance")) {
      if (!mine(i) || i.state === "terminated") continue;
      vcpus += i.vcpus;
      instances++;
      if (i.ephemeralPublicIp) ephemeralIps++;
    }
    return {
      vcpus,
      instances,
      networks: count(this.state.all("network")),
      loadBalancers: count(this.state.all("loadBalancer")),
      publicIps: count(this.state.all("publicIp")) + ephemeralIps,
    };
  }

  quota(account: string, region: string): Quota {
    return { account, region, limits: this.limits(account, region), usage: this.usage(account, region) };
  }

  /** Throws QuotaExceeded naming the first limit the request would pass. */
  requireRoom(account: string, region: string, request: Partial<QuotaLimits>): void {
    const limits = this.limits(account, region);
    const usage = this.usage(account, region);
    for (const [name, requested] of Object.entries(request) as [keyof QuotaLimits, number][]) {
      if (usage[name] + requested <= limits[name]) continue;
      throw new QuotaExceededError(
        `${QUOTA_NOUN[name]} quota exceeded in ${region}: requested ${requested}, in use ${usage[name]}, limit ${limits[name]}`,
        { details: { quota: name, region, limit: limits[name], usage: usage[name], requested } },
      );
    }
  }

  capacity(region: string, zone: string, machineType: string): number {
    return this.state.setting<number>(`capacity/${region}/${zone}/${machineType}`) ?? this.defaultCapacity;
  }

  /** Sets how many instances of a machine type a zone can run (across all accounts). */
  setCapacity(region: string, zone: string, machineType: string, instances: number): void {
    this.state.setSetting(`capacity/${region}/${zone}/${machineType}`, instances);
  }

  /** Throws InsufficientCapacity when the zone cannot place one more instance of the type. */
  requireCapacity(region: string, zone: string, machineType: string): void {
    const placed = this.state
      .all("instance")
      .filter(
        (i) =>
          i.region === region &&
          i.zone === zone &&
          i.machineType === machineType &&
          (i.state === "pending" || i.state === "running" || i.state === "stopping"),
      ).length;
    const capacity = this.capacity(region, zone, machineType);
    if (placed >= capacity) {
      throw new InsufficientCapacityError(
        `insufficient ${machineType} capacity in ${zone}; try another zone or machine type, or retry later`,
        { details: { zone, machineType, capacity } },
      );
    }
  }
}
