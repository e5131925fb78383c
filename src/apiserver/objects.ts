// The object service: Kubernetes API semantics over a Store, independent of HTTP. The HTTP routes and
// the in-process client of the controllers both go through it, so every request takes the same path:
// its context (who asks, field manager, dry run) → authorization → admission mutate → admission validate
// → the store (with resourceVersion and finalizer checks) → post-write hooks.
import { randomUUID } from "node:crypto";
import type { KindDefinition, Registry } from "../api/registry.ts";
import { apiVersionOf } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { AdmissionChain, BUILTIN_ADMISSION, type AdmissionOperation, type AdmissionPlugin, type PostWriteHook, type WriteAdmission } from "./admission.ts";
import { allowAll, authorize, type Authorizer } from "./authorization/authorizer.ts";
import { SYSTEM_CONTEXT, SYSTEM_IDENTITY, type RequestContext, type ResourceRequest, type Verb } from "./request-context.ts";
import { kindPrefix, objectKey } from "./storage-keys.ts";
import { decodeContinue, encodeContinue } from "./continue-token.ts";
import {
  bumpGeneration,
  checkFinalizers,
  generatedName,
  nameErrors,
  objectOfBody,
  prepareForCreate,
  prepareForDelete,
  prepareForStatusUpdate,
  prepareForUpdate,
  retainedWhileDeleting,
} from "./strategy.ts";
import {
  CompactedError,
  KeyExistsError,
  KeyNotFoundError,
  RevisionMismatchError,
  type KeyValue,
  type ListOptions as StoreListOptions,
  listSparsely,
  type SparseKeyValue,
  type Store,
  type Wanted,
  type Watch,
  type WatchEvent,
} from "../store/store.ts";
import { AlreadyExistsError, BadRequestError, ConflictError, GoneError, InvalidError, NotFoundError, refOf, ResourceVersionTooLargeError } from "./errors.ts";
import { applyPatch, type PatchType } from "./patch.ts";
import { TABLE_TEXT_TAIL, TableRows, tableTextHead, type IncludeObject, type KeptRow } from "./table.ts";
import type { PatchSchema } from "./strategic-merge.ts";
import { applyConfiguration, recordWrite, type ManagedWrite } from "./apply/field-manager.ts";
import { matchFields, parseFieldSelector, parseLabelSelector, type FieldRequirement, type LabelSelector } from "./selectors.ts";
import type { FieldValidation } from "./validation.ts";

export interface RequestOptions {
  /** Who asks, their field manager, and whether it is a dry run. Default: the API server itself. */
  context?: RequestContext;
}

export interface ReadOptions extends RequestOptions {
  /** The subresource read (e.g. scale): the request is authorized as a read of it. */
  subresource?: WriteSubresource;
  /**
   * A recent copy will do (in-process callers only, e.g. admission checking what a namespace is): it
   * may be older than the latest write (GetOptions.mayLag); "not found" is checked on the latest write.
   */
  recent?: boolean;
}

/** The subresources a write can go through: status (only status changes) and scale (spec through a Scale). */
export type WriteSubresource = "status" | "scale";

export interface WriteOptions extends RequestOptions {
  fieldValidation?: FieldValidation;
}

export interface ListOptions extends RequestOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  /** Which state to read: see listRevision. */
  resourceVersion?: string;
  resourceVersionMatch?: string;
  /**
   * Only objects whose name starts with this (in-process callers only). Within one namespace, or for a
   * cluster-scoped kind, it narrows the key range read instead of filtering what was read.
   */
  namePrefix?: string;
}

export interface ObjectList {
  apiVersion: string;
  kind: string;
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: KubeObject[];
}

/** One item of a list as read from the store; `object` when a selector had to decode it. */
interface ReadItem<K extends SparseKeyValue = KeyValue> {
  kv: K;
  object?: KubeObject;
}

/** A list's page: what it says about itself, and each item read. */
interface Page<K extends SparseKeyValue = KeyValue> {
  list: Omit<ObjectList, "items">;
  read: ReadItem<K>[];
}

export interface ApplyOptions extends WriteOptions {
  /** Take the fields other managers hold instead of failing with a conflict. */
  force?: boolean;
  subresource?: "status";
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

export interface WatchOptions extends RequestOptions {
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface ObjectWatch {
  close(): void;
  /** The revision up to which every event has been delivered (what a bookmark carries). */
  progress(): number;
}

/**
 * What controllers use of the object service: the service itself in process, or its proxy on a worker
 * thread (`src/runtime/remote-objects.ts`).
 */
export type ObjectApi = Pick<ObjectService, "registry" | "get" | "tryGet" | "list" | "create" | "update" | "updateStatus" | "patch" | "delete" | "watch">;

/** Written into the response of a write: the object plus warnings to pass on to the client. */
export interface WriteResult {
  object: KubeObject;
  warnings: string[];
  /** The object as it was before the write (updates, patches and deletes). */
  previous?: KubeObject;
  /** Headers the post-write hooks asked the HTTP response to carry. */
  responseHeaders?: Record<string, string>;
}

export interface ObjectServiceOptions {
  /** Admission plugins, run after the built-in ones (BUILTIN_ADMISSION) in this order. */
  admission?: readonly AdmissionPlugin[];
  /** Hooks run after every write, in this order. */
  postWrite?: readonly PostWriteHook[];
  /** Decides every request, read or write (default: everything is allowed). */
  authorizer?: Authorizer;
}

export const FINALIZER_ORPHAN = "orphan";
export const FINALIZER_FOREGROUND = "foregroundDeletion";
const MAX_RETRIES = 16;
/** The most keys one read of a selective list asks the store for while it fills a page. */
const MAX_FILL_BATCH = 10_000;

/** The last second nowTimestamp() spelled, and how: every write stamps its managedFields and conditions with it. */
let lastStamp = { second: Number.NaN, text: "" };

/** A Kubernetes timestamp (RFC 3339, whole seconds, UTC) of `date`. */
export function nowTimestamp(date = new Date()): string {
  const second = Math.floor(date.getTime() / 1000);
  if (second !== lastStamp.second) lastStamp = { second, text: new Date(second * 1000).toISOString().replace(".000Z", "Z") };
  return lastStamp.text;
}

/**
 * The manager a write is recorded under: its context's, else the server's own for the server acting on
 * its own behalf, else "unknown" (a client that sent neither ?fieldManager nor a User-Agent).
 */
function managedWrite(context: RequestContext, subresource?: WriteSubresource): ManagedWrite {
  const manager = context.fieldManager ?? (context.identity === SYSTEM_IDENTITY ? "slipway-apiserver" : "unknown");
  return { manager, time: nowTimestamp(), ...(subresource ? { subresource } : {}) };
}

/**
 * The reads of one read-modify-write: first a copy that may lag the latest write (the write's revision
 * compare refuses a stale one), then, after a refusal, the current value the refusal carried, and, when
 * something is to be answered without writing, a read of the latest write to check it on.
 */
class WriteRead {
  private pending: { kv: KeyValue | undefined } | undefined;
  private last: KeyValue | undefined;
  private latest = false;

  constructor(
    private readonly store: Store,
    private readonly key: string,
  ) {}

  /** The value to decide on. */
  async next(): Promise<KeyValue | undefined> {
    if (this.pending) {
      this.last = this.pending.kv;
      this.pending = undefined;
    } else {
      this.last = await this.store.get(this.key, this.latest ? {} : { mayLag: true });
      // Not found in a copy that may lag: it may have been created only just now.
      if (!this.last && !this.latest) {
        this.latest = true;
        this.last = await this.store.get(this.key);
      }
    }
    return this.last;
  }

  /** The write was refused: the store's current value follows. */
  refusedWith(current: KeyValue): void {
    this.pending = { kv: current };
    this.latest = true;
  }

  /** Whether the value decided on is the latest write; if not, the latest is what `next` gives. */
  async stillLatest(): Promise<boolean> {
    if (this.latest) return true;
    this.latest = true;
    const current = await this.store.get(this.key);
    if (current?.modRevision === this.last?.modRevision && current?.createRevision === this.last?.createRevision) return true;
    this.pending = { kv: current };
    return false;
  }
}

/**
 * An update's `next`: the first attempt takes the requested object the service built from the request's
 * body as it is (it is the write's own); an attempt after a concurrent change builds it again, since the
 * attempt before may have changed it.
 */
function firstThenAgain(object: KubeObject, build: () => KubeObject): () => KubeObject {
  let first = true;
  return () => {
    if (!first) return build();
    first = false;
    return object;
  };
}

/**
 * The object just stored, with the version the store gave it: what a read would answer, without parsing
 * the text just written again (the object is the write's own, built for it from the request and the
 * stored text).
 */
function withVersion(object: KubeObject, kv: KeyValue): KubeObject {
  object.metadata.resourceVersion = String(kv.modRevision);
  return object;
}

export class ObjectService {
  readonly admission: AdmissionChain;
  readonly authorizer: Authorizer;
  /** False while everything is allowed: requests are then not described for the authorizer. */
  private readonly authorizes: boolean;
  private readonly tableRows = new TableRows();

  constructor(
    readonly registry: Registry,
    readonly store: Store,
    options: ObjectServiceOptions = {},
  ) {
    this.admission = new AdmissionChain([...BUILTIN_ADMISSION, ...(options.admission ?? [])], options.postWrite ?? []);
    this.authorizer = options.authorizer ?? allowAll;
    this.authorizes = this.authorizer !== allowAll;
  }

  // ---- requests ----

  /** The context completed with the verb and the resource of the call it comes with. */
  private describe(
    def: KindDefinition,
    verb: Verb,
    namespace: string | undefined,
    name: string | undefined,
    context: RequestContext = SYSTEM_CONTEXT,
    subresource?: string,
  ): ResourceRequest {
    return {
      ...context,
      verb,
      resource: { group: def.group, version: def.version, resource: def.plural, subresource, namespace: def.namespaced ? namespace : undefined, name },
    };
  }

  private async authorizeRead(def: KindDefinition, verb: Verb, namespace: string | undefined, name: string | undefined, context: RequestContext | undefined, subresource?: string): Promise<void> {
    if (this.authorizes) await authorize(this.authorizer, this.describe(def, verb, namespace, name, context, subresource));
  }

  /** Runs the post-write hooks of a write the store accepted (or that changed nothing). */
  private written(
    operation: AdmissionOperation,
    def: KindDefinition,
    object: KubeObject,
    previous: KubeObject | undefined,
    request: ResourceRequest,
    warnings: string[],
  ): WriteResult | Promise<WriteResult> {
    const result: WriteResult = previous ? { object, warnings, previous } : { object, warnings };
    if (this.admission.hooks.length === 0) return result;
    const withHeaders = (headers: Record<string, string> | undefined): WriteResult => (headers ? { ...result, responseHeaders: headers } : result);
    // The write is committed: a hook that fails after it must not turn it into an error the client would
    // retry or report as not done. It is told as a warning instead.
    const hookFailed = (error: unknown): WriteResult => ({
      ...result,
      warnings: [...warnings, `the ${operation.toLowerCase()} is done, but what follows it failed: ${error instanceof Error ? error.message : String(error)}`],
    });
    let headers: ReturnType<AdmissionChain["afterWrite"]>;
    try {
      headers = this.admission.afterWrite({ operation, def, object, previous, request, objects: this });
    } catch (error) {
      return hookFailed(error);
    }
    return headers instanceof Promise ? headers.then(withHeaders, hookFailed) : withHeaders(headers);
  }

  // ---- encoding ----

  private decode(def: KindDefinition, kv: KeyValue, revision = kv.modRevision): KubeObject {
    const object = JSON.parse(kv.value) as KubeObject;
    object.apiVersion = apiVersionOf(def);
    object.kind = def.kind;
    object.metadata.resourceVersion = String(revision);
    return object;
  }

  /**
   * The stored form: apiVersion, kind and metadata first, without the resourceVersion (the store keeps
   * that), so a read can answer with the stored text after putting the resourceVersion in (storedJson).
   */
  private encode(def: KindDefinition, object: KubeObject): string {
    const { apiVersion: _apiVersion, kind: _kind, metadata: { resourceVersion: _rv, ...metadata }, ...rest } = object;
    return JSON.stringify({ apiVersion: apiVersionOf(def), kind: def.kind, metadata, ...rest });
  }

  /** The text encode() makes of `current`, the object decoded from `kv`: its stored text when stored in that form. */
  private storedText(def: KindDefinition, kv: KeyValue, current: KubeObject): string {
    return kv.value.startsWith(storedHead(def)) ? kv.value : this.encode(def, current);
  }

  /**
   * The JSON of what decode() returns, without parsing the stored text when it is in the stored form
   * encode() writes (older values are decoded and encoded again).
   */
  private storedJson(def: KindDefinition, kv: KeyValue): string {
    const head = storedHead(def);
    const value = kv.value;
    // encode() never stores metadata.resourceVersion, so it goes in without a look for an old one.
    if (value.startsWith(head)) {
      const version = `"resourceVersion":"${kv.modRevision}"`;
      return head + version + (value[head.length] === "}" ? "" : ",") + value.slice(head.length);
    }
    return JSON.stringify(this.decode(def, kv));
  }

  // ---- reads ----

  async get(def: KindDefinition, namespace: string | undefined, name: string, options: ReadOptions = {}): Promise<KubeObject> {
    await this.authorizeRead(def, "get", namespace, name, options.context, options.subresource);
    const kv = await this.store.get(objectKey(def, namespace, name));
    if (!kv) throw new NotFoundError(refOf(def, name));
    return this.decode(def, kv);
  }

  async tryGet(def: KindDefinition, namespace: string | undefined, name: string, options: ReadOptions = {}): Promise<KubeObject | undefined> {
    await this.authorizeRead(def, "get", namespace, name, options.context);
    const key = objectKey(def, namespace, name);
    const kv = (options.recent ? await this.store.get(key, { mayLag: true }) : undefined) ?? (await this.store.get(key));
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
    await this.authorizeRead(def, "list", namespace, undefined, options.context);
    return this.read(def, namespace, options);
  }

  /**
   * The same list as list(), as the JSON text of its response. The items are the stored text with their
   * resourceVersion put in, so a list of thousands of objects is neither parsed nor encoded again.
   */
  async listJson(def: KindDefinition, namespace: string | undefined, options: ListOptions = {}): Promise<string> {
    return [...(await this.listJsonChunks(def, namespace, options))].join("");
  }

  /**
   * The text of listJson() in pieces of `itemsPerChunk` items, each made only when it is asked for: a
   * response can send them one at a time, so a list of thousands is never one string and other work runs
   * between its pieces. The list is read (and refused, when it must be) before this resolves.
   */
  async listJsonChunks(def: KindDefinition, namespace: string | undefined, options: ListOptions = {}, itemsPerChunk = 500): Promise<Iterable<string>> {
    await this.authorizeRead(def, "list", namespace, undefined, options.context);
    const { list, read } = await this.readPage(def, namespace, options);
    const head = `{"apiVersion":${JSON.stringify(list.apiVersion)},"kind":${JSON.stringify(list.kind)},"metadata":${JSON.stringify(list.metadata)},"items":[`;
    return inPieces(head, read, (entry) => this.storedJson(def, entry.kv), "]}", itemsPerChunk);
  }

  /**
   * The same list as a Table (what `kubectl get` asks for), as JSON text in pieces like listJsonChunks:
   * each row from the stored text, its cells kept by object version (TableRows), so a Table of
   * thousands parses only the objects that changed since the last one.
   */
  async listTableChunks(
    def: KindDefinition,
    namespace: string | undefined,
    options: ListOptions & { includeObject?: IncludeObject } = {},
    itemsPerChunk = 500,
  ): Promise<Iterable<string>> {
    await this.authorizeRead(def, "list", namespace, undefined, options.context);
    const include = options.includeObject ?? "Metadata";
    // A row kept for the version listed needs nothing of the stored value: where the store can leave
    // values out, only those of the other rows are read.
    const kept = new Map<string, KeptRow>();
    const wanted: Wanted = (key, revision) => {
      const row = this.tableRows.kept(key, revision);
      if (row) kept.set(key, row);
      return row === undefined;
    };
    const sparse = include !== "Object" && this.tableRows.keeps(def);
    const { list, read } = sparse ? await this.readPage(def, namespace, options, wanted) : await this.readPage(def, namespace, options);
    const head = tableTextHead(def, { resourceVersion: list.metadata.resourceVersion, continue: list.metadata.continue });
    const row = this.tableRows.rowsOf(def, storedHead(def), include, Date.now());
    const render = ({ kv, object }: ReadItem<SparseKeyValue>) =>
      row(
        { key: kv.key, revision: kv.modRevision, text: kv.value, kept: kept.get(kv.key), object },
        () => this.decode(def, withValue(kv)),
        () => this.storedJson(def, withValue(kv)),
      );
    return inPieces(head, read, render, TABLE_TEXT_TAIL, itemsPerChunk);
  }

  private async read(def: KindDefinition, namespace: string | undefined, options: ListOptions): Promise<ObjectList> {
    const { list, read } = await this.readPage(def, namespace, options);
    return { ...list, items: read.map((entry) => entry.object ?? this.decode(def, entry.kv)) };
  }

  /**
   * A list's page: what it says about itself, and each item read (decoded only when a selector needed it).
   * With `wanted`, and without a selector, only the values it wants are read where the store can do so.
   */
  private async readPage(def: KindDefinition, namespace: string | undefined, options: ListOptions): Promise<Page>;
  private async readPage(def: KindDefinition, namespace: string | undefined, options: ListOptions, wanted: Wanted): Promise<Page<SparseKeyValue>>;
  private async readPage(def: KindDefinition, namespace: string | undefined, options: ListOptions, wanted?: Wanted): Promise<Page<SparseKeyValue>> {
    const selected = this.matcher(def, options.labelSelector, options.fieldSelector);
    const namePrefix = options.namePrefix ?? "";
    const ranged = !def.namespaced || namespace !== undefined;
    const matches = ranged || namePrefix === "" ? selected : (o: KubeObject) => (o.metadata.name ?? "").startsWith(namePrefix) && selected(o);
    const prefix = kindPrefix(def, namespace) + (ranged ? namePrefix : "");
    const limit = options.limit && options.limit > 0 ? options.limit : undefined;
    let continueAfter: string | undefined;
    let remainingAfter: number | undefined;
    let revision = await this.listRevision(options, limit !== undefined);
    if (options.continue) {
      const token = decodeContinue(options.continue);
      if (!token.key.startsWith(prefix)) throw new BadRequestError("the continue token does not belong to this list");
      continueAfter = token.key;
      revision = token.rev;
      remainingAfter = token.remaining;
    }
    // A selector may skip most of what a page reads: read on until the page is full or the range ends,
    // so a short page always means the end (kube-apiserver does the same).
    const items: ReadItem<SparseKeyValue>[] = [];
    // Every value is read where something must be decoded to be selected.
    const sparsely = matches === matchAll ? wanted : undefined;
    let more = false;
    let remaining: number | undefined;
    let lastKey: string | undefined;
    const tooOld = options.continue
      ? "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."
      : "The resourceVersion for the provided list is too old.";
    let batch = limit;
    for (;;) {
      const result = await this.readRange(prefix, { limit: batch, continueAfter, revision, remainingAfter }, tooOld, sparsely);
      remainingAfter = undefined;
      revision = result.revision;
      more = result.more;
      remaining = result.remaining;
      for (const kv of result.items) {
        lastKey = kv.key;
        if (matches === matchAll) {
          items.push({ kv });
        } else {
          const object = this.decode(def, withValue(kv));
          if (!matches(object)) continue;
          items.push({ kv, object });
        }
        if (limit !== undefined && items.length === limit) break;
      }
      const stoppedEarly = lastKey !== result.items[result.items.length - 1]?.key;
      if (stoppedEarly) {
        more = true;
        remaining = undefined;
      }
      if (!more || (limit !== undefined && items.length >= limit)) break;
      continueAfter = lastKey;
      if (batch !== undefined) batch = Math.max(batch, Math.min(batch * 2, MAX_FILL_BATCH));
    }
    // Only an unfiltered list can say how many are left (a selector would have to read them all).
    const counted = matches === matchAll && remaining !== undefined;
    const list = {
      apiVersion: apiVersionOf(def),
      kind: `${def.kind}List`,
      metadata: {
        resourceVersion: String(revision),
        ...(more && lastKey ? { continue: encodeContinue({ key: lastKey, rev: revision!, ...(remaining !== undefined ? { remaining } : {}) }) } : {}),
        ...(more && counted ? { remainingItemCount: remaining } : {}),
      },
    };
    return { list, read: items };
  }

  /**
   * The revision a list reads at, from ?resourceVersion and ?resourceVersionMatch as kube-apiserver reads
   * them: none, "0" or NotOlderThan read the newest state (refused when the store has not reached it);
   * Exact — or a resource version with a limit, the legacy form of paging — reads that revision.
   */
  private async listRevision(options: ListOptions, paged: boolean): Promise<number | undefined> {
    const { resourceVersion, resourceVersionMatch: match } = options;
    if (match !== undefined && match !== "" && match !== "Exact" && match !== "NotOlderThan") {
      throw new BadRequestError(`resourceVersionMatch: Unsupported value: "${match}": supported values: "Exact", "NotOlderThan"`);
    }
    if (options.continue) {
      if (resourceVersion) throw new BadRequestError("specifying resource version is not allowed when using continue");
      if (match) throw new BadRequestError("resourceVersionMatch is forbidden when continue is provided");
      return undefined;
    }
    if (!resourceVersion) {
      if (match) throw new BadRequestError("resourceVersionMatch is forbidden unless resourceVersion is provided");
      return undefined;
    }
    if (!/^\d+$/.test(resourceVersion)) throw new BadRequestError(`invalid resourceVersion "${resourceVersion}": it must be a non-negative integer`);
    const asked = Number(resourceVersion);
    if (asked === 0) {
      if (match === "Exact") throw new BadRequestError('resourceVersionMatch "Exact" is forbidden for resourceVersion "0"');
      return undefined;
    }
    const current = await this.store.revision();
    if (asked > current) throw new ResourceVersionTooLargeError(asked, current);
    return match === "Exact" || (match !== "NotOlderThan" && paged) ? asked : undefined;
  }

  private async readRange(prefix: string, options: StoreListOptions, tooOld: string, wanted?: Wanted) {
    try {
      return wanted ? await listSparsely(this.store, prefix, wanted, options) : await this.store.list(prefix, options);
    } catch (e) {
      if (e instanceof CompactedError) throw new GoneError(tooOld);
      throw e;
    }
  }

  // ---- writes ----

  async create(def: KindDefinition, namespace: string | undefined, body: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    return this.createObject(def, namespace, body, options, false);
  }

  /** A create; `applied` when the body is an apply's result, its managedFields already recorded. */
  private async createObject(def: KindDefinition, namespace: string | undefined, body: unknown, options: WriteOptions, applied: boolean): Promise<WriteResult> {
    const context = options.context ?? SYSTEM_CONTEXT;
    let request = this.describe(def, "create", namespace, undefined, context);
    if (this.authorizes) await authorize(this.authorizer, request);
    const object = objectOfBody(def, body, namespace);
    const meta = object.metadata;
    if (meta.resourceVersion) throw new BadRequestError("resourceVersion should not be set on objects to be created");
    const generate = !meta.name && meta.generateName;
    if (generate) meta.name = generatedName(meta.generateName!);
    const invalidName = nameErrors(def, meta.name);
    if (invalidName.length > 0) throw new InvalidError(refOf(def, meta.name), invalidName);
    if (def.namespaced && !meta.namespace) throw new BadRequestError(`${def.plural} is namespaced: a namespace is required`);
    prepareForCreate(def, object);
    if (!applied) recordWrite(def, undefined, object, managedWrite(context));
    request = { ...request, resource: { ...request.resource, namespace: meta.namespace, name: meta.name } };
    const admission: WriteAdmission = {
      operation: "CREATE",
      def,
      namespace: meta.namespace,
      name: meta.name!,
      request,
      objects: this,
      object,
      oldObject: undefined,
      fieldValidation: options.fieldValidation ?? "Strict",
      warnings: [],
    };
    const mutating = this.admission.mutate(admission);
    if (mutating) await mutating;
    meta.uid = randomUUID();
    meta.creationTimestamp = nowTimestamp();
    meta.generation = 1;
    const validating = this.admission.validate(admission);
    if (validating) await validating;
    const warnings = admission.warnings;
    if (context.dryRun) return { object, warnings };
    for (let attempt = 0; ; attempt++) {
      try {
        const kv = await this.store.create(objectKey(def, meta.namespace, meta.name!), this.encode(def, object));
        return await this.written("CREATE", def, withVersion(object, kv), undefined, request, warnings);
      } catch (e) {
        if (!(e instanceof KeyExistsError)) throw e;
        if (!generate || attempt >= 8) throw new AlreadyExistsError(refOf(def, meta.name));
        meta.name = generatedName(meta.generateName!);
      }
    }
  }

  /** PUT: replaces the object (its status is kept when the kind has a status subresource). */
  async update(def: KindDefinition, namespace: string | undefined, name: string, body: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    const build = () => {
      const object = objectOfBody(def, body, namespace);
      if (object.metadata.name && object.metadata.name !== name) {
        throw new BadRequestError(`the name of the object (${object.metadata.name}) does not match the name on the URL (${name})`);
      }
      object.metadata.name = name;
      return object;
    };
    return this.write(def, namespace, name, firstThenAgain(build(), build), "update", undefined, options, false);
  }

  /** PUT on /status: only the status of the object changes. */
  async updateStatus(def: KindDefinition, namespace: string | undefined, name: string, body: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    this.requireStatus(def);
    const build = () => objectOfBody(def, body, namespace);
    return this.write(def, namespace, name, firstThenAgain(build(), build), "update", "status", options, false);
  }

  async patch(
    def: KindDefinition,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    body: unknown,
    options: WriteOptions & { subresource?: WriteSubresource } = {},
  ): Promise<WriteResult> {
    if (options.subresource === "status") this.requireStatus(def);
    return this.write(
      def,
      namespace,
      name,
      (_current, copy) => {
        const patched = applyPatch(type, copy(), body, def.schema as PatchSchema);
        return objectOfBody(def, patched, namespace);
      },
      "patch",
      options.subresource,
      options,
      false,
    );
  }

  /**
   * Server-side apply (PATCH with application/apply-patch+yaml): `body` is the manager's whole intent
   * for the object, created when absent. Needs a field manager; fails with a conflict naming fields
   * other managers hold, unless forced.
   */
  async apply(def: KindDefinition, namespace: string | undefined, name: string, body: unknown, options: ApplyOptions = {}): Promise<WriteResult> {
    const context = options.context ?? SYSTEM_CONTEXT;
    if (!context.fieldManager) {
      throw new BadRequestError("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch", [
        { reason: "FieldValueRequired", message: "Required value: is required for apply patch", field: "fieldManager" },
      ]);
    }
    if (options.subresource === "status") this.requireStatus(def);
    const config = objectOfBody(def, body, namespace);
    if (config.metadata.name !== undefined && config.metadata.name !== name) {
      throw new BadRequestError(`the name of the object (${config.metadata.name}) does not match the name on the URL (${name})`);
    }
    config.metadata.name = name;
    const apply = { ...managedWrite(context, options.subresource), force: options.force ?? false };
    const update = () =>
      this.write(def, namespace, name, (_current, copy) => structuredClone(applyConfiguration(def, copy(), config, apply)), "patch", options.subresource, options, true);
    try {
      return await update();
    } catch (e) {
      if (!(e instanceof NotFoundError) || options.subresource === "status") throw e;
    }
    try {
      return await this.createObject(def, namespace, applyConfiguration(def, undefined, config, apply), options, true);
    } catch (e) {
      // Created meanwhile by someone else: apply to what they made.
      if (e instanceof AlreadyExistsError) return update();
      throw e;
    }
  }

  private requireStatus(def: KindDefinition): void {
    if (!def.subresources.status) throw new NotFoundError(refOf(def), `${def.plural} has no status subresource`);
  }

  /**
   * The read-modify-write loop shared by update, status update and patch. `next` builds the requested
   * object from the current one, which it must not change (`copy` gives it a copy of its own); the
   * requested object is the write's own from then on. A resourceVersion it carries is a precondition,
   * otherwise a concurrent change is retried transparently (admission runs again on the newer object).
   *
   * The first read may answer a copy older than the latest write (GetOptions.mayLag: on etcd it saves a
   * quorum read). The write compares that copy's modRevision, so a stale copy is refused there and the
   * loop goes on from the current value the refusal carries; whatever is answered without writing (an
   * error, a no-op, a dry run) is first checked against the latest write, as kube-apiserver does when
   * it starts an update from its watch cache.
   */
  private async write(
    def: KindDefinition,
    namespace: string | undefined,
    name: string,
    next: (current: KubeObject, copy: () => KubeObject) => KubeObject,
    verb: "update" | "patch",
    subresource: WriteSubresource | undefined,
    options: WriteOptions,
    applied: boolean,
  ): Promise<WriteResult> {
    const context = options.context ?? SYSTEM_CONTEXT;
    const request = this.describe(def, verb, namespace, name, context, subresource);
    if (this.authorizes) await authorize(this.authorizer, request);
    const key = objectKey(def, namespace, name);
    const read = new WriteRead(this.store, key);
    for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
      const kv = await read.next();
      if (!kv) throw new NotFoundError(refOf(def, name));
      let merged: KubeObject;
      let current: KubeObject;
      let warnings: string[];
      try {
        current = this.decode(def, kv);
        // Copies of the current object are parsed again from the stored text (cheaper than a deep clone).
        const copy = () => this.decode(def, kv);
        const requested = next(current, copy);
        const rv = requested.metadata.resourceVersion;
        if (rv && rv !== current.metadata.resourceVersion) {
          throw new ConflictError(refOf(def, name), "the object has been modified; please apply your changes to the latest version and try again");
        }
        if (requested.metadata.uid && requested.metadata.uid !== current.metadata.uid) {
          throw new ConflictError(refOf(def, name), `Precondition failed: UID in precondition: ${requested.metadata.uid}, UID in object meta: ${current.metadata.uid}`);
        }
        if (requested.metadata.name && requested.metadata.name !== name) {
          throw new BadRequestError(`the name of the object (${requested.metadata.name}) does not match the name on the URL (${name})`);
        }
        // A patch may not take the name away (the object would be stored nameless, beyond reach); a
        // replacement that names none is the one on the URL.
        if (!requested.metadata.name) {
          if (verb === "patch") throw new InvalidError(refOf(def, name), [{ field: "metadata.name", reason: "FieldValueRequired", message: "Required value: name is required and cannot be removed" }]);
          requested.metadata.name = name;
        }
        merged = subresource === "status" ? prepareForStatusUpdate(requested, copy()) : prepareForUpdate(def, requested, current);
        if (!applied) recordWrite(def, current, merged, managedWrite(context, subresource));
        else if (requested.metadata.managedFields) merged.metadata.managedFields = requested.metadata.managedFields;
        const admission: WriteAdmission = {
          operation: "UPDATE",
          def,
          namespace,
          name,
          request,
          objects: this,
          object: merged,
          oldObject: current,
          fieldValidation: options.fieldValidation ?? "Strict",
          warnings: [],
        };
        const mutating = this.admission.mutate(admission);
        if (mutating) await mutating;
        if (subresource !== "status") bumpGeneration(def, merged, current);
        const validating = this.admission.validate(admission);
        if (validating) await validating;
        checkFinalizers(def, current, merged);
        warnings = admission.warnings;
      } catch (e) {
        // Refused on a copy that may be stale: decide again on the latest write.
        if (!(await read.stillLatest())) continue;
        throw e;
      }
      // The stored text of the result, compared with the current one's: equal, there is nothing to write.
      const encoded = this.encode(def, merged);
      const unchanged = encoded === this.storedText(def, kv, current);
      if ((context.dryRun || unchanged) && !(await read.stillLatest())) continue;
      if (context.dryRun) return { object: merged, warnings, previous: current };
      if (unchanged) return this.written("UPDATE", def, merged, current, request, warnings);
      const removing = merged.metadata.deletionTimestamp && (merged.metadata.finalizers ?? []).length === 0 && !retainedWhileDeleting(def, merged);
      let stored: KubeObject;
      try {
        if (removing) {
          await this.store.delete(key, kv.modRevision);
          stored = merged;
        } else {
          stored = withVersion(merged, await this.store.update(key, encoded, kv.modRevision));
        }
      } catch (e) {
        // Changed since it was read: a resourceVersion the request carries is checked again on the
        // current object (a patch that carries none has the one it was applied to).
        if (e instanceof RevisionMismatchError) {
          read.refusedWith(e.current);
          continue;
        }
        if (e instanceof KeyNotFoundError) throw new NotFoundError(refOf(def, name));
        throw e;
      }
      return this.written("UPDATE", def, stored, current, request, warnings);
    }
    throw new ConflictError(refOf(def, name), "too many concurrent changes; try again");
  }

  /**
   * Deletes an object, or marks it for deletion (deletionTimestamp) while it has finalizers or its kind
   * deletes gracefully; the result's object is the one removed or marked.
   */
  async delete(def: KindDefinition, namespace: string | undefined, name: string, options: DeleteOptions = {}): Promise<WriteResult> {
    const request = this.describe(def, "delete", namespace, name, options.context);
    if (this.authorizes) await authorize(this.authorizer, request);
    return this.remove(def, namespace, name, options, request);
  }

  /**
   * Deletes every object of a collection that the selectors match, each as a delete of its own (admission,
   * finalizers, propagation), authorized once as `deletecollection` the way kube-apiserver authorizes it.
   * Answers the list of what was deleted or marked for deletion.
   */
  async deleteCollection(def: KindDefinition, namespace: string | undefined, options: DeleteOptions & { labelSelector?: string; fieldSelector?: string } = {}): Promise<{ list: ObjectList; warnings: string[] }> {
    const context = options.context ?? SYSTEM_CONTEXT;
    if (this.authorizes) await authorize(this.authorizer, this.describe(def, "deletecollection", namespace, undefined, context));
    const selected = await this.read(def, namespace, { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector });
    const items: KubeObject[] = [];
    const warnings: string[] = [];
    for (const object of selected.items) {
      const { name, namespace: objectNamespace } = object.metadata;
      try {
        const result = await this.remove(def, objectNamespace, name!, { ...options, preconditions: { uid: object.metadata.uid } }, this.describe(def, "delete", objectNamespace, name, context));
        items.push(result.object);
        warnings.push(...result.warnings);
      } catch (e) {
        // Gone since the list, or replaced by a new object of the same name (not the one selected).
        if (e instanceof NotFoundError || (e instanceof ConflictError && e.message.includes("UID in precondition"))) continue;
        throw e;
      }
    }
    return { list: { apiVersion: apiVersionOf(def), kind: `${def.kind}List`, metadata: { resourceVersion: selected.metadata.resourceVersion }, items }, warnings };
  }

  private async remove(def: KindDefinition, namespace: string | undefined, name: string, options: DeleteOptions, request: ResourceRequest): Promise<WriteResult> {
    const key = objectKey(def, namespace, name);
    const read = new WriteRead(this.store, key);
    for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
      const kv = await read.next();
      if (!kv) throw new NotFoundError(refOf(def, name));
      const current = this.decode(def, kv);
      let next: KubeObject;
      let finalizers: Set<string>;
      let graceful: boolean;
      try {
        const pre = options.preconditions;
        if (pre?.uid && pre.uid !== current.metadata.uid) {
          throw new ConflictError(refOf(def, name), `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`);
        }
        if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
          throw new ConflictError(
            refOf(def, name),
            `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
          );
        }
        next = structuredClone(current);
        finalizers = new Set(next.metadata.finalizers ?? []);
        if (!next.metadata.deletionTimestamp) {
          if (options.propagationPolicy === "Orphan") finalizers.add(FINALIZER_ORPHAN);
          if (options.propagationPolicy === "Foreground") finalizers.add(FINALIZER_FOREGROUND);
        }
        graceful = prepareForDelete(def, next) || finalizers.size > 0;
        const validating = this.admission.validate({ operation: "DELETE", def, namespace, name, request, objects: this, object: undefined, oldObject: current });
        if (validating) await validating;
      } catch (e) {
        if (!(await read.stillLatest())) continue;
        throw e;
      }
      // Marked for deletion already: nothing to write.
      const marked = graceful && next.metadata.deletionTimestamp !== undefined;
      if ((request.dryRun || marked) && !(await read.stillLatest())) continue;
      if (request.dryRun) return { object: next, warnings: [], previous: current };
      let result: KubeObject;
      try {
        if (!graceful) {
          await this.store.delete(key, kv.modRevision);
          result = current;
        } else if (next.metadata.deletionTimestamp) {
          result = current;
        } else {
          next.metadata.deletionTimestamp = nowTimestamp();
          next.metadata.deletionGracePeriodSeconds = 0;
          next.metadata.finalizers = [...finalizers];
          result = this.decode(def, await this.store.update(key, this.encode(def, next), kv.modRevision));
        }
      } catch (e) {
        if (e instanceof RevisionMismatchError) {
          read.refusedWith(e.current);
          continue;
        }
        if (e instanceof KeyNotFoundError) throw new NotFoundError(refOf(def, name));
        throw e;
      }
      return this.written("DELETE", def, result, current, request, []);
    }
    throw new ConflictError(refOf(def, name), "too many concurrent changes; try again");
  }

  /** Removes an object whatever its finalizers, without admission or hooks (for the collectors of the server itself). */
  async forget(def: KindDefinition, namespace: string | undefined, name: string, uid: string): Promise<void> {
    const key = objectKey(def, namespace, name);
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
    await this.authorizeRead(def, "watch", namespace, undefined, options.context);
    const matches = this.matcher(def, options.labelSelector, options.fieldSelector);
    const prefix = kindPrefix(def, namespace);
    let after: number;
    if (!options.resourceVersion || options.resourceVersion === "0") {
      const initial = await this.read(def, namespace, { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector });
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
    // Past the last change of the kind, to what the store has handed over of all of them (when it can tell).
    return { close: () => watch.close(), progress: () => Math.max(progress, watch.progress?.() ?? 0) };
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

const heads = new WeakMap<KindDefinition, string>();

/** A listed key whose value was read (every one but those a sparse read left out, which are never decoded). */
function withValue(kv: SparseKeyValue): KeyValue {
  if (kv.value === undefined || kv.createRevision === undefined) throw new Error(`the value of ${kv.key} at revision ${kv.modRevision} was not read`);
  return kv as KeyValue;
}

/** A list's JSON text in pieces of `perPiece` items, each made only when it is asked for. */
function* inPieces<T>(head: string, items: T[], render: (item: T) => string, tail: string, perPiece: number): Generator<string> {
  yield head;
  for (let start = 0; start < items.length; start += perPiece) {
    yield (start > 0 ? "," : "") + items.slice(start, start + perPiece).map(render).join(",");
  }
  yield tail;
}

/** How every value encode() stores for a kind begins, up to the inside of its metadata. */
export function storedHead(def: KindDefinition): string {
  let head = heads.get(def);
  if (head === undefined) {
    head = `{"apiVersion":${JSON.stringify(apiVersionOf(def))},"kind":${JSON.stringify(def.kind)},"metadata":{`;
    heads.set(def, head);
  }
  return head;
}
