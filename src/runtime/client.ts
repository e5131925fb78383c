// The controllers' client: typed reads and writes through the API server's ObjectService, in process,
// so every write takes exactly the request path an HTTP request takes (authorization, admission,
// finalizer and resourceVersion checks, post-write hooks). Each controller acts as its own identity
// (controllerContext): a service account of slipway-system named after it, also its field manager.
// A fenced client (fencedBy) refuses writes once its signal aborts: work that lost its shard cannot
// write, even when it is still running.
import type { KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import type {
  DeleteOptions,
  ListOptions,
  ObjectEvent,
  ObjectApi,
  ObjectWatch,
  RequestOptions,
  WatchOptions,
  WriteOptions,
} from "../apiserver/objects.ts";
import type { PatchType } from "../apiserver/patch.ts";
import { serviceAccountIdentity, SYSTEM_CONTEXT, type RequestContext } from "../apiserver/request-context.ts";

/** The namespace of the service accounts Slipway's own controllers act as. */
export const CONTROLLERS_NAMESPACE = "slipway-system";

/** Who a controller acts as: system:serviceaccount:slipway-system:<name>-controller, field manager <name>-controller. */
export function controllerContext(name: string): RequestContext {
  const account = `${name}-controller`;
  return { identity: serviceAccountIdentity(CONTROLLERS_NAMESPACE, account), fieldManager: account };
}

/** Options of the client's writes: a dry run may be asked for here as well as in the context. */
export type ClientWriteOptions = WriteOptions & { dryRun?: boolean };

export interface ObjectListOf<T> {
  items: T[];
  resourceVersion: string;
  continue?: string;
}

export class Client {
  constructor(
    readonly objects: ObjectApi,
    private readonly signal?: AbortSignal,
    /** Who the client acts as (default: the API server itself). */
    readonly context: RequestContext = SYSTEM_CONTEXT,
  ) {}

  /** The same client, whose writes fail with the signal's reason once it aborts. */
  fencedBy(signal: AbortSignal): Client {
    return new Client(this.objects, this.signal ? AbortSignal.any([this.signal, signal]) : signal, this.context);
  }

  /** The same client acting as someone else. */
  as(context: RequestContext): Client {
    return new Client(this.objects, this.signal, context);
  }

  of<T extends KubeObject>(kind: KindDefinition<T>): KindClient<T> {
    return new KindClient<T>(this.objects, kind as unknown as KindDefinition, this.signal, this.context);
  }
}

export class KindClient<T extends KubeObject> {
  constructor(
    private readonly objects: ObjectApi,
    readonly kind: KindDefinition,
    private readonly signal: AbortSignal | undefined,
    private readonly context: RequestContext = SYSTEM_CONTEXT,
  ) {}

  /** The options with this client's context, unless they name another (a dry run if they ask for one). */
  private with<O extends RequestOptions & { dryRun?: boolean }>(options: O): O {
    const context = options.context ?? this.context;
    if (options.dryRun) return { ...options, context: { ...context, dryRun: true } };
    return options.context ? options : { ...options, context };
  }

  async get(namespace: string | undefined, name: string): Promise<T> {
    return (await this.objects.get(this.kind, namespace, name, { context: this.context })) as T;
  }

  async tryGet(namespace: string | undefined, name: string): Promise<T | undefined> {
    return (await this.objects.tryGet(this.kind, namespace, name, { context: this.context })) as T | undefined;
  }

  async list(namespace?: string, options: ListOptions = {}): Promise<ObjectListOf<T>> {
    const list = await this.objects.list(this.kind, namespace, this.with(options));
    return { items: list.items as T[], resourceVersion: list.metadata.resourceVersion, continue: list.metadata.continue };
  }

  async create(object: T, options: ClientWriteOptions = {}): Promise<T> {
    this.checkFence();
    const result = await this.objects.create(this.kind, object.metadata.namespace, object, this.with(options));
    return result.object as T;
  }

  /** Replaces the object; its metadata.resourceVersion, when set, must still be current (409 otherwise). */
  async update(object: T, options: ClientWriteOptions = {}): Promise<T> {
    this.checkFence();
    const result = await this.objects.update(this.kind, object.metadata.namespace, object.metadata.name ?? "", object, this.with(options));
    return result.object as T;
  }

  /** Writes the status only, with the same resourceVersion precondition as update. */
  async updateStatus(object: T, options: ClientWriteOptions = {}): Promise<T> {
    this.checkFence();
    const result = await this.objects.updateStatus(this.kind, object.metadata.namespace, object.metadata.name ?? "", object, this.with(options));
    return result.object as T;
  }

  async patch(
    namespace: string | undefined,
    name: string,
    type: PatchType,
    body: unknown,
    options: ClientWriteOptions & { subresource?: "status" } = {},
  ): Promise<T> {
    this.checkFence();
    const result = await this.objects.patch(this.kind, namespace, name, type, body, this.with(options));
    return result.object as T;
  }

  async delete(namespace: string | undefined, name: string, options: DeleteOptions & { dryRun?: boolean } = {}): Promise<T> {
    this.checkFence();
    return (await this.objects.delete(this.kind, namespace, name, this.with(options))).object as T;
  }

  watch(
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: ObjectEvent) => void,
    onError: (error: Error) => void,
  ): Promise<ObjectWatch> {
    return this.objects.watch(this.kind, namespace, this.with(options), onEvent, onError);
  }

  private checkFence(): void {
    this.signal?.throwIfAborted();
  }
}
