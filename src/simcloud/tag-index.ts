// The sim cloud's resources by tag, kept current as they change: finding a cluster's network or load
// balancer by its tags walked every resource of the kind (tens of thousands in a large fleet) per call.
import type { StoredResource } from "./resource-kinds.ts";
import type { Tags } from "./schemas.ts";
import type { StateStore } from "./state.ts";

export class TagIndex {
  /** Ids by "<kind> <key>=<value>", in the order they were first tagged. */
  private readonly ids = new Map<string, Set<string>>();
  /** The entries each resource is in. */
  private readonly entries = new Map<string, string[]>();

  constructor(private readonly state: StateStore) {
    for (const record of state.everything()) this.update(record, false);
    state.onChange((record, removed) => this.update(record, removed));
  }

  /** Resources of the kind carrying every wanted tag (all of the kind when none are wanted). */
  find(kind: string, wanted: Tags | undefined): StoredResource[] {
    const pairs = Object.entries(wanted ?? {});
    if (pairs.length === 0) return this.state.all(kind);
    let smallest: Set<string> | undefined;
    for (const [key, value] of pairs) {
      const ids = this.ids.get(entryOf(kind, key, value));
      if (!ids) return [];
      if (!smallest || ids.size < smallest.size) smallest = ids;
    }
    const found: StoredResource[] = [];
    for (const id of smallest!) {
      const record = this.state.get(kind, id);
      if (record && pairs.every(([key, value]) => tagsOf(record)[key] === value)) found.push(record);
    }
    return found;
  }

  private update(record: StoredResource, removed: boolean): void {
    for (const entry of this.entries.get(record.id) ?? []) {
      const ids = this.ids.get(entry);
      ids?.delete(record.id);
      if (ids?.size === 0) this.ids.delete(entry);
    }
    this.entries.delete(record.id);
    if (removed) return;
    const entries = Object.entries(tagsOf(record)).map(([key, value]) => entryOf(record.kind, key, value));
    for (const entry of entries) {
      let ids = this.ids.get(entry);
      if (!ids) this.ids.set(entry, (ids = new Set()));
      ids.add(record.id);
    }
    if (entries.length > 0) this.entries.set(record.id, entries);
  }
}

function entryOf(kind: string, key: string, value: string): string {
  return `${kind} ${key}=${value}`;
}

function tagsOf(record: StoredResource): Tags {
  return ("tags" in record ? (record.tags as Tags | undefined) : undefined) ?? {};
}
