// The object service across a MessagePort: controllers on a worker thread read, write and watch through
// RemoteObjectService, and the thread that holds the store answers with serveObjects, running each call
// through its own ObjectService with the caller's RequestContext — the same authorization, admission and
// post-write hooks as in process. Objects cross as structured clones; errors come back as the same
// ApiError classes (NotFoundError, ConflictError, GoneError …) with their code, reason and details, so
// controllers branch on them as they do in process; watches are streams of events with a cancel.
import type { MessagePort } from "node:worker_threads";
import type { KindDefinition, Registry } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import {
  AlreadyExistsError,
  ApiError,
  ApplyConflictError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  GoneError,
  InternalError,
  InvalidError,
  isApiError,
  MethodNotAllowedError,
  NotFoundError,
  ResourceVersionTooLargeError,
  TooManyRequestsError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
  type StatusDetails,
} from "../apiserver/errors.ts";
import type {
  DeleteOptions,
  ListOptions,
  ObjectApi,
  ObjectEvent,
  ObjectList,
  ObjectService,
  ObjectWatch,
  ReadOptions,
  RequestOptions,
  WatchOptions,
  WriteOptions,
  WriteResult,
  WriteSubresource,
} from "../apiserver/objects.ts";
import type { PatchType } from "../apiserver/patch.ts";
import { SYSTEM_IDENTITY, type Identity, type RequestContext } from "../apiserver/request-context.ts";

type CallMethod = "get" | "tryGet" | "list" | "create" | "update" | "updateStatus" | "patch" | "delete";
const CALL_METHODS = new Set<string>(["get", "tryGet", "list", "create", "update", "updateStatus", "patch", "delete"]);

/** A kind as both threads' registries name it. */
interface KindRef {
  group: string;
  version: string;
  plural: string;
}

/** The API server's own identity crosses as a mark: each thread has its own SYSTEM_IDENTITY object, compared by reference. */
const SYSTEM_MARK = "system";
type WireContext = Omit<RequestContext, "identity"> & { identity: Identity | typeof SYSTEM_MARK };

interface WireError {
  /** The error's class (NotFoundError …), or the name of an error that is not an ApiError. */
  name: string;
  message: string;
  api?: { code: number; reason: string; details?: StatusDetails; fieldErrors?: unknown };
}

type Request =
  | { t: "call"; id: number; method: CallMethod; kind: KindRef; args: unknown[] }
  | { t: "watch"; id: number; kind: KindRef; namespace?: string; options: WatchOptions }
  | { t: "unwatch"; id: number };

type Reply =
  | { t: "result"; id: number; value: unknown }
  | { t: "error"; id: number; error: WireError }
  | { t: "events"; events: { id: number; event: ObjectEvent }[] }
  | { t: "watchError"; id: number; error: WireError };

function kindRef(def: KindDefinition): KindRef {
  return { group: def.group, version: def.version, plural: def.plural };
}

function toWireOptions<O extends RequestOptions | undefined>(options: O): O {
  const context = options?.context;
  if (!context) return options;
  const identity = context.identity === SYSTEM_IDENTITY ? SYSTEM_MARK : context.identity;
  return { ...options, context: { ...context, identity } as unknown as RequestContext };
}

function fromWireOptions<O extends RequestOptions | undefined>(options: O): O {
  const context = options?.context as WireContext | undefined;
  if (!context || context.identity !== SYSTEM_MARK) return options;
  return { ...options, context: { ...context, identity: SYSTEM_IDENTITY } };
}

function toWireError(error: unknown): WireError {
  if (isApiError(error)) {
    const fieldErrors = error instanceof InvalidError ? error.fieldErrors : undefined;
    return {
      name: error.constructor.name,
      message: error.message,
      api: { code: error.code, reason: error.reason, ...(error.details ? { details: error.details } : {}), ...(fieldErrors ? { fieldErrors } : {}) },
    };
  }
  const e = error instanceof Error ? error : new Error(String(error));
  return { name: e.name, message: e.message };
}

/** An ApiError of a class this thread does not know: same code, reason and details. */
class RemoteApiError extends ApiError {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    details?: StatusDetails,
  ) {
    super(message, details);
  }
}

const API_ERRORS: Record<string, { prototype: ApiError }> = {
  NotFoundError,
  AlreadyExistsError,
  ConflictError,
  InvalidError,
  BadRequestError,
  GoneError,
  ForbiddenError,
  UnauthorizedError,
  MethodNotAllowedError,
  UnsupportedMediaTypeError,
  TooManyRequestsError,
  ResourceVersionTooLargeError,
  InternalError,
  ApplyConflictError,
};

function fromWireError(wire: WireError): Error {
  if (wire.api) {
    const { code, reason, details, fieldErrors } = wire.api;
    const known = Object.hasOwn(API_ERRORS, wire.name) ? API_ERRORS[wire.name] : undefined;
    if (!known) return new RemoteApiError(code, reason, wire.message, details);
    // The class's own instance, without running its constructor (which builds the message from a reference).
    const error = Object.create(known.prototype) as ApiError;
    Error.captureStackTrace(error, fromWireError);
    Object.assign(error, { message: wire.message, code, reason, details, ...(fieldErrors ? { fieldErrors } : {}) });
    return error;
  }
  const error = new Error(wire.message);
  error.name = wire.name;
  return error;
}

export interface ServeObjectsOptions {
  /** Resolves when the serving thread has room for the next call (API requests first); default at once. */
  admit?: () => Promise<unknown>;
}

/** Answers a RemoteObjectService's calls on `port` through `objects`. close() ends its watches. */
export function serveObjects(objects: ObjectService, port: MessagePort, options: ServeObjectsOptions = {}): { close(): void } {
  const watches = new Map<number, ObjectWatch | "opening">();
  let batch: { id: number; event: ObjectEvent }[] = [];
  let closed = false;
  const flush = () => {
    const events = batch;
    batch = [];
    if (events.length && !closed) port.postMessage({ t: "events", events } satisfies Reply);
  };
  const post = (reply: Reply) => {
    if (!closed) port.postMessage(reply);
  };
  const resolve = (ref: KindRef): KindDefinition => {
    const def = objects.registry.byPlural(ref.group, ref.version, ref.plural);
    if (!def) throw new NotFoundError({ group: ref.group, kind: ref.plural, plural: ref.plural }, `the server could not find the requested resource (${ref.plural}.${ref.group})`);
    return def;
  };
  const call = async (request: Extract<Request, { t: "call" }>) => {
    try {
      if (!CALL_METHODS.has(request.method)) throw new BadRequestError(`unknown object service call "${request.method}"`);
      await options.admit?.();
      const def = resolve(request.kind);
      const args = request.args.slice();
      args[args.length - 1] = fromWireOptions(args[args.length - 1] as RequestOptions | undefined);
      const method = objects[request.method] as (def: KindDefinition, ...args: unknown[]) => Promise<unknown>;
      let value = await method.call(objects, def, ...args);
      // A write's result without what only in-process hooks read (the object before, response headers).
      if (value && typeof value === "object" && "warnings" in value) value = { object: (value as WriteResult).object, warnings: (value as WriteResult).warnings };
      post({ t: "result", id: request.id, value });
    } catch (error) {
      post({ t: "error", id: request.id, error: toWireError(error) });
    }
  };
  const watch = async (request: Extract<Request, { t: "watch" }>) => {
    const { id } = request;
    watches.set(id, "opening");
    try {
      const def = resolve(request.kind);
      const opened = await objects.watch(
        def,
        request.namespace,
        fromWireOptions(request.options),
        (event) => {
          if (watches.get(id) === undefined) return;
          if (batch.length === 0) setImmediate(flush);
          batch.push({ id, event });
        },
        (error) => {
          if (!watches.delete(id)) return;
          flush();
          post({ t: "watchError", id, error: toWireError(error) });
        },
      );
      if (watches.get(id) !== "opening") opened.close(); // it failed while it opened (the error was sent)
      else watches.set(id, opened);
      flush(); // the initial ADDED events before the answer
      post({ t: "result", id, value: opened.progress() });
    } catch (error) {
      watches.delete(id);
      post({ t: "error", id, error: toWireError(error) });
    }
  };
  const onMessage = (request: Request) => {
    if (request.t === "call") void call(request);
    else if (request.t === "watch") void watch(request);
    else if (request.t === "unwatch") {
      const open = watches.get(request.id);
      watches.delete(request.id);
      if (open && open !== "opening") open.close();
    }
  };
  port.on("message", onMessage);
  return {
    close: () => {
      closed = true;
      port.off("message", onMessage);
      for (const open of watches.values()) if (open !== "opening") open.close();
      watches.clear();
    },
  };
}

interface PendingCall {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface RemoteWatch {
  onEvent: (event: ObjectEvent) => void;
  onError: (error: Error) => void;
  progress: number;
}

/** The object service of another thread, reached over `port` (see serveObjects). */
export class RemoteObjectService implements ObjectApi {
  private ids = 0;
  private readonly calls = new Map<number, PendingCall>();
  private readonly watches = new Map<number, RemoteWatch>();
  private closed = false;

  constructor(
    /** This thread's registry: kinds are named to the other thread by group, version and plural. */
    readonly registry: Registry,
    private readonly port: MessagePort,
  ) {
    port.on("message", (reply: Reply) => this.receive(reply));
  }

  get(def: KindDefinition, namespace: string | undefined, name: string, options: ReadOptions = {}): Promise<KubeObject> {
    return this.call("get", def, [namespace, name, options]) as Promise<KubeObject>;
  }

  tryGet(def: KindDefinition, namespace: string | undefined, name: string, options: ReadOptions = {}): Promise<KubeObject | undefined> {
    return this.call("tryGet", def, [namespace, name, options]) as Promise<KubeObject | undefined>;
  }

  list(def: KindDefinition, namespace: string | undefined, options: ListOptions = {}): Promise<ObjectList> {
    return this.call("list", def, [namespace, options]) as Promise<ObjectList>;
  }

  create(def: KindDefinition, namespace: string | undefined, body: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    return this.call("create", def, [namespace, body, options]) as Promise<WriteResult>;
  }

  update(def: KindDefinition, namespace: string | undefined, name: string, body: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    return this.call("update", def, [namespace, name, body, options]) as Promise<WriteResult>;
  }

  updateStatus(def: KindDefinition, namespace: string | undefined, name: string, body: unknown, options: WriteOptions = {}): Promise<WriteResult> {
    return this.call("updateStatus", def, [namespace, name, body, options]) as Promise<WriteResult>;
  }

  patch(
    def: KindDefinition,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    body: unknown,
    options: WriteOptions & { subresource?: WriteSubresource } = {},
  ): Promise<WriteResult> {
    return this.call("patch", def, [namespace, name, type, body, options]) as Promise<WriteResult>;
  }

  delete(def: KindDefinition, namespace: string | undefined, name: string, options: DeleteOptions = {}): Promise<WriteResult> {
    return this.call("delete", def, [namespace, name, options]) as Promise<WriteResult>;
  }

  async watch(
    def: KindDefinition,
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: ObjectEvent) => void,
    onError: (error: Error) => void,
  ): Promise<ObjectWatch> {
    const id = ++this.ids;
    const watch: RemoteWatch = { onEvent, onError, progress: Number(options.resourceVersion ?? 0) || 0 };
    this.watches.set(id, watch);
    const opened = new Promise<unknown>((resolve, reject) => this.calls.set(id, { resolve, reject }));
    this.send({ t: "watch", id, kind: kindRef(def), namespace, options: toWireOptions(options) });
    try {
      watch.progress = Math.max(watch.progress, Number(await opened));
    } catch (error) {
      this.watches.delete(id);
      throw error;
    }
    return {
      close: () => {
        if (!this.watches.delete(id)) return;
        if (!this.closed) this.port.postMessage({ t: "unwatch", id } satisfies Request);
      },
      progress: () => watch.progress,
    };
  }

  /** Fails the calls in flight and ends the watches (the other side is gone or this thread stops). */
  close(reason = "the object service's thread is gone"): void {
    if (this.closed) return;
    this.closed = true;
    const error = new InternalError(reason);
    for (const pending of this.calls.values()) pending.reject(error);
    this.calls.clear();
    const watches = [...this.watches.values()];
    this.watches.clear();
    for (const watch of watches) watch.onError(error);
  }

  private call(method: CallMethod, def: KindDefinition, args: unknown[]): Promise<unknown> {
    const id = ++this.ids;
    const last = args.length - 1;
    args[last] = toWireOptions(args[last] as RequestOptions);
    const result = new Promise<unknown>((resolve, reject) => this.calls.set(id, { resolve, reject }));
    this.send({ t: "call", id, method, kind: kindRef(def), args });
    return result;
  }

  private send(request: Request): void {
    if (this.closed) {
      const pending = this.calls.get(request.id);
      this.calls.delete(request.id);
      pending?.reject(new InternalError("the object service's thread is gone"));
      return;
    }
    this.port.postMessage(request);
  }

  private receive(reply: Reply): void {
    if (reply.t === "events") {
      for (const { id, event } of reply.events) {
        const watch = this.watches.get(id);
        if (!watch) continue;
        const version = Number(event.object?.metadata?.resourceVersion);
        if (version > watch.progress) watch.progress = version;
        watch.onEvent(event);
      }
      return;
    }
    if (reply.t === "watchError") {
      const watch = this.watches.get(reply.id);
      this.watches.delete(reply.id);
      watch?.onError(fromWireError(reply.error));
      return;
    }
    const pending = this.calls.get(reply.id);
    if (!pending) return;
    this.calls.delete(reply.id);
    if (reply.t === "result") pending.resolve(reply.value);
    else pending.reject(fromWireError(reply.error));
  }
}
