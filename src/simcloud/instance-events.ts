// A feed of instance state changes, as a cloud's event bus delivers them (EC2's instance state-change
// notifications): every change of an instance's state gets the next sequence number, and a client asks
// for the changes after the last number it saw. A controller following thousands of running instances
// then reads one short answer a second per region instead of asking about each instance in turn.
//
// The feed is held in memory for the last `capacity` changes: a client whose number is older than the
// oldest kept (or from before a restart of the cloud) is told to look at every instance again.
import type { StoredResource } from "./resource-kinds.ts";
import type { StateStore } from "./state.ts";
import type { InstanceEvent, InstanceEvents } from "./types.ts";

interface Entry extends InstanceEvent {
  account: string;
  region: string;
}

export class InstanceEventLog {
  private readonly entries: Entry[] = [];
  /** The sequence number of entries[0]. */
  private first = 1;
  /** Last state seen per instance, to tell a state change from any other write. */
  private readonly states = new Map<string, string>();
  /** Differs per start of the cloud: a sequence number from an earlier start means nothing now. */
  readonly epoch = `${Date.now().toString(36)}-${Math.floor(Math.random() * 2 ** 32).toString(36)}`;

  constructor(
    state: StateStore,
    private readonly capacity = 100_000,
  ) {
    for (const record of state.all("instance")) this.states.set(record.id, record.state);
    state.onChange((record, removed) => {
      if (record.kind === "instance") this.observe(record, removed);
    });
  }

  private observe(record: StoredResource, removed: boolean): void {
    const before = this.states.get(record.id);
    const after = removed ? "gone" : record.state;
    if (removed) this.states.delete(record.id);
    else this.states.set(record.id, after);
    if (before === after) return;
    this.entries.push({ instanceId: record.id, state: after, account: record.account, region: record.region });
    if (this.entries.length > this.capacity) {
      const drop = this.entries.length - this.capacity;
      this.entries.splice(0, drop);
      this.first += drop;
    }
  }

  /** The sequence number of the last change (0 before any). */
  get last(): number {
    return this.first + this.entries.length - 1;
  }

  /**
   * The account's changes in `region` after `after` (from the same epoch), up to `limit`. Without `after`,
   * or with one this log cannot answer from, `reset` says every instance must be looked at again.
   */
  since(account: string, region: string, after: number | undefined, epoch: string | undefined, limit = 1000): InstanceEvents {
    const last = this.last;
    if (after === undefined || epoch !== this.epoch || after < this.first - 1 || after > last) {
      return { epoch: this.epoch, cursor: last, events: [], reset: after !== undefined };
    }
    const events: InstanceEvent[] = [];
    let cursor = after;
    for (let seq = after + 1; seq <= last && events.length < limit; seq++) {
      cursor = seq;
      const entry = this.entries[seq - this.first]!;
      if (entry.account === account && entry.region === region) events.push({ instanceId: entry.instanceId, state: entry.state });
    }
    return { epoch: this.epoch, cursor, events, reset: false };
  }
}
