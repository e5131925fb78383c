// Quotas per account and region, and physical capacity per zone and machine type. Limits changed at run
// time are kept in the state file, like a quota increase granted by a real cloud.
import { InsufficientCapacityError, QuotaExceededError } from "./errors.ts";
import type { QuotaLimitsPatch } from "./schemas.ts";
import { RecordIndex } from "./record-index.ts";
import type { StoredResource } from "./resource-kinds.ts";
import { BUILTIN_REGISTRY } from "./services.ts";
import type { StateStore } from "./state.ts";
import type { Quota, QuotaLimits } from "./types.ts";

/** The key zone capacity is counted under: one machine type in one zone of one region. */
export function capacityKey(region: string, zone: string, machineType: string): string {
  return `${region}/${zone}/${machineType}`;
}

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

/** What one resource counts against its account's quota in its region (as its kind's descriptor says). */
export type QuotaContribution = (record: StoredResource) => Partial<QuotaLimits> | undefined;

const ZERO: QuotaLimits = { vcpus: 0, instances: 0, networks: 0, loadBalancers: 0, publicIps: 0 };

export class QuotaBook {
  /**
   * Usage by "<account>/<region>", kept current as resources change: every create checks it, and
   * counting it afresh walked every instance of a fleet of tens of thousands.
   */
  private readonly usageByScope = new Map<string, QuotaLimits>();
  /** What each resource counted last, to take it back when the resource changes or goes. */
  private readonly counted = new Map<string, { scope: string; amount: QuotaLimits }>();
  /** Instances holding a place (pending, running, stopping) outside any reservation, by capacity key. */
  private readonly placed: RecordIndex<"instance">;
  /** Instances holding a place in a reservation, by reservation id. */
  private readonly launchedInto: RecordIndex<"instance">;
  /** Reservations holding capacity (scheduled or active), by capacity key. */
  private readonly holding: RecordIndex<"reservation">;

  constructor(
    private readonly state: StateStore,
    private readonly defaults: QuotaLimits = DEFAULT_QUOTA,
    private readonly defaultCapacity: number = DEFAULT_ZONE_CAPACITY,
    private readonly contributionOf: QuotaContribution = (record) => BUILTIN_REGISTRY.quotaOf(record),
  ) {
    for (const record of state.everything()) this.count(record, false);
    state.onChange((record, removed) => this.count(record, removed));
    const placing = new Set(["pending", "running", "stopping"]);
    this.placed = new RecordIndex(state, "instance", (i) => (placing.has(i.state) && !i.reservationId ? [capacityKey(i.region, i.zone, i.machineType)] : []));
    this.launchedInto = new RecordIndex(state, "instance", (i) => (placing.has(i.state) && i.reservationId ? [i.reservationId] : []));
    const holding = new Set(["scheduled", "active"]);
    this.holding = new RecordIndex(state, "reservation", (r) => (holding.has(r.state) ? [capacityKey(r.region, r.zone, r.machineType)] : []));
  }

  private count(record: StoredResource, removed: boolean): void {
    const previous = this.counted.get(record.id);
    if (previous) {
      this.add(previous.scope, previous.amount, -1);
      this.counted.delete(record.id);
    }
    const contribution = removed ? undefined : this.contributionOf(record);
    if (!contribution) return;
    const amount = { ...ZERO, ...contribution };
    const scope = `${record.account}/${record.region}`;
    this.add(scope, amount, 1);
    this.counted.set(record.id, { scope, amount });
  }

  private add(scope: string, amount: QuotaLimits, sign: 1 | -1): void {
    const usage = this.usageByScope.get(scope) ?? { ...ZERO };
    for (const name of Object.keys(usage) as (keyof QuotaLimits)[]) usage[name] += sign * amount[name];
    this.usageByScope.set(scope, usage);
  }

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
    return { ...(this.usageByScope.get(`${account}/${region}`) ?? ZERO) };
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

  /** Instances launched into a reservation that hold a place now. */
  inReservation(reservationId: string): number {
    return this.launchedInto.count(reservationId);
  }

  /** Instances of the type the zone's active reservations hold now, used or not: nobody else may take them. */
  reservedNow(region: string, zone: string, machineType: string): number {
    return this.holding
      .get(capacityKey(region, zone, machineType))
      .filter((r) => r.state === "active")
      .reduce((sum, r) => sum + r.instanceCount, 0);
  }

  /**
   * What the zone can still promise to a reservation for [startMs, endMs): its capacity less the
   * instances placed outside reservations and every reservation overlapping the window.
   */
  reservable(region: string, zone: string, machineType: string, startMs: number, endMs: number): number {
    const overlapping = this.holding
      .get(capacityKey(region, zone, machineType))
      .filter((r) => Date.parse(r.startTime) < endMs && startMs < Date.parse(r.endTime))
      .reduce((sum, r) => sum + r.instanceCount, 0);
    const placed = this.placed.count(capacityKey(region, zone, machineType));
    return Math.max(0, this.capacity(region, zone, machineType) - placed - overlapping);
  }

  /**
   * Throws InsufficientCapacity when the zone cannot place one more instance of the type outside a
   * reservation: capacity held by active reservations is not free, whoever asks.
   */
  requireCapacity(region: string, zone: string, machineType: string): void {
    const placed = this.placed.count(capacityKey(region, zone, machineType));
    const reserved = this.reservedNow(region, zone, machineType);
    const capacity = this.capacity(region, zone, machineType);
    if (placed + reserved >= capacity) {
      const held = reserved > 0 ? ` (${reserved} of ${capacity} held by capacity reservations)` : "";
      throw new InsufficientCapacityError(
        `insufficient ${machineType} capacity in ${zone}${held}; try another zone or machine type, or retry later`,
        { details: { zone, machineType, capacity, reserved } },
      );
    }
  }
}
