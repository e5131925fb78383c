// Pools of hosts: the ssh provider's pool infrastructure (provider.ts, "A provider of hosts"). A pool is
// a selection of the Connection's hosts (labels and/or names) and a size; its instances are the hosts it
// claimed, each claim tagged with the pool, bootstrapped with the pool's one user data and cleaned and
// released as a machine's host is. Hosts are claimed all or nothing: a size beyond the free hosts
// matching claims none. The pools' selections live in the provider (one per Connection); after a restart
// a pool is unknown until its owner makes it again with its token, and it then takes back its hosts.
import { createHash } from "node:crypto";
import { ProviderError, type CreateOptions, type HostSelection, type PoolChange, type PoolInfo, type PoolInfrastructure, type PoolInstanceInfo, type PoolSpec, type Tags } from "../provider.ts";
import { isClaimable, type HostRecord } from "./hosts.ts";
import type { SshProvider } from "./provider.ts";

/** On the claim of every host a pool holds: the pool's id. */
export const TAG_HOST_POOL = "slipway.dev/host-pool";

interface HostPool {
  id: string;
  token: string;
  tags: Tags;
  hosts: HostSelection;
  userData: string;
  desired: number;
  /** The template digest each held host was bootstrapped from. */
  launchedFrom: Map<string, string>;
  deleting?: boolean;
}

function digest(userData: string): string {
  return createHash("sha256").update(userData).digest("hex").slice(0, 16);
}

/** Whether a host is one the selection names: it carries every label and, when names are given, is one of them. */
export function selects(selection: HostSelection, host: Pick<HostRecord, "name" | "labels">): boolean {
  const labelled = Object.entries(selection.labels ?? {}).every(([k, v]) => host.labels?.[k] === v);
  return labelled && (selection.names === undefined || selection.names.includes(host.name));
}

export class HostPools implements PoolInfrastructure {
  private readonly pools = new Map<string, HostPool>();

  constructor(private readonly provider: SshProvider) {}

  private held(hosts: HostRecord[], id: string): HostRecord[] {
    return hosts.filter((h) => h.claim?.tags[TAG_HOST_POOL] === id);
  }

  async create(spec: PoolSpec, options: CreateOptions): Promise<PoolInfo> {
    if (!spec.hosts || (spec.hosts.labels === undefined && spec.hosts.names === undefined)) throw new ProviderError("invalid", `pool ${spec.name}: hosts: a pool of hosts selects its hosts by labels or names`);
    if (spec.desired < spec.minSize || spec.desired > spec.maxSize) throw new ProviderError("invalid", `pool ${spec.name}: desired (${spec.desired}) is outside minSize..maxSize (${spec.minSize}..${spec.maxSize})`);
    const known = this.pools.get(spec.name);
    if (known && known.token !== options.token) throw new ProviderError("invalid", `pool ${spec.name}: name is taken by another pool`);
    const pool: HostPool = known ?? { id: spec.name, token: options.token, tags: { ...options.tags, [TAG_HOST_POOL]: spec.name }, hosts: spec.hosts, userData: spec.userData, desired: 0, launchedFrom: new Map() };
    pool.hosts = spec.hosts;
    pool.userData = spec.userData;
    // Made again after a restart: it takes back the hosts it holds, and claims up to its size.
    const live = this.held(await this.provider.hostRecords(), pool.id).filter((h) => !h.claim?.releasing);
    pool.desired = Math.max(pool.desired, live.length);
    await this.claim(pool, spec.desired);
    this.pools.set(pool.id, pool);
    return (await this.get(pool.id))!;
  }

  /** Claims hosts until the pool holds `desired` (all or nothing); capacity names how many are free. */
  private async claim(pool: HostPool, desired: number): Promise<void> {
    const hosts = await this.provider.hostRecords();
    const live = this.held(hosts, pool.id).filter((h) => !h.claim?.releasing);
    const wanted = desired - live.length;
    if (wanted <= 0) {
      pool.desired = Math.max(desired, 0);
      return;
    }
    const free = hosts.filter((h) => isClaimable(h) && selects(pool.hosts, h));
    if (free.length < wanted) {
      throw new ProviderError("capacity", `pool ${pool.id}: ${desired} host(s) wanted, it holds ${live.length} and ${free.length} more free host(s) match (${describeSelection(pool.hosts)}); none claimed`);
    }
    const claimed: string[] = [];
    try {
      for (const host of free) {
        if (claimed.length === wanted) break;
        try {
          const instance = await this.provider.claimOneOf([host], { token: `${pool.token}/${host.name}`, tags: pool.tags, claimedAt: new Date().toISOString() }, pool.userData);
          claimed.push(instance.id);
          pool.launchedFrom.set(instance.id, digest(pool.userData));
        } catch (error) {
          if (error instanceof ProviderError && error.kind === "capacity") continue; // taken by another claim meanwhile
          throw error;
        }
      }
      if (claimed.length < wanted) throw new ProviderError("capacity", `pool ${pool.id}: ${desired} host(s) wanted, others took the free hosts meanwhile; none claimed`);
    } catch (error) {
      // Nothing half-claimed: the hosts just taken are cleaned and released again.
      await Promise.all(claimed.map((id) => this.provider.delete("instance", id)));
      throw error;
    }
    pool.desired = desired;
  }

  async get(id: string): Promise<PoolInfo | undefined> {
    const pool = this.pools.get(id);
    if (!pool) return undefined;
    const instances = await this.instances(id);
    if (pool.deleting && instances.length === 0) {
      this.pools.delete(id);
      return undefined;
    }
    const counted = instances.filter((i) => i.state !== "leaving");
    // A host removed to be replaced: another free matching host is taken if there is one.
    let message: string | undefined;
    if (!pool.deleting && counted.length < pool.desired) {
      try {
        await this.claim(pool, pool.desired);
        return this.get(id);
      } catch (error) {
        if (!(error instanceof ProviderError && error.kind === "capacity")) throw error;
        message = error.message;
      }
    }
    return {
      id,
      name: id,
      state: pool.deleting ? "deleting" : "ready",
      cloudState: pool.deleting ? "releasing" : "holding",
      tags: { ...pool.tags },
      zones: [this.provider.region],
      minSize: 0,
      maxSize: counted.length + (await this.provider.hostRecords()).filter((h) => isClaimable(h) && selects(pool.hosts, h)).length,
      desired: pool.desired,
      replicas: counted.length,
      readyReplicas: counted.filter((i) => i.state === "ready").length,
      instances,
      ...(message ? { message } : {}),
    };
  }

  async findTagged(tags: Tags): Promise<PoolInfo[]> {
    const found = [...this.pools.values()].filter((p) => Object.entries(tags).every(([k, v]) => p.tags[k] === v));
    return (await Promise.all(found.map((p) => this.get(p.id)))).filter((p): p is PoolInfo => p !== undefined);
  }

  async update(id: string, change: PoolChange): Promise<PoolInfo> {
    const pool = this.pools.get(id);
    if (!pool || pool.deleting) throw new ProviderError("notFound", `pool ${id} does not exist`);
    if (change.template) pool.userData = change.template.userData;
    if (change.desired !== undefined && change.desired > pool.desired) await this.claim(pool, change.desired);
    else if (change.desired !== undefined && change.desired < pool.desired) {
      // Scaled in without a chosen host: the most recently claimed go first.
      const live = this.held(await this.provider.hostRecords(), id).filter((h) => !h.claim?.releasing);
      const excess = [...live].sort((a, b) => (b.claim!.claimedAt ?? "").localeCompare(a.claim!.claimedAt ?? "")).slice(0, Math.max(0, live.length - change.desired));
      await Promise.all(excess.map((h) => this.provider.delete("instance", h.name)));
      pool.desired = change.desired;
    }
    return (await this.get(id))!;
  }

  async instances(id: string): Promise<PoolInstanceInfo[]> {
    const pool = this.pools.get(id);
    const held = this.held(await this.provider.hostRecords(), id);
    const current = pool && digest(pool.userData);
    return Promise.all(
      held.map(async (h): Promise<PoolInstanceInfo> => {
        const instance = await this.provider.get("instance", h.name);
        const state = !instance || instance.state === "deleting" || instance.state === "gone" ? "leaving" : instance.state === "ready" ? "ready" : "pending";
        return {
          instanceId: h.name,
          providerId: instance?.providerId ?? "",
          ...(h.facts?.hostname ? { nodeName: h.facts.hostname } : {}),
          zone: this.provider.region,
          state,
          healthy: instance?.state !== "failed",
          protected: true,
          upToDate: (pool?.launchedFrom.get(h.name) ?? current) === current,
        };
      }),
    );
  }

  async removeInstance(id: string, instanceId: string, options: { decrementDesired: boolean }): Promise<void> {
    const host = (await this.provider.hostRecords()).find((h) => h.name === instanceId);
    if (!host?.claim || host.claim.tags[TAG_HOST_POOL] !== id || host.claim.releasing) return;
    await this.provider.delete("instance", instanceId);
    const pool = this.pools.get(id);
    if (pool && options.decrementDesired) pool.desired = Math.max(0, pool.desired - 1);
  }

  async protect(): Promise<void> {
    // Hosts are never removed on the provider's own account: every instance is protected already.
  }

  async delete(id: string): Promise<void> {
    const pool = this.pools.get(id);
    if (pool) pool.deleting = true;
    const held = this.held(await this.provider.hostRecords(), id).filter((h) => !h.claim?.releasing);
    await Promise.all(held.map((h) => this.provider.delete("instance", h.name)));
  }
}

function describeSelection(selection: HostSelection): string {
  const parts = [
    ...(selection.labels && Object.keys(selection.labels).length > 0 ? [`labels ${Object.entries(selection.labels).map(([k, v]) => `${k}=${v}`).join(",")}`] : []),
    ...(selection.names ? [`names ${selection.names.join(", ")}`] : []),
  ];
  return parts.join(" and ") || "any host";
}
