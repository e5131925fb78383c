// Shards held through etcd leases, so that several replicas split the controllers' work and take over
// from one another. Each replica holds one lease (TTL about 5 s) renewed by heartbeat, registers a
// membership key bound to it, and holds each of its shards by a lock key bound to it:
//
//   <prefix>members/<replica>    a live replica
//   <prefix>shards/<nn>          the replica holding shard nn
//
// The shards a replica should hold are a function of the sorted live members (rendezvous hashing), so
// every replica agrees without talking. A replica claims a shard only while its lock key is free
// (create-if-absent), and gives up shards it should no longer hold after their work in flight finished.
// Watching the keys makes it react at once when a member joins or leaves or a lock is freed. When a
// renewal has not succeeded for TTL minus a safety margin, the replica stops work on all its shards
// before the lease can expire: by the time another replica can claim them, this one no longer writes.
// A replica that dies stops renewing: its lease expires and its keys vanish with it. One that shuts
// down revokes its lease, and its shards are taken over at once.
import type { Logger } from "pino";
import { COORDINATION_ROOT } from "../apiserver/storage-keys.ts";
import type { Leases } from "../store/leases.ts";
import type { Store, Watch, WatchEvent } from "../store/store.ts";
import { shardOwner, type ShardCoordinator, type ShardSet } from "./shards.ts";

export function memberKey(replica: string, prefix = COORDINATION_ROOT): string {
  return `${prefix}members/${replica}`;
}

export function shardLockKey(shard: number, prefix = COORDINATION_ROOT): string {
  return `${prefix}shards/${String(shard).padStart(2, "0")}`;
}

/** What a lock or membership key holds. */
export interface LeaseHolder {
  replica: string;
  lease: string;
}

export interface ShardLeaseOptions {
  /** The etcd store: the keys are read and watched through it, under its key prefix. */
  store: Store;
  leases: Leases;
  replica: string;
  shards: ShardSet;
  log: Logger;
  /** Lease time to live. Default 5 s. */
  ttlSeconds?: number;
  /** How often the lease is renewed. Default a fifth of the TTL. */
  renewIntervalMs?: number;
  /** Work stops this long before the lease could expire without renewal. Default 30 % of the TTL, at least 1 s. */
  safetyMarginMs?: number;
  /** How long shards given to another replica may finish their work in flight. Default 2 s. */
  handoverDrainMs?: number;
  /** While the assignment is not reached (e.g. a write failed), try again this often. Default 250 ms. */
  retryMs?: number;
  prefix?: string;
}

function parseHolder(value: string): LeaseHolder | undefined {
  try {
    const parsed = JSON.parse(value) as Partial<LeaseHolder>;
    return typeof parsed.replica === "string" && typeof parsed.lease === "string" ? { replica: parsed.replica, lease: parsed.lease } : undefined;
  } catch {
    return undefined;
  }
}

export class ShardLeases implements ShardCoordinator {
  readonly shards: ShardSet;
  private readonly store: Store;
  private readonly leases: Leases;
  private readonly replica: string;
  private readonly log: Logger;
  private readonly ttlMs: number;
  private readonly renewIntervalMs: number;
  private readonly safetyMarginMs: number;
  private readonly handoverDrainMs: number;
  private readonly retryMs: number;
  private readonly prefix: string;

  private lease?: string;
  /** Monotonic time (performance.now) until which this replica may work on its shards. */
  private validUntil = 0;
  /** Work is stopped because the lease could not be renewed in time (the lock keys may still be ours). */
  private suspended = false;
  private stopping = false;
  /** Shards whose lock key this replica holds under `lease`. */
  private readonly held = new Set<number>();
  private readonly members = new Set<string>();
  private readonly locks = new Map<number, LeaseHolder>();
  private watch?: Watch;
  private balancing?: Promise<void>;
  private balanceAgain = false;
  private renewTimer?: NodeJS.Timeout;
  private safetyTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private registering?: Promise<void>;

  constructor(options: ShardLeaseOptions) {
    this.store = options.store;
    this.leases = options.leases;
    this.replica = options.replica;
    this.shards = options.shards;
    this.log = options.log.child({ component: "shard-leases", replica: options.replica });
    this.ttlMs = (options.ttlSeconds ?? 5) * 1000;
    this.renewIntervalMs = options.renewIntervalMs ?? this.ttlMs / 5;
    this.safetyMarginMs = options.safetyMarginMs ?? Math.max(1000, this.ttlMs * 0.3);
    this.handoverDrainMs = options.handoverDrainMs ?? 2000;
    this.retryMs = options.retryMs ?? 250;
    this.prefix = options.prefix ?? COORDINATION_ROOT;
  }

  unready(): string | undefined {
    if (this.stopping) return "stopping: the shards are being handed over";
    if (!this.lease) return "no shard lease: registering with the store";
    if (this.suspended) return "the shard lease was not renewed in time: work on every shard is stopped";
    return undefined;
  }

  async start(): Promise<void> {
    await this.register();
    await this.loadAndWatch();
    this.scheduleRenewal();
    await this.balance();
  }

  async stop(drainMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.retryTimer);
    await this.balancing;
    await this.shards.deactivate([...this.held], drainMs);
    const lease = this.lease;
    clearTimeout(this.renewTimer);
    clearTimeout(this.safetyTimer);
    this.watch?.close();
    if (lease) {
      try {
        // Every key bound to the lease goes at once: other replicas take the shards over now.
        await this.leases.revoke(lease);
        this.log.info({ shards: this.held.size }, "released the shard lease");
      } catch (error) {
        this.log.warn({ err: (error as Error).message }, "could not revoke the shard lease; it will expire");
      }
    }
    this.held.clear();
    this.lease = undefined;
  }

  // ---- the lease ----

  private now(): number {
    return performance.now();
  }

  private holderValue(lease: string): string {
    return JSON.stringify({ replica: this.replica, lease } satisfies LeaseHolder);
  }

  /** Grants a lease and registers as a member, retrying until it succeeds (or the replica stops). */
  private register(): Promise<void> {
    this.registering ??= (async () => {
      for (let attempt = 0; !this.stopping; attempt++) {
        try {
          const sentAt = this.now();
          const lease = await this.leases.grant(this.ttlMs / 1000);
          await this.leases.put(memberKey(this.replica, this.prefix), this.holderValue(lease), lease);
          this.lease = lease;
          this.renewed(sentAt);
          this.log.info({ lease }, "registered as a controller replica");
          return;
        } catch (error) {
          this.log.warn({ err: (error as Error).message, attempt }, "could not register; retrying");
          await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 100 * 2 ** attempt)));
        }
      }
    })().finally(() => (this.registering = undefined));
    return this.registering;
  }

  private scheduleRenewal(): void {
    if (this.stopping) return;
    this.renewTimer = setTimeout(() => void this.renew().finally(() => this.scheduleRenewal()), this.renewIntervalMs);
    this.renewTimer.unref();
  }

  private async renew(): Promise<void> {
    const lease = this.lease;
    if (!lease) return;
    // A dead member answers with an error at once: try the others within the same beat.
    for (let attempt = 0; attempt < 3 && lease === this.lease; attempt++) {
      const sentAt = this.now();
      try {
        const ttlLeft = await this.leases.keepAlive(lease, Math.min(this.renewIntervalMs, 1000));
        if (lease !== this.lease) return;
        if (ttlLeft > 0) return this.renewed(sentAt);
        await this.leaseLost();
        return;
      } catch (error) {
        this.log.debug({ err: (error as Error).message, attempt }, "lease renewal failed");
      }
    }
  }

  /** A renewal sent at `sentAt` succeeded: the lease lives at least the TTL from then. */
  private renewed(sentAt: number): void {
    this.validUntil = Math.max(this.validUntil, sentAt + this.ttlMs - this.safetyMarginMs);
    this.armSafetyTimer();
    if (this.suspended) {
      this.suspended = false;
      this.log.info({ shards: this.held.size }, "lease renewed again; resuming work on held shards");
      this.shards.activate([...this.held]);
      void this.balance();
    }
  }

  private armSafetyTimer(): void {
    clearTimeout(this.safetyTimer);
    this.safetyTimer = setTimeout(() => this.checkValidity(), Math.max(0, this.validUntil - this.now()));
    this.safetyTimer.unref();
  }

  private checkValidity(): void {
    if (this.suspended || (this.stopping && !this.lease)) return;
    // Timers may fire a little early.
    if (this.now() < this.validUntil) return this.armSafetyTimer();
    this.suspended = true;
    this.shards.revoke([...this.held]);
    this.log.warn({ shards: this.held.size }, "lease not renewed in time; stopped work on every held shard");
  }

  /** The store says the lease is gone: so are the lock keys. Start over with a new lease. */
  private async leaseLost(): Promise<void> {
    this.log.warn({ lease: this.lease }, "the shard lease expired");
    this.shards.revoke([...this.held]);
    this.held.clear();
    this.lease = undefined;
    this.validUntil = 0;
    this.suspended = false;
    clearTimeout(this.safetyTimer);
    await this.register();
    await this.balance();
  }

  // ---- who is there and who holds what ----

  private async loadAndWatch(): Promise<void> {
    const listed = await this.store.list(this.prefix);
    this.members.clear();
    this.locks.clear();
    for (const kv of listed.items) this.apply({ type: "put", kv });
    this.watch?.close();
    this.watch = this.store.watch(this.prefix, {
      afterRevision: listed.revision,
      onEvent: (event) => {
        this.apply(event);
        void this.balance();
      },
      onError: (error) => {
        if (this.stopping) return;
        this.log.warn({ err: error.message }, "coordination watch failed; reloading");
        void this.reload();
      },
    });
  }

  private async reload(): Promise<void> {
    for (let attempt = 0; !this.stopping; attempt++) {
      try {
        await this.loadAndWatch();
        await this.balance();
        return;
      } catch (error) {
        this.log.warn({ err: (error as Error).message, attempt }, "coordination reload failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 100 * 2 ** attempt)));
      }
    }
  }

  private apply(event: WatchEvent): void {
    const key = event.type === "put" ? event.kv.key : event.key;
    const rest = key.slice(this.prefix.length);
    if (rest.startsWith("members/")) {
      const member = rest.slice("members/".length);
      if (event.type === "put") this.members.add(member);
      else this.members.delete(member);
    } else if (rest.startsWith("shards/")) {
      const shard = Number(rest.slice("shards/".length));
      if (!Number.isInteger(shard)) return;
      const holder = event.type === "put" ? parseHolder(event.kv.value) : undefined;
      if (holder) this.locks.set(shard, holder);
      else this.locks.delete(shard);
    }
  }

  // ---- claiming and giving up shards ----

  /** Brings the held shards to the desired ones; runs one at a time, again if asked meanwhile. */
  private balance(): Promise<void> {
    if (this.balancing) {
      this.balanceAgain = true;
      return this.balancing;
    }
    this.balancing = (async () => {
      do {
        this.balanceAgain = false;
        try {
          await this.balanceOnce();
        } catch (error) {
          this.log.warn({ err: (error as Error).message }, "shard balancing failed");
          this.retrySoon();
        }
      } while (this.balanceAgain && !this.stopping);
    })().finally(() => (this.balancing = undefined));
    return this.balancing;
  }

  private desired(): Set<number> {
    const members = [...new Set([...this.members, this.replica])].sort();
    const mine = new Set<number>();
    for (let shard = 0; shard < this.shards.count; shard++) if (shardOwner(shard, members) === this.replica) mine.add(shard);
    return mine;
  }

  private async balanceOnce(): Promise<void> {
    const lease = this.lease;
    if (this.stopping || !lease || this.suspended) return;
    const desired = this.desired();
    let converged = true;

    const surplus = [...this.held].filter((s) => !desired.has(s));
    if (surplus.length > 0) {
      await this.shards.deactivate(surplus, this.handoverDrainMs);
      await Promise.all(
        surplus.map(async (shard) => {
          try {
            await this.leases.release(shardLockKey(shard, this.prefix), lease);
            this.held.delete(shard);
          } catch (error) {
            converged = false;
            this.log.debug({ err: (error as Error).message, shard }, "could not release a shard");
          }
        }),
      );
      this.log.info({ shards: surplus.sort((a, b) => a - b), held: this.held.size }, "handed shards over");
    }

    // Held and wanted again, but idle (given up while a release failed): work on them again.
    const claimed = [...this.held].filter((s) => desired.has(s) && !this.shards.isActive(s));
    await Promise.all(
      [...desired]
        .filter((s) => !this.held.has(s))
        .map(async (shard) => {
          const lock = this.locks.get(shard);
          if (lock?.lease === lease) {
            this.held.add(shard);
            claimed.push(shard);
            return;
          }
          // Held by another replica: its release (or its lease's expiry) will show up on the watch.
          if (lock) return;
          try {
            if (await this.leases.claim(shardLockKey(shard, this.prefix), this.holderValue(lease), lease)) {
              this.held.add(shard);
              claimed.push(shard);
            }
          } catch (error) {
            converged = false;
            this.log.debug({ err: (error as Error).message, shard }, "could not claim a shard");
          }
        }),
    );
    if (claimed.length > 0 && lease === this.lease && !this.suspended && !this.stopping) {
      this.shards.activate(claimed);
      this.log.info({ shards: claimed.sort((a, b) => a - b), held: this.held.size }, "took shards");
    }
    if (!converged) this.retrySoon();
  }

  private retrySoon(): void {
    if (this.stopping || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.balance();
    }, this.retryMs);
    this.retryTimer.unref();
  }
}
