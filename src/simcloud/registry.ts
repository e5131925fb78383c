// The kinds of resource one cloud serves, and what follows from them: every operation's name and whether
// it changes state, id prefixes, the nouns of messages, views, quota contributions and listing order.
import type { CloudCore } from "./core.ts";
import { CATALOG_OPERATIONS, type OperationCatalog, type OperationKind } from "./operations.ts";
import { operationNames, type AnyDescriptor, type ResourceView, type StoredResource } from "./resource-kinds.ts";
import type { QuotaLimits } from "./types.ts";
import { plainView } from "./views.ts";

export class ResourceRegistry implements OperationCatalog {
  private readonly byKind = new Map<string, AnyDescriptor>();
  private readonly operations = new Map<string, OperationKind>(Object.entries(CATALOG_OPERATIONS));

  /** Refuses two kinds with the same name, collection, id prefix or operation name. */
  constructor(readonly descriptors: readonly AnyDescriptor[]) {
    const collections = new Set<string>();
    const prefixes = new Set<string>();
    for (const descriptor of descriptors) {
      const clash = (what: string) => new Error(`resource kind "${descriptor.kind}": ${what} is registered twice`);
      if (this.byKind.has(descriptor.kind)) throw clash("the kind");
      if (collections.has(descriptor.collection)) throw clash(`the collection "${descriptor.collection}"`);
      if (prefixes.has(descriptor.idPrefix)) throw clash(`the id prefix "${descriptor.idPrefix}"`);
      this.byKind.set(descriptor.kind, descriptor);
      collections.add(descriptor.collection);
      prefixes.add(descriptor.idPrefix);
      const names = operationNames(descriptor);
      if (names.deleteIsAction && !names.actions.includes(names.delete)) {
        throw new Error(`resource kind "${descriptor.kind}": its delete names the action "${names.delete}", which it does not have`);
      }
      const mutating = [names.create, ...(names.deleteIsAction ? [] : [names.delete]), ...names.actions];
      const operations: [string, OperationKind][] = [...mutating.map((n): [string, OperationKind] => [n, "mutating"]), [names.get, "describe"], [names.list, "describe"]];
      for (const [name, kind] of operations) {
        if (this.operations.has(name)) throw clash(`the operation "${name}"`);
        this.operations.set(name, kind);
      }
    }
  }

  descriptor(kind: string): AnyDescriptor | undefined {
    return this.byKind.get(kind);
  }

  /** Whether this descriptor (not just one of the same kind) is registered. */
  has(descriptor: AnyDescriptor): boolean {
    return this.byKind.get(descriptor.kind) === descriptor;
  }

  operationKind(name: string): OperationKind | undefined {
    return this.operations.get(name);
  }

  /** How messages name a resource of the kind ("security group"). */
  noun(kind: string): string {
    return this.byKind.get(kind)?.noun ?? kind;
  }

  idPrefix(kind: string): string {
    const descriptor = this.byKind.get(kind);
    if (!descriptor) throw new Error(`resource kind "${kind}" is not registered`);
    return descriptor.idPrefix;
  }

  /** The view of any record (records of a kind no longer registered show their stored fields). */
  view(core: CloudCore, record: StoredResource): ResourceView {
    const descriptor = this.byKind.get(record.kind);
    return descriptor ? descriptor.view(core, record) : plainView(record);
  }

  /** What a record counts against its account's quota in its region. */
  quotaOf(record: StoredResource): Partial<QuotaLimits> | undefined {
    return this.byKind.get(record.kind)?.quota?.(record);
  }

  /** The kind's place in listings (registration order; unregistered kinds last). */
  order(kind: string): number {
    const index = this.descriptors.findIndex((d) => d.kind === kind);
    return index < 0 ? this.descriptors.length : index;
  }
}
