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
  /** The last `capacity` changes, a ring: change n is at (n - 1) % capacity. */
  private readonly ring: (Entry | undefined)[];
  /** The sequence number the next change gets. */
  private next = 1;
  /** Last state seen per instance, to tell a state change from any other write. */
  private readonly states = new Map<string, string>();
  /** Differs per start of the cloud: a sequence number from an earlier start means nothing now. */
  readonly epoch = `${Date.now().toString(36)}-${Math.floor(Math.random() * 2 ** 32).toString(36)}`;

  constructor(
    state: StateStore,
    private readonly capacity = 100_000,
  ) {
    this.ring = new Array<Entry | undefined>(capacity);
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
    // A ring, not an array shifted once full: each change past the capacity then cost a move of every
    // entry kept (a quarter of the sim cloud's time while 40,000 instances were deleted).
    this.ring[(this.next - 1) % this.capacity] = { instanceId: record.id, state: after, account: record.account, region: record.region };
    this.next++;
  }

  /** The sequence number of the last change (0 before any). */
  get last(): number {
    return this.next - 1;
  }

  /** The sequence number of the oldest change kept. */
  private get first(): number {
    return Math.max(1, this.next - this.capacity);
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
      const entry = this.ring[(seq - 1) % this.capacity]!;
      if (entry.account === account && entry.region === region) events.push({ instanceId: entry.instanceId, state: entry.state });
    }
    return { epoch: this.epoch, cursor, events, reset: false };
  }
}
