// metadata.managedFields: who manages which fields of an object. Every write records it as Kubernetes
// does. An update (create, PUT, non-apply PATCH) gives its manager the fields it changed and takes them
// from everyone else; an apply gives its manager exactly the fields of its configuration, refuses
// (unless forced) to change a field another manager holds, and removes fields the manager applied
// before and no longer does when no one else manages them.
import { FieldSet, displayPath } from "./field-set.ts";

export type Operation = "Apply" | "Update";

/**
 * One manager's record. Its fields stay in their stored form until an operation needs them as a set:
 * most writes touch the fields of one or two managers, and the others' records pass through untouched.
 */
export interface Manager {
  manager: string;
  operation: Operation;
  apiVersion: string;
  time?: string;
  subresource?: string;
  fieldsV1: Record<string, unknown>;
  /** The fields as a set, once decoded (see fieldsOfManager). */
  decoded?: FieldSet;
}

/** A record as stored in metadata.managedFields. */
export type ManagedFieldsEntry = {
  manager: string;
  operation: Operation;
  apiVersion: string;
  time?: string;
  fieldsType: "FieldsV1";
  fieldsV1: Record<string, unknown>;
  subresource?: string;
};

export function fieldsOfManager(m: Manager): FieldSet {
  m.decoded ??= FieldSet.fromFieldsV1(m.fieldsV1);
  return m.decoded;
}

/** A record with other fields (encoded now: a record's stored form is always at hand). */
export function withFields(m: Omit<Manager, "fieldsV1" | "decoded">, fields: FieldSet): Manager {
  return { ...m, fieldsV1: fields.toFieldsV1(), decoded: fields };
}

/** Managers are told apart by name, operation and subresource (and, for updates, API version). */
export function identityOf(m: Pick<Manager, "manager" | "operation" | "apiVersion" | "subresource">): string {
  return JSON.stringify([m.manager, m.operation, m.operation === "Update" ? m.apiVersion : "", m.subresource ?? ""]);
}

/**
 * Reads metadata.managedFields; undefined when it is not a valid record (it is then ignored, as
 * Kubernetes does). `check` decodes every record's fields to be sure of them (records a client sent);
 * the server's own records are decoded when needed.
 */
export function decodeManagedFields(entries: unknown, check = false): Manager[] | undefined {
  if (!Array.isArray(entries)) return undefined;
  const out: Manager[] = [];
  try {
    for (const e of entries as Record<string, unknown>[]) {
      if (typeof e !== "object" || e === null) return undefined;
      const operation = e.operation;
      if (Object.keys(e).length === 0) continue;
      if (operation !== "Apply" && operation !== "Update") return undefined;
      if (e.fieldsType !== undefined && e.fieldsType !== "FieldsV1") return undefined;
      const fieldsV1 = e.fieldsV1 ?? {};
      if (typeof fieldsV1 !== "object" || fieldsV1 === null || Array.isArray(fieldsV1)) return undefined;
      const manager: Manager = {
        manager: typeof e.manager === "string" ? e.manager : "",
        operation,
        apiVersion: typeof e.apiVersion === "string" ? e.apiVersion : "",
        ...(typeof e.time === "string" ? { time: e.time } : {}),
        ...(typeof e.subresource === "string" && e.subresource !== "" ? { subresource: e.subresource } : {}),
        fieldsV1: fieldsV1 as Record<string, unknown>,
      };
      if (check) fieldsOfManager(manager);
      out.push(manager);
    }
  } catch {
    return undefined;
  }
  return out;
}

/** The stored form: managers without fields left out, applies first, then by time, name, version, subresource. */
export function encodeManagedFields(managers: readonly Manager[]): ManagedFieldsEntry[] {
  return managers
    .filter((m) => Object.keys(m.fieldsV1).length > 0)
    .sort(
      (a, b) =>
        order(a.operation, b.operation) ||
        order(a.time ?? "", b.time ?? "") ||
        order(a.manager, b.manager) ||
        order(a.apiVersion, b.apiVersion) ||
        order(a.subresource ?? "", b.subresource ?? ""),
    )
    .map((m) => ({
      manager: m.manager,
      operation: m.operation,
      apiVersion: m.apiVersion,
      ...(m.time ? { time: m.time } : {}),
      fieldsType: "FieldsV1" as const,
      fieldsV1: m.fieldsV1,
      ...(m.subresource ? { subresource: m.subresource } : {}),
    }));
}

/** Whether a stored record holds any path of `set` (read from its stored form, without decoding it). */
function overlaps(set: FieldSet, fieldsV1: Record<string, unknown>): boolean {
  if (set.member && ("." in fieldsV1 || Object.keys(fieldsV1).length === 0)) return true;
  for (const [step, child] of set.children) {
    const stored = fieldsV1[step];
    if (typeof stored === "object" && stored !== null && overlaps(child, stored as Record<string, unknown>)) return true;
  }
  return false;
}

/** Whether a stored record holds every path of `set`. */
function covers(fieldsV1: Record<string, unknown>, set: FieldSet): boolean {
  if (set.member && !("." in fieldsV1 || Object.keys(fieldsV1).length === 0)) return false;
  for (const [step, child] of set.children) {
    const stored = fieldsV1[step];
    if (typeof stored !== "object" || stored === null || !covers(stored as Record<string, unknown>, child)) return false;
  }
  return true;
}

function order(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A field another manager holds that an apply would change. */
export interface Conflict {
  manager: Manager;
  path: string[];
}

/** How Kubernetes names a manager in a conflict: `"name"`, with its subresource, and for updates the version. */
export function describeManager(m: Manager): string {
  let text = JSON.stringify(m.manager);
  if (m.subresource) text += ` with subresource ${JSON.stringify(m.subresource)}`;
  if (m.operation === "Update") text += ` using ${m.apiVersion}`;
  return text;
}

/** The message of a refused apply, worded as kube-apiserver words it. */
export function conflictMessage(conflicts: readonly Conflict[]): string {
  if (conflicts.length === 1) {
    const c = conflicts[0]!;
    return `Apply failed with 1 conflict: conflict with ${describeManager(c.manager)}: ${displayPath(c.path)}`;
  }
  const byManager = new Map<string, string[]>();
  for (const c of conflicts) {
    const name = describeManager(c.manager);
    byManager.set(name, [...(byManager.get(name) ?? []), displayPath(c.path)]);
  }
  const lines: string[] = [];
  for (const name of [...byManager.keys()].sort()) {
    lines.push(`conflicts with ${name}:`);
    for (const path of byManager.get(name)!) lines.push(`- ${path}`);
  }
  return `Apply failed with ${conflicts.length} conflicts: ${lines.join("\n")}`;
}

/** The causes of a conflict's Status: `conflict with "manager"` for the field `.spec.x`. */
export function conflictCauses(conflicts: readonly Conflict[]): { message: string; field: string }[] {
  return conflicts.map((c) => ({ message: `conflict with ${describeManager(c.manager)}`, field: displayPath(c.path) }));
}

export interface Changes {
  added: FieldSet;
  removed: FieldSet;
  modified: FieldSet;
}

/**
 * The managers after a write that changed `changes`, by `writer` (an identity): every other manager
 * loses the fields that were removed and, unless `conflicts` is given to collect them instead, those
 * the write set or changed.
 */
function takeFields(managers: readonly Manager[], writer: string, changes: Changes, conflicts?: Conflict[]): Manager[] {
  const taken = changes.modified.union(changes.added);
  const lost = taken.union(changes.removed);
  return managers.map((m) => {
    if (identityOf(m) === writer || !overlaps(lost, m.fieldsV1)) return m;
    const fields = fieldsOfManager(m);
    if (conflicts) for (const path of fields.intersection(taken).paths()) conflicts.push({ manager: m, path });
    return withFields(m, fields.difference(lost));
  });
}

/**
 * The managers after an update by `writer`: it gains the fields it set or changed (and its record's
 * time moves), others lose them, and everyone loses what it removed.
 */
export function recordUpdate(managers: readonly Manager[], writer: Omit<Manager, "fieldsV1" | "operation" | "decoded">, changes: Changes): Manager[] {
  const identity = identityOf({ ...writer, operation: "Update" });
  const after = takeFields(managers, identity, changes);
  const existing = after.find((m) => identityOf(m) === identity);
  const gained = changes.modified.union(changes.added);
  // The writer's own earlier record loses what this write removed, like everyone else's.
  const kept = existing && overlaps(changes.removed, existing.fieldsV1) ? withFields(existing, fieldsOfManager(existing).difference(changes.removed)) : existing;
  if (gained.isEmpty()) return after.map((m) => (m === existing ? kept! : m));
  // A controller rewriting the fields it already holds (the usual status write) only moves its time.
  const record: Manager =
    kept && covers(kept.fieldsV1, gained)
      ? { ...kept, time: writer.time }
      : withFields({ ...writer, operation: "Update" }, kept ? fieldsOfManager(kept).union(gained) : gained);
  return [...after.filter((m) => m !== existing), record];
}

/**
 * The managers after an apply by `writer` whose configuration sets `applied` and changed the object by
 * `changes`; the conflicts it met (empty when forced, as the fields then change hands).
 */
export function recordApply(
  managers: readonly Manager[],
  writer: Omit<Manager, "fieldsV1" | "operation" | "decoded">,
  applied: FieldSet,
  changes: Changes,
  force: boolean,
): { managers: Manager[]; conflicts: Conflict[] } {
  const identity = identityOf({ ...writer, operation: "Apply" });
  const conflicts: Conflict[] = [];
  const after = takeFields(managers, identity, changes, force ? undefined : conflicts);
  if (conflicts.length > 0) return { managers: [...managers], conflicts };
  const record = withFields({ ...writer, operation: "Apply" }, applied);
  return { managers: [...after.filter((m) => identityOf(m) !== identity), record], conflicts: [] };
}
