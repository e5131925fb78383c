// One registry of kinds: everything the generic API server knows about a kind comes from here.
import type { TSchema } from "@sinclair/typebox";
import type { KubeObject } from "./meta.ts";

export interface PrinterColumn {
  name: string;
  /** OpenAPI type of the cell: string, integer, number, boolean, date. */
  type: "string" | "integer" | "number" | "boolean" | "date";
  description: string;
  /** A JSONPath into the object (".status.phase"); shown in docs and used when `value` is absent. */
  jsonPath: string;
  /** Computes the cell when a plain path cannot (e.g. "2/3"). */
  value?: (object: KubeObject) => string | number | boolean | undefined;
  /** Columns with priority > 0 appear only under `-o wide`. */
  priority?: number;
  format?: string;
  /** `value` reads the clock as well as the object (a duration "so far"): its cell is made anew for every Table. */
  readsClock?: boolean;
}

/** A problem with one field of an object, as reported in Status.details.causes. */
export interface FieldError {
  /** Dotted path: spec.workers[0].replicas */
  field: string;
  /** FieldValueInvalid, FieldValueRequired, FieldValueDuplicate, FieldValueForbidden, FieldValueNotSupported */
  reason: string;
  message: string;
}

/**
 * How the API server treats a kind's objects beyond its schema, as Kubernetes' REST strategies do. Every
 * hook is optional; the server's generic behaviour (named on each) comes first, the hook after it.
 */
export interface KindStrategy<T extends KubeObject = KubeObject> {
  /** Errors of metadata.name on create. Default: an RFC 1123 subdomain of at most 253 characters. */
  validateName?(name: string | undefined): FieldError[];
  /**
   * Resets on create what a client may not set. Generic: uid, deletion fields and selfLink dropped, and
   * status too when the kind has a status subresource.
   */
  prepareForCreate?(object: T): void;
  /**
   * Carries over on an update of the main resource what a client may not change. Generic: identity,
   * creation and deletion fields kept, and status too when the kind has a status subresource.
   */
  prepareForUpdate?(object: T, old: T): void;
  /**
   * Whether an update of the main resource raises metadata.generation. Default: anything but metadata
   * and status changed.
   */
  generationChanged?(object: T, old: T): boolean;
  /**
   * Called when a delete is asked for, on a copy of the object: changes it (e.g. a phase) and returns
   * true when it must stay, with a deletionTimestamp, even without finalizers (graceful deletion).
   * Default: objects without finalizers are removed at once.
   */
  prepareForDelete?(object: T): boolean;
  /** An object being deleted stays in storage while this holds, even with no finalizers left. */
  retainedWhileDeleting?(object: T): boolean;
}

/**
 * A `/scale` subresource, as a CustomResourceDefinition declares one: where the object keeps the wanted
 * and the current replicas and the label selector of what it counts (JSON paths such as ".spec.replicas").
 */
export interface ScaleSubresource {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

export interface KindDefinition<T extends KubeObject = KubeObject> {
  /** "" for the core group. */
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  categories?: string[];
  namespaced: boolean;
  /** JSON schema of the whole object (apiVersion, kind, metadata, spec, status …). */
  schema: TSchema;
  description: string;
  printerColumns: PrinterColumn[];
  subresources: { status: boolean; scale?: ScaleSubresource };
  /** Values are encrypted at rest and never logged. */
  sensitive?: boolean;
  /** Fills defaults the schema cannot express. Runs on create and update, before validation. */
  defaults?: (object: T) => void;
  /** Static validation beyond the schema; `old` is set on update (immutable fields). */
  validate?: (object: T, old?: T) => FieldError[];
  /** How the API server creates, updates and deletes objects of this kind, where it differs from the generic way. */
  strategy?: KindStrategy<T>;
  /** Extra field selectors this kind supports (besides metadata.name and metadata.namespace). */
  fieldSelectors?: Record<string, (object: T) => string | undefined>;
}

export interface GroupVersion {
  group: string;
  version: string;
}

export function apiVersionOf(def: { group: string; version: string }): string {
  return def.group === "" ? def.version : `${def.group}/${def.version}`;
}

export function parseApiVersion(apiVersion: string): GroupVersion {
  const slash = apiVersion.indexOf("/");
  return slash < 0
    ? { group: "", version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

export class Registry {
  private readonly kinds: KindDefinition[] = [];

  constructor(definitions: KindDefinition[] = []) {
    for (const d of definitions) this.register(d);
  }

  register<T extends KubeObject>(definition: KindDefinition<T>): this {
    const d = definition as unknown as KindDefinition;
    if (this.byPlural(d.group, d.version, d.plural)) {
      throw new Error(`kind ${d.kind} (${d.plural}.${d.group}) is registered twice`);
    }
    this.kinds.push(d);
    return this;
  }

  all(): readonly KindDefinition[] {
    return this.kinds;
  }

  byPlural(group: string, version: string, plural: string): KindDefinition | undefined {
    return this.kinds.find((k) => k.group === group && k.version === version && k.plural === plural);
  }

  byKind(apiVersion: string, kind: string): KindDefinition | undefined {
    const gv = parseApiVersion(apiVersion);
    return this.kinds.find((k) => k.group === gv.group && k.version === gv.version && k.kind === kind);
  }

  /** Group versions in registration order, core first. */
  groupVersions(): GroupVersion[] {
    const seen = new Map<string, GroupVersion>();
    for (const k of this.kinds) seen.set(`${k.group}/${k.version}`, { group: k.group, version: k.version });
    return [...seen.values()].sort((a, b) => (a.group === "" ? -1 : b.group === "" ? 1 : 0));
  }

  inGroupVersion(group: string, version: string): KindDefinition[] {
    return this.kinds.filter((k) => k.group === group && k.version === version);
  }
}
