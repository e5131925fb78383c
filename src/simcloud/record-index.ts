// Records of one kind by a key of theirs (an instance's subnet, a load balancer's DNS name), kept current
// as they change. Creating an instance, reading a subnet or running kubeadm looked these up by walking
// every record of the kind: with tens of thousands of instances, that made a fleet quadratic.
import type { RecordFor } from "./records.ts";
import type { StoredResource } from "./resource-kinds.ts";
import type { StateStore } from "./state.ts";

export class RecordIndex<K extends string> {
  private readonly ids = new Map<string, Set<string>>();
  private readonly keysById = new Map<string, string[]>();

  constructor(
    private readonly state: StateStore,
    private readonly kind: K,
    private readonly keysOf: (record: RecordFor<K>) => readonly string[],
  ) {
    for (const record of state.all(kind)) this.update(record, false);
    state.onChange((record, removed) => {
      if (record.kind === kind) this.update(record, removed);
    });
  }

  /** How many records have that key. */
  count(key: string): number {
    return this.ids.get(key)?.size ?? 0;
  }

  /** The records with that key, in the order they first had it. */
  get(key: string): RecordFor<K>[] {
    const found: RecordFor<K>[] = [];
    for (const id of this.ids.get(key) ?? []) {
      const record = this.state.get(this.kind, id);
      if (record) found.push(record);
    }
    return found;
  }

  private update(record: StoredResource, removed: boolean): void {
    for (const key of this.keysById.get(record.id) ?? []) {
      const ids = this.ids.get(key);
      ids?.delete(record.id);
      if (ids?.size === 0) this.ids.delete(key);
    }
    this.keysById.delete(record.id);
    if (removed) return;
    const keys = [...this.keysOf(record as RecordFor<K>)];
    for (const key of keys) {
      let ids = this.ids.get(key);
      if (!ids) this.ids.set(key, (ids = new Set()));
      ids.add(record.id);
    }
    if (keys.length > 0) this.keysById.set(record.id, keys);
  }
}
