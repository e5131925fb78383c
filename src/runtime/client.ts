// The controllers' client: typed reads and writes through the API server's ObjectService, in process,
// so every write gets exactly the admission, validation, finalizer and resourceVersion checks an HTTP
// request gets. A fenced client (fencedBy) refuses writes once its signal aborts: work that lost its
// shard cannot write, even when it is still running.
import type { KindDefinition } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import type {
  DeleteOptions,
  ListOptions,
  ObjectEvent,
  ObjectService,
  ObjectWatch,
  WatchOptions,
  WriteOptions,
} from "../apiserver/objects.ts";
import type { PatchType } from "../apiserver/patch.ts";

export interface ObjectListOf<T> {
  items: T[];
  resourceVersion: string;
  continue?: string;
}

export class Client {
  constructor(
    readonly objects: ObjectService,
    private readonly signal?: AbortSignal,
  ) {}

  /** The same client, whose writes fail with the signal's reason once it aborts. */
  fencedBy(signal: AbortSignal): Client {
    return new Client(this.objects, this.signal ? AbortSignal.any([this.signal, signal]) : signal);
  }

  of<T extends KubeObject>(kind: KindDefinition<T>): KindClient<T> {
    return new KindClient<T>(this.objects, kind as unknown as KindDefinition, this.signal);
  }
}

export class KindClient<T extends KubeObject> {
  constructor(
    private readonly objects: ObjectService,
    readonly kind: KindDefinition,
    private readonly signal: AbortSignal | undefined,
  ) {}

  async get(namespace: string | undefined, name: string): Promise<T> {
    return (await this.objects.get(this.kind, namespace, name)) as T;
  }

  async tryGet(namespace: string | undefined, name: string): Promise<T | undefined> {
    return (await this.objects.tryGet(this.kind, namespace, name)) as T | undefined;
  }

  async list(namespace?: string, options: ListOptions = {}): Promise<ObjectListOf<T>> {
    const list = await this.objects.list(this.kind, namespace, options);
    return { items: list.items as T[], resourceVersion: list.metadata.resourceVersion, continue: list.metadata.continue };
  }

  async create(object: T, options: WriteOptions = {}): Promise<T> {
    this.checkFence();
    const result = await this.objects.create(this.kind, object.metadata.namespace, object, options);
    return result.object as T;
  }

  /** Replaces the object; its metadata.resourceVersion, when set, must still be current (409 otherwise). */
  async update(object: T, options: WriteOptions = {}): Promise<T> {
    this.checkFence();
    const result = await this.objects.update(this.kind, object.metadata.namespace, object.metadata.name ?? "", object, options);
    return result.object as T;
  }

  /** Writes the status only, with the same resourceVersion precondition as update. */
  async updateStatus(object: T, options: WriteOptions = {}): Promise<T> {
    this.checkFence();
    const result = await this.objects.updateStatus(this.kind, object.metadata.namespace, object.metadata.name ?? "", object, options);
    return result.object as T;
  }

  async patch(
    namespace: string | undefined,
    name: string,
    type: PatchType,
    body: unknown,
    options: WriteOptions & { subresource?: "status" } = {},
  ): Promise<T> {
    this.checkFence();
    const result = await this.objects.patch(this.kind, namespace, name, type, body, options);
    return result.object as T;
  }

  async delete(namespace: string | undefined, name: string, options: DeleteOptions = {}): Promise<T> {
    this.checkFence();
    return (await this.objects.delete(this.kind, namespace, name, options)) as T;
  }

  watch(
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (event: ObjectEvent) => void,
    onError: (error: Error) => void,
  ): Promise<ObjectWatch> {
    return this.objects.watch(this.kind, namespace, options, onEvent, onError);
  }

  private checkFence(): void {
    this.signal?.throwIfAborted();
  }
}
