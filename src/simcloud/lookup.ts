// Finding an account's resources: by id (NotFound when absent, in another region or of another account),
// by tags, and the checks every operation shares (a dependency must be ready; nothing may still use it).
import { checkRegion } from "./catalog.ts";
import type { CloudCore } from "./core.ts";
import { DependencyViolationError, NotFoundError } from "./errors.ts";
import type { RecordFor } from "./records.ts";
import type { AnyDescriptor, RecordOf, StoredResource } from "./resource-kinds.ts";
import { ListFilterSchema, checkInput, type ListFilter, type Tags } from "./schemas.ts";

export function findOwned<K extends string>(core: CloudCore, account: string, region: string, kind: K, id: string): RecordFor<K> {
  checkRegion(region);
  const record = core.state.get(kind, id);
  if (!record || record.account !== account || record.region !== region) {
    throw new NotFoundError(`${core.registry.noun(kind)} ${id} not found in ${region}`, { details: { kind, id } });
  }
  return record;
}

/** findOwned for the kind of a descriptor, typed by it (also for kinds registered beside the built-in ones). */
export function findOwnedOf<D extends AnyDescriptor>(core: CloudCore, account: string, region: string, descriptor: D, id: string): RecordOf<D> {
  return findOwned(core, account, region, descriptor.kind, id) as RecordOf<D>;
}

export function hasTags(tags: Tags, wanted: Tags | undefined): boolean {
  return Object.entries(wanted ?? {}).every(([key, value]) => tags[key] === value);
}

export function listOwned<K extends string>(core: CloudCore, account: string, region: string, kind: K, filter: ListFilter = {}): RecordFor<K>[] {
  checkRegion(region);
  const { tags } = checkInput(ListFilterSchema, filter, "filter");
  const candidates = core.tagged.find(kind, tags) as RecordFor<K>[];
  return candidates.filter((r) => r.account === account && r.region === region && hasTags(r.tags, tags));
}

/** A resource another one is built on must have finished creating. */
export function requireReady(core: CloudCore, record: StoredResource): void {
  if (record.state === "available" || record.state === "active" || record.state === "running") return;
  throw new DependencyViolationError(
    `${core.registry.noun(record.kind)} ${record.id} is ${record.state}; retry once it is available`,
    { details: { kind: record.kind, id: record.id, state: record.state } },
  );
}

/** Refuses to delete `record` while `dependents` exist, naming a few of them. */
export function requireUnused(core: CloudCore, record: StoredResource, dependents: StoredResource[]): void {
  if (dependents.length === 0) return;
  const named = dependents.slice(0, 3).map((d) => `${core.registry.noun(d.kind)} ${d.id}`);
  const more = dependents.length > 3 ? ` and ${dependents.length - 3} more` : "";
  throw new DependencyViolationError(`${core.registry.noun(record.kind)} ${record.id} is still used by ${named.join(", ")}${more}`, {
    details: { kind: record.kind, id: record.id, dependents: dependents.map((d) => d.id) },
  });
}
