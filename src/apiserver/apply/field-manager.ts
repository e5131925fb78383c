// The field manager of the object service: records metadata.managedFields on every write and computes
// what a server-side apply makes of the live object. Only the fields a client owns count: the
// server's own metadata (name, uid, resourceVersion …) never does, a write of the main resource never
// counts status when the kind has a status subresource, and a write of /status counts only status.
import type { KindDefinition } from "../../api/registry.ts";
import type { KubeObject } from "../../api/meta.ts";
import { apiVersionOf } from "../../api/registry.ts";
import { ApplyConflictError, BadRequestError } from "../errors.ts";
import { FieldSet } from "./field-set.ts";
import { conflictCauses, conflictMessage, decodeManagedFields, encodeManagedFields, fieldsOfManager, identityOf, recordApply, recordUpdate, type Manager } from "./managed-fields.ts";
import { compare, fieldsOf, FieldPathError, merge, removeFields, sameValue, type TypedFields } from "./typed.ts";

type Schema = Record<string, unknown>;

/** Metadata the server owns: never anyone's field (as Kubernetes strips them). */
const SERVER_METADATA = ["name", "namespace", "creationTimestamp", "selfLink", "uid", "generation", "managedFields", "resourceVersion"];

export interface ManagedWrite {
  /** The field manager of the write. */
  manager: string;
  /** Set for a write of the status or the scale subresource. */
  subresource?: "status" | "scale";
  /** When the write happens (RFC 3339), recorded for the managers it changes. */
  time: string;
}

/** The part of an object whose fields a write of the main resource or of a subresource owns. */
function owned(def: KindDefinition, object: KubeObject, subresource: "status" | "scale" | undefined): Record<string, unknown> {
  const { apiVersion: _a, kind: _k, metadata, status, ...rest } = object;
  if (subresource === "status") return status === undefined ? {} : { status };
  const out: Record<string, unknown> = rest;
  const meta: Record<string, unknown> = { ...metadata };
  for (const name of SERVER_METADATA) delete meta[name];
  if (Object.keys(meta).length > 0) out.metadata = meta;
  if (!def.subresources.status && status !== undefined) out.status = status;
  return out;
}

function typed(def: KindDefinition, object: KubeObject | undefined, write: ManagedWrite, strictKeys = false): TypedFields {
  return fieldsOf(object ? owned(def, object, write.subresource) : {}, def.schema as Schema, { strictKeys });
}

function managersOf(object: KubeObject | undefined): Manager[] {
  return (object && decodeManagedFields(object.metadata.managedFields)) ?? [];
}

function setManagedFields(object: KubeObject, managers: readonly Manager[]): void {
  const entries = encodeManagedFields(managers);
  if (entries.length > 0) object.metadata.managedFields = entries;
  else delete object.metadata.managedFields;
}

/**
 * Records an update (create when `live` is undefined) in `next`'s managedFields. Records a client sent
 * replace the live ones (how they are reset); an empty list, or records that do not decode, leave them
 * as they are, so clients that do not know the field cannot lose it.
 */
export function recordWrite(def: KindDefinition, live: KubeObject | undefined, next: KubeObject, write: ManagedWrite): void {
  const sent = next.metadata.managedFields;
  const sentOwn = live !== undefined && write.subresource === undefined && Array.isArray(sent) && sent.length > 0 && JSON.stringify(sent) !== JSON.stringify(live.metadata.managedFields);
  const fromClient = sentOwn ? decodeManagedFields(sent, true) : undefined;
  // A write that changes nothing its manager could own (a controller's status write that finds
  // nothing new) leaves the record as it is, without walking the object.
  const same = !fromClient && live !== undefined && sameValue(owned(def, live, write.subresource), owned(def, next, write.subresource));
  const changes = same ? undefined : compare(typed(def, live, write), typed(def, next, write));
  if (!fromClient && live && (!changes || (changes.added.isEmpty() && changes.removed.isEmpty() && changes.modified.isEmpty()))) {
    if (live.metadata.managedFields === undefined) delete next.metadata.managedFields;
    else next.metadata.managedFields = live.metadata.managedFields;
    return;
  }
  const base = live ? (fromClient ?? managersOf(live)) : [];
  setManagedFields(next, recordUpdate(base, writer(def, write), changes!));
}

function writer(def: KindDefinition, write: ManagedWrite): Omit<Manager, "fieldsV1" | "operation" | "decoded"> {
  return { manager: write.manager, apiVersion: apiVersionOf(def), time: write.time, ...(write.subresource ? { subresource: write.subresource } : {}) };
}

export interface ApplyOptions extends ManagedWrite {
  /** Take fields other managers hold instead of failing with a conflict. */
  force: boolean;
}

/**
 * The object a server-side apply of `config` makes of `live` (a create when undefined), with its
 * managedFields; throws ApplyConflictError when it would change fields others manage and is not forced.
 * Returns `live` itself when the apply changes nothing.
 */
export function applyConfiguration(def: KindDefinition, live: KubeObject | undefined, config: KubeObject, options: ApplyOptions): KubeObject {
  if (config.metadata.managedFields !== undefined) {
    throw new BadRequestError("metadata.managedFields must be nil", [{ reason: "FieldValueForbidden", message: "must be nil", field: "metadata.managedFields" }]);
  }
  const ownedConfig = owned(def, config, options.subresource);
  let applied: FieldSet;
  try {
    applied = fieldsOf(ownedConfig, def.schema as Schema, { strictKeys: true }).set;
  } catch (e) {
    if (e instanceof FieldPathError) throw new BadRequestError(`the applied configuration is invalid: ${e.message}`, [{ reason: "FieldValueInvalid", message: e.message, field: e.path.slice(1) }]);
    throw e;
  }
  const identity = identityOf({ manager: options.manager, operation: "Apply", apiVersion: "", subresource: options.subresource });
  const managers = managersOf(live);
  const previous = managers.find((m) => identityOf(m) === identity);
  const others = managers.filter((m) => m !== previous).reduce((all, m) => all.union(fieldsOfManager(m)), new FieldSet());
  let next = (live ? merge(live, ownedConfig, def.schema as Schema) : { ...config, metadata: { ...config.metadata } }) as KubeObject;
  if (previous) {
    const dropped = fieldsOfManager(previous).difference(applied).difference(others);
    if (!dropped.isEmpty()) next = removeFields(next, dropped, applied.union(others), def.schema as Schema) as KubeObject;
  }
  if (config.metadata.resourceVersion) next.metadata.resourceVersion = config.metadata.resourceVersion;
  const changes = compare(typed(def, live, options), typed(def, next, options));
  let result = recordApply(managers, writer(def, options), applied, changes, options.force);
  if (result.conflicts.length > 0 && live && takesOverClientSideApply(def, live, options, result.conflicts.map((c) => c.path))) {
    result = recordApply(managers, writer(def, options), applied, changes, true);
  }
  if (result.conflicts.length > 0) throw new ApplyConflictError(conflictMessage(result.conflicts), conflictCauses(result.conflicts));
  if (live && unchanged(live, next, managers, result.managers)) return live;
  setManagedFields(next, result.managers);
  return next;
}

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/**
 * Whether `kubectl apply --server-side` may take over fields it conflicts on because kubectl applied
 * them client-side before (as kube-apiserver lets it): the object's last-applied configuration still
 * holds each of them at its live value.
 */
function takesOverClientSideApply(def: KindDefinition, live: KubeObject, options: ApplyOptions, conflicts: string[][]): boolean {
  const annotation = live.metadata.annotations?.[LAST_APPLIED];
  if (options.manager !== "kubectl" || annotation === undefined) return false;
  let lastApplied: KubeObject;
  try {
    lastApplied = JSON.parse(annotation) as KubeObject;
    if (typeof lastApplied !== "object" || lastApplied === null || typeof lastApplied.metadata !== "object") return false;
    const before = typed(def, lastApplied, options);
    const unchangedSince = before.set.difference(compare(before, typed(def, live, options)).modified);
    return conflicts.every((path) => unchangedSince.has(path));
  } catch {
    return false;
  }
}

function unchanged(live: KubeObject, next: KubeObject, before: readonly Manager[], after: readonly Manager[]): boolean {
  const { managedFields: _l, ...liveMeta } = live.metadata;
  const { managedFields: _n, ...nextMeta } = next.metadata;
  if (JSON.stringify({ ...live, metadata: liveMeta }) !== JSON.stringify({ ...next, metadata: nextMeta })) return false;
  if (before.length !== after.length) return false;
  return after.every((m) => {
    const was = before.find((b) => identityOf(b) === identityOf(m));
    return was !== undefined && JSON.stringify(was.fieldsV1) === JSON.stringify(m.fieldsV1);
  });
}
