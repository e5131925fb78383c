// A provider of hosts kept in memory, for tests: it offers the machines capability only — no catalogue,
// no network, no load balancer — as a provider of machines one already has does. A "create" claims a
// free host for a cluster and a "delete" releases it. It keeps the contract's rules (tokens, tags,
// tolerant deletes, classified errors, user data never returned) and passes the machines conformance
// suite, which is what lets tests show how controllers meet a provider that lacks a capability.
import type { FaultOperation, InjectedFault, MachineTemplate } from "../conformance/case.ts";
import {
  ProviderError,
  type CreateOptions,
  type InstanceInfo,
  type Machines,
  type Provider,
  type ProviderFactory,
  type ResourceSpecs,
  type Tags,
} from "../provider.ts";

export const FAKE_HOSTS_PROVIDER = "fake-hosts";
const MACHINE_TYPE = "host";
const IMAGE = "host-os";

interface Claim {
  id: string;
  host: string;
  zone: string;
  tags: Tags;
  /** Looked at once since it was claimed: a host is "booting" until then. */
  seen: boolean;
  released: boolean;
}

/** The hosts of one "region", and who holds which: shared by every provider opened on it. */
export class FakeHostPool {
  private readonly claims = new Map<string, Claim>();
  private readonly byToken = new Map<string, string>();
  private readonly faults = new Map<FaultOperation, InjectedFault>();
  private next = 0;

  constructor(
    readonly region: string,
    /** Addresses of the hosts. */
    readonly hosts: readonly string[],
  ) {}

  get machineTemplate(): MachineTemplate {
    return { zone: `${this.region}-hosts`, machineType: MACHINE_TYPE, imageId: IMAGE };
  }

  injectFault(operation: FaultOperation, fault: InjectedFault): void {
    this.faults.set(operation, fault);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  private fault(operation: FaultOperation): InjectedFault | undefined {
    return this.faults.get(operation);
  }

  claim(spec: ResourceSpecs["instance"], options: CreateOptions): Claim {
    const known = this.byToken.get(options.token);
    if (known) return this.claims.get(known)!;
    const fault = this.fault("create:instance");
    if (fault === "transient") throw new ProviderError("transient", "claim a host: the pool did not answer");
    if (fault === "throttled") throw new ProviderError("throttled", "claim a host: too many requests", { retryAfterMs: 50 });
    if (fault === "capacity") throw new ProviderError("capacity", "claim a host: every host is in use");
    if (spec.machineType !== MACHINE_TYPE) throw new ProviderError("invalid", `claim a host: machine type ${spec.machineType} is not offered (offered: ${MACHINE_TYPE})`);
    if (spec.imageId !== IMAGE) throw new ProviderError("invalid", `claim a host: image ${spec.imageId} is not installed (installed: ${IMAGE})`);
    const held = new Set([...this.claims.values()].filter((c) => !c.released).map((c) => c.host));
    const host = this.hosts.find((h) => !held.has(h));
    if (!host) throw new ProviderError("capacity", `claim a host: all ${this.hosts.length} hosts are in use`);
    const claim: Claim = { id: `host-claim-${++this.next}`, host, zone: spec.zone, tags: { ...options.tags }, seen: false, released: false };
    this.claims.set(claim.id, claim);
    this.byToken.set(options.token, claim.id);
    if (fault === "lostAnswer") throw new ProviderError("transient", "claim a host: the answer was lost");
    return claim;
  }

  find(id: string): Claim | undefined {
    return this.claims.get(id);
  }

  list(): Claim[] {
    return [...this.claims.values()];
  }
}

function view(claim: Claim, region: string): InstanceInfo {
  const state = claim.released ? "gone" : claim.seen ? "ready" : "pending";
  return {
    id: claim.id,
    kind: "instance",
    state,
    cloudState: claim.released ? "released" : claim.seen ? "claimed" : "claiming",
    tags: { ...claim.tags },
    zone: claim.zone,
    privateIp: claim.host,
    providerId: `${FAKE_HOSTS_PROVIDER}://${region}/${claim.id}`,
  };
}

export class FakeHostsProvider implements Provider, Machines {
  readonly provider = FAKE_HOSTS_PROVIDER;
  readonly capabilities = { machines: this };

  constructor(private readonly pool: FakeHostPool) {}

  get region(): string {
    return this.pool.region;
  }

  async create(_kind: "instance", spec: ResourceSpecs["instance"], options: CreateOptions): Promise<InstanceInfo> {
    return view(this.pool.claim(spec, options), this.region);
  }

  async get(_kind: "instance", id: string): Promise<InstanceInfo | undefined> {
    const claim = this.pool.find(id);
    if (!claim || claim.released) return undefined;
    const info = view(claim, this.region);
    claim.seen = true;
    return info;
  }

  async findTagged(_kind: "instance", tags: Tags): Promise<InstanceInfo[]> {
    const matches = (claim: Claim) => Object.entries(tags).every(([k, v]) => claim.tags[k] === v);
    return this.pool
      .list()
      .filter((claim) => !claim.released && matches(claim))
      .map((claim) => view(claim, this.region));
  }

  async delete(_kind: "instance", id: string): Promise<void> {
    const claim = this.pool.find(id);
    if (claim) claim.released = true;
  }

  async consoleOutput(id: string): Promise<string[]> {
    const claim = this.pool.find(id);
    if (!claim) throw new ProviderError("notFound", `host claim ${id} does not exist`);
    return claim.seen ? [`claimed host ${claim.host} in ${this.region}`] : [];
  }
}

/** The factory of the fake provider: each region named by a Connection is one pool of `hosts`. */
export function fakeHostsProviderFactory(hosts: readonly string[] = ["192.0.2.10", "192.0.2.11", "192.0.2.12"]): ProviderFactory & { pool(region: string): FakeHostPool } {
  const pools = new Map<string, FakeHostPool>();
  const pool = (region: string) => {
    let found = pools.get(region);
    if (!found) pools.set(region, (found = new FakeHostPool(region, hosts)));
    return found;
  };
  return { name: FAKE_HOSTS_PROVIDER, open: (target) => new FakeHostsProvider(pool(target.region)), pool };
}
