// Follows the cloud's instance state changes (Machines.instanceChanges, a cloud's event feed) for every
// Connection, and queues the machines whose instance changed: an instance that dies or is terminated
// behind Slipway's back is looked at within a poll interval, and one that starts running is seen at once.
// Where the feed answers, a Running machine's periodic health check is only a slow safety net
// (MachineTimings.followedHealthCheckMs); a provider without a feed keeps the fast one. And a machine's
// reconciles soon after one that saw its instance running take it for running without asking the cloud
// again, until the feed tells of a change to it (`instance`).
import { BoundedCache } from "../../api/bounded-cache.ts";
import type { ConnectionObject, MachineObject } from "../../api/kinds.ts";
import type { InstanceInfo } from "../../providers/provider.ts";
import type { ObjectCache } from "../../runtime/cache.ts";
import type { EventSource } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ProviderResolver } from "../providers.ts";

/** Machines by "<namespace>/<connection>" and instance id. */
export const MACHINE_INSTANCE_INDEX = "machine-controller.instance";

export function instanceIndexKey(namespace: string | undefined, connection: string, instanceId: string): string {
  return `${keyFor(namespace, connection)}\u0000${instanceId}`;
}

interface Feed {
  /** Where the next question starts; undefined until the feed first answered. */
  cursor?: string;
  /** The Connection version found without a feed (its provider has none, or it cannot be opened now). */
  noFeedAt?: string;
  /** When the feed last said that anything of the connection may have changed (its first answer, or "all"). */
  resetAt?: number;
}

/** An instance seen running (read from `readAt` on), or when the feed last told of a change to it. */
type Sighting = { info: InstanceInfo; readAt: number } | { changedAt: number };

export interface InstanceWatchOptions {
  connections: ObjectCache<ConnectionObject>;
  /** The machines' cache, with MACHINE_INSTANCE_INDEX. */
  machines: ObjectCache<MachineObject>;
  providers: ProviderResolver;
  enqueue: (key: string) => void;
  intervalMs: number;
  /**
   * How long an instance seen running is taken for running without asking the cloud, while the feed tells
   * of no change to it (default 0: never). Shorter than a Running machine's health check, which reads.
   */
  runningForMs?: number;
  onError?: (connection: string, error: unknown) => void;
  now?: () => number;
}

/** How long a change of an instance no machine records yet is kept for the machine that will. */
const UNMATCHED_MS = 5 * 60_000;

export class InstanceWatch implements EventSource {
  private readonly feeds = new Map<string, Feed>();
  /**
   * Changes of instances no machine in the cache records (yet): a machine's status naming its new
   * instance can reach the cache after the instance's first changes, which must not be lost.
   */
  private readonly unmatched = new Map<string, number>();
  /** By instance key: what `instance` may answer without the cloud, and the changes that end it. */
  private readonly sightings = new BoundedCache<Sighting>(65_536);
  private readonly now: () => number;
  private timer?: NodeJS.Timeout;
  private polling = false;

  constructor(private readonly options: InstanceWatchOptions) {
    this.now = options.now ?? Date.now;
    options.machines.addIndex(MACHINE_INSTANCE_INDEX, (m) => (m.status?.instanceId ? [instanceIndexKey(m.metadata.namespace, m.spec.connection, m.status.instanceId)] : []));
  }

  start(): void {
    this.timer = setInterval(() => void this.pollAll(), this.options.intervalMs);
    this.timer.unref();
    void this.pollAll();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** A machine as the cache now holds it: queued if its instance changed before the cache knew it as its own. */
  seen(machine: MachineObject): void {
    const id = machine.status?.instanceId;
    if (!id || this.unmatched.size === 0) return;
    const key = instanceIndexKey(machine.metadata.namespace, machine.spec.connection, id);
    if (this.unmatched.delete(key)) this.options.enqueue(keyFor(machine.metadata.namespace, machine.metadata.name!));
  }

  /**
   * Whether the instance changes of a connection reach the controller: its feed has answered, so any
   * change from now on is delivered (a feed that fails for a while delivers what it missed once it
   * answers again, from the same cursor).
   */
  follows(namespace: string | undefined, connection: string): boolean {
    return this.feeds.get(keyFor(namespace, connection))?.cursor !== undefined;
  }

  /**
   * The instance of a machine: as a reconcile last saw it running, if the feed follows its connection,
   * has told of no change to it since that read began, and the read was within `runningForMs`; otherwise
   * as `read` answers, which is remembered if running.
   */
  async instance(namespace: string | undefined, connection: string, id: string, read: () => Promise<InstanceInfo | undefined>): Promise<InstanceInfo | undefined> {
    const key = instanceIndexKey(namespace, connection, id);
    const feed = () => this.feeds.get(keyFor(namespace, connection));
    const resetAt = () => feed()?.resetAt ?? -Infinity;
    const ttl = this.options.runningForMs ?? 0;
    const sighting = this.sightings.get(key);
    const readAt = this.now();
    if (sighting && "info" in sighting && feed()?.cursor !== undefined && readAt - sighting.readAt < ttl && sighting.readAt > resetAt()) return sighting.info;
    const instance = await read();
    if (ttl <= 0) return instance;
    const since = this.sightings.get(key);
    // A change told of after the read began may be newer than what the read answered.
    const changedSince = (since !== undefined && "changedAt" in since && since.changedAt >= readAt) || resetAt() >= readAt;
    if (instance?.state === "ready" && !changedSince) this.sightings.set(key, { info: instance, readAt });
    else if (since !== undefined && "info" in since) this.sightings.delete(key);
    return instance;
  }

  /** One round over every Connection; a round still running when the next is due is not doubled. */
  async pollAll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const connections = this.options.connections.list();
      const known = new Set(connections.map((c) => keyFor(c.metadata.namespace, c.metadata.name!)));
      const expired = Date.now() - UNMATCHED_MS;
      for (const [key, at] of this.unmatched) if (at < expired) this.unmatched.delete(key);
      for (const key of this.feeds.keys()) if (!known.has(key)) this.feeds.delete(key);
      await Promise.all(connections.map((connection) => this.poll(connection)));
    } finally {
      this.polling = false;
    }
  }

  private async poll(connection: ConnectionObject): Promise<void> {
    const { namespace, name } = connection.metadata;
    const key = keyFor(namespace, name!);
    let feed = this.feeds.get(key);
    if (!feed) this.feeds.set(key, (feed = {}));
    if (feed.noFeedAt !== undefined && feed.noFeedAt === connection.metadata.resourceVersion) return;
    let machines;
    try {
      machines = await this.options.providers.capability(connection, "machines");
    } catch {
      // Not usable now (credentials, provider): tried again when the Connection changes.
      feed.noFeedAt = connection.metadata.resourceVersion ?? "";
      delete feed.cursor;
      return;
    }
    if (!machines.instanceChanges) {
      feed.noFeedAt = connection.metadata.resourceVersion ?? "";
      delete feed.cursor;
      return;
    }
    delete feed.noFeedAt;
    try {
      const first = feed.cursor === undefined;
      const answer = await machines.instanceChanges(feed.cursor);
      feed.cursor = answer.cursor;
      // What was seen before the feed answered first, or before it lost track, may have changed unseen.
      if (first || answer.changed === "all") feed.resetAt = this.now();
      if (first) return;
      if (answer.changed === "all") {
        for (const machine of this.options.machines.list()) {
          if (machine.metadata.namespace === namespace && machine.spec.connection === name && machine.status?.instanceId) this.options.enqueue(keyFor(namespace, machine.metadata.name!));
        }
        return;
      }
      const changedAt = this.now();
      for (const id of answer.changed) {
        const instanceKey = instanceIndexKey(namespace, name!, id);
        if (this.options.runningForMs) this.sightings.set(instanceKey, { changedAt });
        const machineKeys = this.options.machines.indexKeys(MACHINE_INSTANCE_INDEX, instanceKey);
        if (machineKeys.length === 0) this.unmatched.set(instanceKey, Date.now());
        for (const machineKey of machineKeys) this.options.enqueue(machineKey);
      }
    } catch (error) {
      // The cursor stays: what changed meanwhile comes with the next answer.
      this.options.onError?.(key, error);
    }
  }
}
