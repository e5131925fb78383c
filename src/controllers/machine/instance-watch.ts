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

export class InstanceWatch implements EventSource {
  private readonly feeds = new Map<string, Feed>();
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
        for (const machineKey of this.options.machines.indexKeys(MACHINE_INSTANCE_INDEX, instanceIndexKey(namespace, name!, id))) this.options.enqueue(machineKey);
      }
    } catch (error) {
      // The cursor stays: what changed meanwhile comes with the next answer.
      this.options.onError?.(key, error);
    }
  }
}
