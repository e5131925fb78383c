// Follows the cloud's instance state changes (Machines.instanceChanges, a cloud's event feed) for every
// Connection, and queues the machines whose instance changed: an instance that dies or is terminated
// behind Slipway's back is looked at within a poll interval, and one that starts running is seen at once.
// Where the feed answers, a Running machine's periodic health check is only a slow safety net
// (MachineTimings.followedHealthCheckMs); a provider without a feed keeps the fast one.
import type { ConnectionObject, MachineObject } from "../../api/kinds.ts";
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
}

export interface InstanceWatchOptions {
  connections: ObjectCache<ConnectionObject>;
  /** The machines' cache, with MACHINE_INSTANCE_INDEX. */
  machines: ObjectCache<MachineObject>;
  providers: ProviderResolver;
  enqueue: (key: string) => void;
  intervalMs: number;
  onError?: (connection: string, error: unknown) => void;
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
  private timer?: NodeJS.Timeout;
  private polling = false;

  constructor(private readonly options: InstanceWatchOptions) {
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
      if (first) return;
      if (answer.changed === "all") {
        for (const machine of this.options.machines.list()) {
          if (machine.metadata.namespace === namespace && machine.spec.connection === name && machine.status?.instanceId) this.options.enqueue(keyFor(namespace, machine.metadata.name!));
        }
        return;
      }
      for (const id of answer.changed) {
        const instanceKey = instanceIndexKey(namespace, name!, id);
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
