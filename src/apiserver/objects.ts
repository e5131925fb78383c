// The object service: Kubernetes API semantics over a Store, independent of HTTP. The HTTP routes and
// the in-process client of the controllers both go through it, so both get the same admission,
// validation and concurrency checks.
import { randomUUID } from "node:crypto";
import type { KindDefinition, Registry } from "../api/registry.ts";
import { apiVersionOf } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import {
  CompactedError,
  KeyExistsError,
  KeyNotFoundError,
  RevisionMismatchError,
  type KeyValue,
  type Store,
  type Watch,
  type WatchEvent,
} from "../store/store.ts";
import {
  AlreadyExistsError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  GoneError,
  InvalidError,
  NotFoundError,
  type ObjectRef,
} from "./errors.ts";
import { applyPatch, type PatchType } from "./patch.ts";
import { matchFields, parseFieldSelector, parseLabelSelector, type FieldRequirement, type LabelSelector } from "./selectors.ts";
import { admit, type FieldValidation } from "./validation.ts";

export interface WriteOptions {
  fieldValidation?: FieldValidation;
  dryRun?: boolean;
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  /**
   * Only objects whose name starts with this (in-process callers only). Within one namespace, or for a
   * cluster-scoped kind, it narrows the key range read instead of filtering what was read.
   */
  namePrefix?: string;
}

export interface ObjectList {
  apiVersion: string;
  kind: string;
  metadata: { resourceVersion: string; continue?: string };
  items: KubeObject[];
}

export type DeletePropagation = "Background" | "Foreground" | "Orphan";

export interface DeleteOptions extends WriteOptions {
  propagationPolicy?: DeletePropagation;
  preconditions?: { uid?: string; resourceVersion?: string };
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface ObjectEvent {
  type: WatchEventType;
  object: KubeObject;
}

export interface WatchOptions {
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface ObjectWatch {
  close(): void;
  /** The revision up to which every event has been delivered. */
  progress(): number;
}

/** Written into the response of a write: the object plus warnings to pass on to the client. */
export interface WriteResult {
  object: KubeObject;
  warnings: string[];
  /** The object as it was before the write (updates and patches). */
  previous?: KubeObject;
}

export const FINALIZER_ORPHAN = "orphan";
export const FINALIZER_FOREGROUND = "foregroundDeletion";
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
const MAX_RETRIES = 16;

export function nowTimestamp(date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function isNamespaceKind(def: KindDefinition): boolean {
  return def.group === "" && def.kind === "Namespace";
}

/** The parts of an object that make up its desired state: all but metadata and status. */
function desiredState(object: KubeObject): string {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = object;
  return JSON.stringify(rest);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class ObjectService {
  constructor(
    readonly registry: Registry,
    readonly store: Store,
  ) {}

  // ---- keys and encoding ----

  prefix(def: KindDefinition, namespace?: string): string {
    const base = `/registry/${def.group || "core"}/${def.plural}/`;
    return def.namespaced && namespace ? `${base}${namespace}/` : base;
  }

  key(def: KindDefinition, namespace: string | undefined, name: string): string {
    return def.namespaced ? `${this.prefix(def)}${namespace ?? ""}/${name}` : `${this.prefix(def)}${name}`;
  }

  private decode(def: KindDefinition, kv: KeyValue, revision = kv.modRevision): KubeObject {
    const object = JSON.parse(kv.value) as KubeObject;
    object.apiVersion = apiVersionOf(def);
    object.kind = def.kind;
    object.metadata.resourceVersion = String(revision);
    return object;
  }

  private encode(object: KubeObject): string {
    const { resourceVersion: _rv, ...metadata } = object.metadata;
    return JSON.stringify({ ...object, metadata });
  }

  private ref(def: KindDefinition, name?: string): ObjectRef {
    return { group: def.group, kind: def.kind, plural: def.plural, name };
  }

  // ---- reads ----

  async get(def: KindDefinition, namespace: string | undefined, name: string): Promise<KubeObject> {
    const kv = await this.store.get(this.key(def, namespace, name));
    if (!kv) throw new NotFoundError(this.ref(def, name));
    return this.decode(def, kv);
  }

  async tryGet(def: KindDefinition, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    const kv = await this.store.get(this.key(def, namespace, name));
    return kv ? this.decode(def, kv) : undefined;
  }

  /** Field selectors a kind supports, with how to read each. */
  fieldValue(def: KindDefinition, object: KubeObject, field: string): string | undefined {
    if (field === "metadata.name") return object.metadata.name;
    if (field === "metadata.namespace") return object.metadata.namespace ?? "";
    return def.fieldSelectors?.[field]?.(object);
  }

  private matcher(def: KindDefinition, labelSelector?: string, fieldSelector?: string): (o: KubeObject) => boolean {
    const labels: LabelSelector | undefined = parseLabelSelector(labelSelector);
    const supported = ["metadata.name", "metadata.namespace", ...Object.keys(def.fieldSelectors ?? {})];
    const fields: FieldRequirement[] = parseFieldSelector(fieldSelector, supported);
    if (!labels && fields.length === 0) return matchAll;
    return (o) => (!labels || labels(o.metadata.labels)) && (fields.length === 0 || matchFields(fields, (f) => this.fieldValue(def, o, f)));
  }

  async list(def: KindDefinition, namespace: string | undefined, options: ListOptions = {}): Promise<ObjectList> {
    const selected = this.matcher(def, options.labelSelector, options.fieldSelector);
    const namePrefix = options.namePrefix ?? "";
    const ranged = !def.namespaced || namespace !== undefined;
    const matches = ranged || namePrefix === "" ? selected : (o: KubeObject) => (o.metadata.name ?? "").startsWith(namePrefix) && selected(o);
    const prefix = this.prefix(def, namespace) + (ranged ? namePrefix : "");
    let continueAfter: string | undefined;
    let revision: number | undefined;
    if (options.continue) {
      const token = decodeContinue(options.continue);
      if (!token.key.startsWith(prefix)) throw new BadRequestError("the continue token does not belong to this list");
      continueAfter = token.key;
      revision = token.rev;
    }
    const limit = options.limit && options.limit > 0 ? options.limit : undefined;
    let result;
    try {
      result = await this.store.list(prefix, { limit, continueAfter, revision });
    } catch (e) {
      if (e instanceof CompactedError) {
        throw new GoneError(
          "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        );
      }
      throw e;
    }
    const items = result.items.map((kv) => this.decode(def, kv)).filter(matches);
    const last = result.items[result.items.length - 1];
    return {
      apiVersion: apiVersionOf(def),
      kind: `${def.kind}List`,
      metadata: {
        resourceVersion: String(result.revision),
        ...(result.more && last ? { continue: encodeContinue({ key: last.key, rev: result.revision }) } : {}),
      },
      items,
    };
  }

  // ---- writes ----

  private async checkNamespace(def: KindDefinition, namespace: string | undefined, name: string | undefined): Promise<void> {
    if (!def.namespaced) return;
    if (!namespace) throw new BadRequestError(`${def.plural} is namespaced: a namespace is required`);
    const nsDef = this.registry.byKind("v1", "Namespace");
    if (!nsDef) return;
    const ns = await this.tryGet(nsDef, undefined, namespace);
    if (!ns) throw new NotFoundError({ group: "", kind: "Namespace", plural: "namespaces", name: namespace });
    if (ns.metadata.deletionTimestamp) {
      throw new ForbiddenError(
        `${def.plural}${def.group ? "." + def.group : ""} "${name ?? ""}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
        this.ref(def, name),
      );
    }
  }

  private checkIdentity(def: KindDefinition, body: unknown, namespace: string | undefined): KubeObject {
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
      throw new InvalidError(this.ref(def), [{ field: "metadata", reason: "FieldValueInvalid", message: "must be an object" }]);
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

  private nameErrors(def: KindDefinition, name: string | undefined): { field: string; reason: string; message: string }[] {
    if (!name) return [{ field: "metadata.name", reason: "FieldValueRequired", message: "Required value: name or generateName is required" }];
    const pattern = isNamespaceKind(def) ? LABEL : NAME;
    const max = isNamespaceKind(def) ? 63 : 253;
    if (name.length > max || !pattern.test(name)) {
      return [
        {
          field: "metadata.name",
          reason: "FieldValueInvalid",
          message: `Invalid value: "${name}": a lowercase RFC 1123 ${isNamespaceKind(def) ? "label" : "subdomain"} must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (at most ${max} characters)`,
        },
      ];
    }
    return [];
  }

  private admitOrThrow(def: KindDefinition, object: KubeObject, old: KubeObject | undefined, options: WriteOptions): string[] {
    const { warnings, errors } = admit(def, object, old, options.fieldValidation ?? "Strict");
    if (errors.length > 0) throw new InvalidError(this.ref(def, object.metadata.name), errors);
    return warnings;
  }

  async create(def: KindDefinition, namespace: string | undefined, body: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    const object = this.checkIdentity(def, body, namespace);
    const meta = object.metadata;
    if (meta.resourceVersion) throw new BadRequestError("resourceVersion should not be set on objects to be created");
    const generate = !meta.name && meta.generateName;
    if (generate) meta.name = generatedName(meta.generateName!);
    const nameErrors = this.nameErrors(def, meta.name);
    if (nameErrors.length > 0) throw new InvalidError(this.ref(def, meta.name), nameErrors);
    await this.checkNamespace(def, meta.namespace, meta.name);
    delete meta.uid;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    delete meta.selfLink;
    if (def.subresources.status) delete object.status;
    if (isNamespaceKind(def)) object.status = { phase: "Active" };
    const warnings = this.admitOrThrow(def, object, undefined, options);
    meta.uid = randomUUID();
    meta.creationTimestamp = nowTimestamp();
    meta.generation = 1;
    if (options.dryRun) return { object, warnings };
    for (let attempt = 0; ; attempt++) {
      try {
        const kv = await this.store.create(this.key(def, meta.namespace, meta.name!), this.encode(object));
        return { object: this.decode(def, kv), warnings };
      } catch (e) {
        if (!(e instanceof KeyExistsError)) throw e;
        if (!generate || attempt >= 8) throw new AlreadyExistsError(this.ref(def, meta.name));
        meta.name = generatedName(meta.generateName!);
      }
    }
  }

  /** PUT: replaces the object (its status is kept when the kind has a status subresource). */
  async update(def: KindDefinition, namespace: string | undefined, name: string, body: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    const object = this.checkIdentity(def, body, namespace);
    if (object.metadata.name && object.metadata.name !== name) {
      throw new BadRequestError(`the name of the object (${object.metadata.name}) does not match the name on the URL (${name})`);
    }
    object.metadata.name = name;
    return this.write(def, namespace, name, () => structuredClone(object), "main", options);
  }

  /** PUT on /status: only the status of the object changes. */
  async updateStatus(def: KindDefinition, namespace: string | undefined, name: string, body: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    this.requireStatus(def);
    const object = this.checkIdentity(def, body, namespace);
    return this.write(def, namespace, name, () => structuredClone(object), "status", options);
  }

  async patch(
    def: KindDefinition,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    body: unknown,
    options: WriteOptions & { subresource?: "status" } = {},
  ): Promise<WriteResult> {
    if (options.subresource === "status") this.requireStatus(def);
    return this.write(
      def,
      namespace,
      name,
      (current) => {
        const patched = applyPatch(type, current, body);
        return this.checkIdentity(def, patched, namespace);
      },
      options.subresource === "status" ? "status" : "main",
      options,
    );
  }

  private requireStatus(def: KindDefinition): void {
    if (!def.subresources.status) throw new NotFoundError(this.ref(def), `${def.plural} has no status subresource`);
  }

  /**
   * The read-modify-write loop shared by update, status update and patch. `next` builds the requested
   * object from the current one; a resourceVersion it carries is a precondition, otherwise a concurrent
   * change is retried transparently.
   */
  private async write(
    def: KindDefinition,
    namespace: string | undefined,
    name: string,
    next: (current: KubeObject) => KubeObject,
    part: "main" | "status",
    options: WriteOptions,
  ): Promise<WriteResult> {
    const key = this.key(def, namespace, name);
    for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
      const kv = await this.store.get(key);
      if (!kv) throw new NotFoundError(this.ref(def, name));
      const current = this.decode(def, kv);
      const requested = next(structuredClone(current));
      const rv = requested.metadata.resourceVersion;
      if (rv && rv !== current.metadata.resourceVersion) {
        throw new ConflictError(this.ref(def, name), "the object has been modified; please apply your changes to the latest version and try again");
      }
      if (requested.metadata.uid && requested.metadata.uid !== current.metadata.uid) {
        throw new ConflictError(this.ref(def, name), `Precondition failed: UID in precondition: ${requested.metadata.uid}, UID in object meta: ${current.metadata.uid}`);
      }
      if (requested.metadata.name && requested.metadata.name !== name) {
        throw new BadRequestError(`the name of the object (${requested.metadata.name}) does not match the name on the URL (${name})`);
      }
      const merged = part === "status" ? this.mergeStatus(current, requested) : this.mergeMain(def, current, requested);
      const warnings = this.admitOrThrow(def, merged, current, options);
      if (part === "main" && desiredState(merged) !== desiredState(current)) {
        merged.metadata.generation = (current.metadata.generation ?? 0) + 1;
      }
      this.checkFinalizers(def, current, merged);
      if (sameJson(merged, current) || options.dryRun) return { object: merged, warnings, previous: current };
      const removing = merged.metadata.deletionTimestamp && (merged.metadata.finalizers ?? []).length === 0 && !this.namespaceHolds(def, merged);
      try {
        if (removing) {
          await this.store.delete(key, kv.modRevision);
          return { object: merged, warnings, previous: current };
        }
        const written = await this.store.update(key, this.encode(merged), kv.modRevision);
        return { object: this.decode(def, written), warnings, previous: current };
      } catch (e) {
        if (e instanceof RevisionMismatchError) {
          if (rv) throw new ConflictError(this.ref(def, name), "the object has been modified; please apply your changes to the latest version and try again");
          continue;
        }
        if (e instanceof KeyNotFoundError) throw new NotFoundError(this.ref(def, name));
        throw e;
      }
    }
    throw new ConflictError(this.ref(def, name), "too many concurrent changes; try again");
  }

  /** Namespaces stay while their spec.finalizers (the namespace controller's) are not empty. */
  private namespaceHolds(def: KindDefinition, object: KubeObject): boolean {
    if (!isNamespaceKind(def)) return false;
    const spec = object.spec as { finalizers?: string[] } | undefined;
    return (spec?.finalizers ?? []).length > 0;
  }

  private mergeMain(def: KindDefinition, current: KubeObject, requested: KubeObject): KubeObject {
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
    if (def.subresources.status || isNamespaceKind(def)) {
      if (current.status === undefined) delete merged.status;
      else merged.status = current.status;
    }
    return merged;
  }

  private mergeStatus(current: KubeObject, requested: KubeObject): KubeObject {
    const merged = structuredClone(current);
    if (requested.status === undefined) delete merged.status;
    else merged.status = requested.status;
    return merged;
  }

  private checkFinalizers(def: KindDefinition, current: KubeObject, merged: KubeObject): void {
    if (!current.metadata.deletionTimestamp) return;
    const before = new Set(current.metadata.finalizers ?? []);
    const added = (merged.metadata.finalizers ?? []).filter((f) => !before.has(f));
    if (added.length > 0) {
      throw new InvalidError(this.ref(def, current.metadata.name), [
        { field: "metadata.finalizers", reason: "FieldValueForbidden", message: "Forbidden: no new finalizers can be added if the object is being deleted" },
      ]);
    }
  }

  async delete(def: KindDefinition, namespace: string | undefined, name: string, options: DeleteOptions = {}): Promise<KubeObject> {
    const key = this.key(def, namespace, name);
    for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
      const kv = await this.store.get(key);
      if (!kv) throw new NotFoundError(this.ref(def, name));
      const current = this.decode(def, kv);
      const pre = options.preconditions;
      if (pre?.uid && pre.uid !== current.metadata.uid) {
        throw new ConflictError(this.ref(def, name), `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`);
      }
      if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
        throw new ConflictError(
          this.ref(def, name),
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
        );
      }
      const next = structuredClone(current);
      const finalizers = new Set(next.metadata.finalizers ?? []);
      if (!next.metadata.deletionTimestamp) {
        if (options.propagationPolicy === "Orphan") finalizers.add(FINALIZER_ORPHAN);
        if (options.propagationPolicy === "Foreground") finalizers.add(FINALIZER_FOREGROUND);
      }
      if (isNamespaceKind(def)) {
        next.spec = { ...(next.spec as object), finalizers: ["kubernetes"] };
        next.status = { ...(next.status as object), phase: "Terminating" };
      }
      const graceful = finalizers.size > 0 || isNamespaceKind(def);
      if (options.dryRun) return next;
      try {
        if (!graceful) {
          await this.store.delete(key, kv.modRevision);
          return current;
        }
        if (next.metadata.deletionTimestamp) return current;
        next.metadata.deletionTimestamp = nowTimestamp();
        next.metadata.deletionGracePeriodSeconds = 0;
        next.metadata.finalizers = [...finalizers];
        const written = await this.store.update(key, this.encode(next), kv.modRevision);
        return this.decode(def, written);
      } catch (e) {
        if (e instanceof RevisionMismatchError) continue;
        if (e instanceof KeyNotFoundError) throw new NotFoundError(this.ref(def, name));
        throw e;
      }
    }
    throw new ConflictError(this.ref(def, name), "too many concurrent changes; try again");
  }

  /** Removes an object whatever its finalizers (used by the namespace and garbage collectors). */
  async forget(def: KindDefinition, namespace: string | undefined, name: string, uid: string): Promise<void> {
    const key = this.key(def, namespace, name);
    const kv = await this.store.get(key);
    if (!kv) return;
    const current = this.decode(def, kv);
    if (current.metadata.uid !== uid) return;
    try {
      await this.store.delete(key, kv.modRevision);
    } catch (e) {
      if (!(e instanceof RevisionMismatchError) && !(e instanceof KeyNotFoundError)) throw e;
    }
  }

  // ---- watch ----

  /**
   * Streams changes. Without a resourceVersion (or with "0"), the current objects come first as ADDED.
   * A resourceVersion older than the compacted history ends the watch with a GoneError.
   */
  async watch(
    def: KindDefinition,
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: ObjectEvent) => void,
    onError: (error: Error) => void,
  ): Promise<ObjectWatch> {
    const matches = this.matcher(def, options.labelSelector, options.fieldSelector);
    const prefix = this.prefix(def, namespace);
    let after: number;
    if (!options.resourceVersion || options.resourceVersion === "0") {
      const initial = await this.list(def, namespace, { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector });
      after = Number(initial.metadata.resourceVersion);
      for (const object of initial.items) onEvent({ type: "ADDED", object });
    } else {
      after = Number(options.resourceVersion);
      if (!Number.isInteger(after) || after < 0) throw new BadRequestError(`invalid resourceVersion "${options.resourceVersion}"`);
    }
    let progress = after;
    const watch: Watch = this.store.watch(prefix, {
      afterRevision: after,
      onEvent: (event: WatchEvent) => {
        const translated = this.translate(def, event, matches);
        progress = event.type === "put" ? event.kv.modRevision : event.revision;
        if (translated) onEvent(translated);
      },
      onError: (error) => {
        if (error instanceof CompactedError) onError(new GoneError(`too old resource version: ${options.resourceVersion ?? after} (${error.compacted})`));
        else onError(error);
      },
    });
    return { close: () => watch.close(), progress: () => progress };
  }

  private translate(def: KindDefinition, event: WatchEvent, matches: (o: KubeObject) => boolean): ObjectEvent | undefined {
    if (event.type === "delete") {
      const object = this.decode(def, event.prev, event.revision);
      return matches(object) ? { type: "DELETED", object } : undefined;
    }
    const object = this.decode(def, event.kv);
    const nowMatches = matches(object);
    const isNew = event.kv.createRevision === event.kv.modRevision;
    if (isNew) return nowMatches ? { type: "ADDED", object } : undefined;
    // Without selectors every version matches: the previous one need not be decoded to know it.
    const before = event.prev && matches !== matchAll ? matches(this.decode(def, event.prev)) : nowMatches;
    if (nowMatches) return { type: before ? "MODIFIED" : "ADDED", object };
    return before ? { type: "DELETED", object } : undefined;
  }
}

/** The matcher of a request without label or field selectors. */
const matchAll = (_object: KubeObject): boolean => true;

/** JSON nulls mean "not set", as Kubernetes decodes them (kubectl sends `creationTimestamp: null`). */
function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropNulls);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = dropNulls(v);
  return out;
}

function generatedName(prefix: string): string {
  let suffix = "";
  const bytes = new Uint8Array(5);
  crypto.getRandomValues(bytes);
  for (const b of bytes) suffix += GENERATE_ALPHABET[b % GENERATE_ALPHABET.length];
  return prefix + suffix;
}

interface ContinueToken {
  key: string;
  rev: number;
}

function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify({ k: token.key, r: token.rev })).toString("base64url");
}

function decodeContinue(text: string): ContinueToken {
  try {
    const parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as { k?: unknown; r?: unknown };
    if (typeof parsed.k === "string" && typeof parsed.r === "number") return { key: parsed.k, rev: parsed.r };
  } catch {
    // fall through
  }
  throw new BadRequestError("invalid continue token");
}
