// Lists of resource quantities by name (Kubernetes' ResourceList) and the operations quota needs on
// them, with the semantics of k8s.io/apiserver/pkg/quota/v1: keys absent from one side are kept from the
// other, subtraction for an update's charge never goes below zero, and lists print sorted by name.
import { Quantity } from "./quantity.ts";

export type ResourceList = ReadonlyMap<string, Quantity>;

export function addLists(a: ResourceList, b: ResourceList): Map<string, Quantity> {
  const out = new Map(a);
  for (const [name, quantity] of b) out.set(name, out.get(name)?.add(quantity) ?? quantity);
  return out;
}

/** a − b per name, zero where that would be negative; names only in b count as zero. */
export function subtractNonNegative(a: ResourceList, b: ResourceList): Map<string, Quantity> {
  const zero = Quantity.zero();
  const out = new Map<string, Quantity>();
  for (const [name, quantity] of a) {
    const other = b.get(name);
    const difference = other ? quantity.sub(other) : quantity;
    out.set(name, difference.sign() > 0 ? difference : zero);
  }
  for (const name of b.keys()) if (!out.has(name)) out.set(name, zero);
  return out;
}

/** The larger quantity per name. */
export function maxLists(a: ResourceList, b: ResourceList): Map<string, Quantity> {
  const out = new Map(a);
  for (const [name, quantity] of b) {
    const current = out.get(name);
    out.set(name, current ? current.max(quantity) : quantity);
  }
  return out;
}

/** Only the names in `names`. */
export function mask(list: ResourceList, names: Iterable<string>): Map<string, Quantity> {
  const out = new Map<string, Quantity>();
  for (const name of names) {
    const quantity = list.get(name);
    if (quantity) out.set(name, quantity);
  }
  return out;
}

export function removeZeros(list: ResourceList): Map<string, Quantity> {
  return new Map([...list].filter(([, quantity]) => !quantity.isZero()));
}

/** The names whose quantity in `a` exceeds its limit in `limits` (names without a limit are never exceeded). */
export function exceeding(a: ResourceList, limits: ResourceList): string[] {
  const over: string[] = [];
  for (const [name, limit] of limits) {
    const quantity = a.get(name);
    if (quantity && quantity.cmp(limit) > 0) over.push(name);
  }
  return over.sort();
}

export function negativeNames(list: ResourceList): string[] {
  return [...list].filter(([, quantity]) => quantity.sign() < 0).map(([name]) => name).sort();
}

/** "pods=1,requests.cpu=500m", sorted by name, as quota errors print a list. */
export function prettyPrint(list: ResourceList): string {
  return [...list.keys()]
    .sort()
    .map((name) => `${name}=${list.get(name)?.toString() ?? ""}`)
    .join(",");
}

/** The list as a ResourceQuota stores it: canonical text by name, names sorted. */
export function toRecord(list: ResourceList): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [...list.keys()].sort()) out[name] = list.get(name)?.toString() ?? "0";
  return out;
}

/** A stored map of quantities, skipping values that are not quantities (validation refuses them on write). */
export function fromRecord(record: Readonly<Record<string, unknown>> | undefined): Map<string, Quantity> {
  const out = new Map<string, Quantity>();
  for (const [name, value] of Object.entries(record ?? {})) {
    const quantity = typeof value === "string" || typeof value === "number" ? Quantity.tryParse(value) : undefined;
    if (quantity) out.set(name, quantity);
  }
  return out;
}
