// metadata.managedFields: who manages which fields of an object. Every write records it as Kubernetes
// does. An update (create, PUT, non-apply PATCH) gives its manager the fields it changed and takes them
// from everyone else; an apply gives its manager exactly the fields of its configuration, refuses
// (unless forced) to change a field another manager holds, and removes fields the manager applied
// before and no longer does when no one else manages them.
import { FieldSet, displayPath } from "./field-set.ts";

export type Operation = "Apply" | "Update";

/** One manager's record, its fields decoded. */
export interface Manager {
  manager: string;
  operation: Operation;
  apiVersion: string;
  time?: string;
  subresource?: string;
  fields: FieldSet;
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

/** Managers are told apart by name, operation and subresource (and, for updates, API version). */
export function identityOf(m: Pick<Manager, "manager" | "operation" | "apiVersion" | "subresource">): string {
  return JSON.stringify([m.manager, m.operation, m.operation === "Update" ? m.apiVersion : "", m.subresource ?? ""]);
}

/** Decodes metadata.managedFields; undefined when it is not a valid record (it is then ignored, as Kubernetes does). */
export function decodeManagedFields(entries: unknown): Manager[] | undefined {
  if (!Array.isArray(entries)) return undefined;
  const out: Manager[] = [];
  try {
    for (const e of entries as Record<string, unknown>[]) {
      if (typeof e !== "object" || e === null) return undefined;
      const operation = e.operation;
      if (Object.keys(e).length === 0) continue;
      if (operation !== "Apply" && operation !== "Update") return undefined;
      if (e.fieldsType !== undefined && e.fieldsType !== "FieldsV1") return undefined;
      out.push({
        manager: typeof e.manager === "string" ? e.manager : "",
        operation,
        apiVersion: typeof e.apiVersion === "string" ? e.apiVersion : "",
        ...(typeof e.time === "string" ? { time: e.time } : {}),
        ...(typeof e.subresource === "string" && e.subresource !== "" ? { subresource: e.subresource } : {}),
        fields: FieldSet.fromFieldsV1(e.fieldsV1 ?? {}),
      });
    }
  } catch {
    return undefined;
  }
  return out;
}

/** The stored form: managers without fields left out, applies first, then by time, name, version, subresource. */
export function encodeManagedFields(managers: readonly Manager[]): ManagedFieldsEntry[] {
  return managers
    .filter((m) => !m.fields.isEmpty())
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
      fieldsV1: m.fields.toFieldsV1(),
      ...(m.subresource ? { subresource: m.subresource } : {}),
    }));
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
  return managers.map((m) => {
    if (identityOf(m) === writer) return m;
    const lost = m.fields.intersection(taken);
    if (conflicts && !lost.isEmpty()) for (const path of lost.paths()) conflicts.push({ manager: m, path });
    const fields = m.fields.difference(taken).difference(changes.removed);
    return fields.equals(m.fields) ? m : { ...m, fields };
  });
}

/**
 * The managers after an update by `writer`: it gains the fields it set or changed (and its record's
 * time moves), others lose them, and everyone loses what it removed.
 */
export function recordUpdate(managers: readonly Manager[], writer: Omit<Manager, "fields" | "operation">, changes: Changes): Manager[] {
  const identity = identityOf({ ...writer, operation: "Update" });
  // The writer's own earlier record loses what this write removed, like everyone else's.
  const others = takeFields(managers, "", { ...changes, modified: new FieldSet(), added: new FieldSet() });
  const after = takeFields(others, identity, changes);
  const gained = changes.modified.union(changes.added);
  if (gained.isEmpty()) return after;
  const existing = after.find((m) => identityOf(m) === identity);
  const record: Manager = { ...writer, operation: "Update", fields: existing ? existing.fields.union(gained) : gained };
  return [...after.filter((m) => m !== existing), record];
}

/**
 * The managers after an apply by `writer` whose configuration sets `applied` and changed the object by
 * `changes`; the conflicts it met (empty when forced, as the fields then change hands).
 */
export function recordApply(
  managers: readonly Manager[],
  writer: Omit<Manager, "fields" | "operation">,
  applied: FieldSet,
  changes: Changes,
  force: boolean,
): { managers: Manager[]; conflicts: Conflict[] } {
  const identity = identityOf({ ...writer, operation: "Apply" });
  const conflicts: Conflict[] = [];
  const after = takeFields(managers, identity, changes, force ? undefined : conflicts);
  if (conflicts.length > 0) return { managers: [...managers], conflicts };
  const record: Manager = { ...writer, operation: "Apply", fields: applied };
  return { managers: [...after.filter((m) => identityOf(m) !== identity), record], conflicts: [] };
}
