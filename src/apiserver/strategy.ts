// The generic part of how objects are created, updated and deleted, followed by each kind's own
// strategy hooks (KindStrategy in api/registry.ts): what a client may not set, when the generation
// rises, and what a delete does; and the checks of a request's body and metadata that come before
// admission.
import type { KindDefinition, FieldError } from "../api/registry.ts";
import { apiVersionOf } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { objectNameErrors } from "../api/field-errors.ts";
import { BadRequestError, InvalidError, refOf } from "./errors.ts";
import { fieldPathOf } from "./validation.ts";

const GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** Errors of the name of an object to be created. */
export function nameErrors(def: KindDefinition, name: string | undefined): FieldError[] {
  return def.strategy?.validateName ? def.strategy.validateName(name) : objectNameErrors(name);
}

/** Drops what a client may not set on create. */
export function prepareForCreate(def: KindDefinition, object: KubeObject): void {
  const meta = object.metadata;
  delete meta.uid;
  delete meta.deletionTimestamp;
  delete meta.deletionGracePeriodSeconds;
  delete meta.selfLink;
  if (def.subresources.status) delete object.status;
  def.strategy?.prepareForCreate?.(object);
}

/**
 * The object an update of the main resource stores: the requested one with the server's fields of the
 * current one (identity, creation, deletion, generation, resourceVersion) and, with a status
 * subresource, its status. `requested` is the write's own: it is changed into the result.
 */
export function prepareForUpdate(def: KindDefinition, requested: KubeObject, current: KubeObject): KubeObject {
  const merged = requested;
  const meta = merged.metadata;
  const cur = current.metadata;
  meta.namespace = cur.namespace;
  meta.uid = cur.uid;
  meta.creationTimestamp = cur.creationTimestamp;
  meta.generation = cur.generation;
  meta.resourceVersion = cur.resourceVersion;
  if (cur.deletionTimestamp) {
    meta.deletionTimestamp = cur.deletionTimestamp;
    meta.deletionGracePeriodSeconds = cur.deletionGracePeriodSeconds;
  } else {
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
  }
  delete meta.generateName;
  if (def.subresources.status) {
    if (current.status === undefined) delete merged.status;
    else merged.status = current.status;
  }
  def.strategy?.prepareForUpdate?.(merged, current);
  return merged;
}

/**
 * The object a write of the status subresource stores: the current one with the requested status.
 * `current` is a copy of the current object that is the write's own: it is changed into the result.
 */
export function prepareForStatusUpdate(requested: KubeObject, current: KubeObject): KubeObject {
  if (requested.status === undefined) delete current.status;
  else current.status = requested.status;
  return current;
}

/** The parts of an object that make up its desired state: all but metadata and status. */
function desiredState(object: KubeObject): string {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = object;
  return JSON.stringify(rest);
}

/** Raises metadata.generation when an update of the main resource changes the desired state. */
export function bumpGeneration(def: KindDefinition, object: KubeObject, old: KubeObject): void {
  const changed = def.strategy?.generationChanged ? def.strategy.generationChanged(object, old) : desiredState(object) !== desiredState(old);
  if (changed) object.metadata.generation = (old.metadata.generation ?? 0) + 1;
}

/** Lets the kind change the object a delete marks; true when it must stay until finalized. */
export function prepareForDelete(def: KindDefinition, object: KubeObject): boolean {
  return def.strategy?.prepareForDelete?.(object) ?? false;
}

/** Whether an object being deleted, with no finalizers left, still stays. */
export function retainedWhileDeleting(def: KindDefinition, object: KubeObject): boolean {
  return def.strategy?.retainedWhileDeleting?.(object) ?? false;
}

/**
 * The object a request body describes, checked against the kind and namespace it was sent to; its
 * apiVersion, kind and namespace are made the request's.
 */
export function objectOfBody(def: KindDefinition, body: unknown, namespace: string | undefined): KubeObject {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new BadRequestError(`the request body must be a ${def.kind} object`);
  }
  const object = dropNulls(body) as KubeObject;
  if (object.apiVersion !== undefined && object.apiVersion !== apiVersionOf(def)) {
    throw new BadRequestError(`the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${apiVersionOf(def)})`);
  }
  if (object.kind !== undefined && object.kind !== def.kind) {
    throw new BadRequestError(`the kind in the data (${String(object.kind)}) does not match the expected kind (${def.kind})`);
  }
  if (object.metadata !== undefined && (typeof object.metadata !== "object" || object.metadata === null || Array.isArray(object.metadata))) {
    throw new InvalidError(refOf(def), [{ field: "metadata", reason: "FieldValueInvalid", message: "must be an object" }]);
  }
  object.apiVersion = apiVersionOf(def);
  object.kind = def.kind;
  object.metadata = object.metadata ?? {};
  if (def.namespaced) {
    if (object.metadata.namespace && namespace && object.metadata.namespace !== namespace) {
      throw new BadRequestError("the namespace of the provided object does not match the namespace sent on the request");
    }
    object.metadata.namespace = namespace ?? object.metadata.namespace;
  } else {
    delete object.metadata.namespace;
  }
  return object;
}

/** A name from metadata.generateName: the prefix and five random characters. */
export function generatedName(prefix: string): string {
  let suffix = "";
  const bytes = new Uint8Array(5);
  crypto.getRandomValues(bytes);
  for (const b of bytes) suffix += GENERATE_ALPHABET[b % GENERATE_ALPHABET.length];
  return prefix + suffix;
}

/**
 * JSON nulls mean "not set", as Kubernetes decodes them (kubectl sends `creationTimestamp: null`). The
 * path of a field is spelled out only for the error (every write copies its body here).
 */
function dropNulls(body: unknown): unknown {
  const at: (string | number)[] = [];
  const within = (step: string | number, value: unknown): unknown => {
    at.push(step);
    const copied = copy(value);
    at.pop();
    return copied;
  };
  const copy = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map((v, i) => within(i, v));
    if (typeof value !== "object" || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // Assigned, it would set the object's prototype and vanish; refused rather than silently dropped.
      if (k === "__proto__") throw new BadRequestError(`the object may not hold a field named "__proto__" (at ${fieldPathOf(at) || "the top"})`);
      if (v !== null) out[k] = within(k, v);
    }
    return out;
  };
  return copy(body);
}

/** No finalizer may be added to an object being deleted. */
export function checkFinalizers(def: KindDefinition, current: KubeObject, merged: KubeObject): void {
  if (!current.metadata.deletionTimestamp) return;
  const before = new Set(current.metadata.finalizers ?? []);
  const added = (merged.metadata.finalizers ?? []).filter((f) => !before.has(f));
  if (added.length > 0) {
    throw new InvalidError(refOf(def, current.metadata.name), [
      { field: "metadata.finalizers", reason: "FieldValueForbidden", message: "Forbidden: no new finalizers can be added if the object is being deleted" },
    ]);
  }
}
