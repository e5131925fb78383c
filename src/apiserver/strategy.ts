// The generic part of how objects are created, updated and deleted, followed by each kind's own
// strategy hooks (KindStrategy in api/registry.ts): what a client may not set, when the generation
// rises, and what a delete does.
import type { KindDefinition, FieldError } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { objectNameErrors } from "../api/field-errors.ts";

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
 * subresource, its status.
 */
export function prepareForUpdate(def: KindDefinition, requested: KubeObject, current: KubeObject): KubeObject {
  const merged = structuredClone(requested);
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

/** The object a write of the status subresource stores: the current one with the requested status. */
export function prepareForStatusUpdate(requested: KubeObject, current: KubeObject): KubeObject {
  const merged = structuredClone(current);
  if (requested.status === undefined) delete merged.status;
  else merged.status = requested.status;
  return merged;
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
