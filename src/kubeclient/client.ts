// A small client of Kubernetes-style APIs: the `slipway` CLI talks to the control plane with it, and
// controllers talk to workload clusters. Paths are relative to the server URL (which may carry a path
// prefix); `resourcePath` builds them from apiVersion and kind through discovery.
import { parseKubeconfig } from "../bootstrap/kubeconfig.ts";
import { Discovery, groupVersionPrefix, type ApiResource } from "./discovery.ts";
import { KubeAlreadyExistsError, KubeUnreachableError } from "./errors.ts";
import { Transport, type KubeResponse, type TransportOptions } from "./transport.ts";
import { readWatch, type KubeWatch, type WatchEvent } from "./watch.ts";

/** What every object looks like, whatever its kind. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name?: string;
    generateName?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[];
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

export interface KubeList<T> {
  apiVersion: string;
  kind: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

export interface WatchOptions {
  /** Events after this version; omitted, the server starts with ADDED events for what exists. */
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
  allowWatchBookmarks?: boolean;
  /** How long the server keeps the watch open before ending it. */
  timeoutSeconds?: number;
  /** The Accept header: e.g. the Table of each changed object instead of the object. */
  accept?: string;
}

export interface WriteOptions {
  dryRun?: boolean;
  fieldValidation?: "Strict" | "Warn" | "Ignore";
}

export interface DeleteOptions {
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  preconditions?: { uid?: string; resourceVersion?: string };
}

export type PatchType = "merge" | "json" | "strategic";

const PATCH_CONTENT_TYPE: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
};

export interface ObjectAddress {
  apiVersion: string;
  /** The kind (`Cluster`) or its plural (`clusters`). */
  kind: string;
  namespace?: string;
  name?: string;
  subresource?: string;
}

export type ApplyAction = "created" | "configured" | "unchanged";

export interface ApplyResult<T> {
  action: ApplyAction;
  object: T;
}

export interface KubeClientOptions extends TransportOptions {
  /** Namespace of namespaced objects that name none (default "default"). */
  namespace?: string;
}

/** Metadata the server owns; a patch built from an object read earlier must not carry them. */
const SERVER_METADATA = ["uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"];

function withQuery(path: string, query: Record<string, string | number | boolean | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  if (text === "") return path;
  return `${path}${path.includes("?") ? "&" : "?"}${text}`;
}

function writeQuery(options: WriteOptions): Record<string, string | undefined> {
  return { dryRun: options.dryRun ? "All" : undefined, fieldValidation: options.fieldValidation };
}

export class KubeClient {
  private readonly transport: Transport;
  private readonly discovery: Discovery;
  /** Namespace of namespaced objects that name none. */
  readonly namespace: string;

  constructor(options: KubeClientOptions) {
    this.transport = new Transport(options);
    this.discovery = new Discovery(this.transport);
    this.namespace = options.namespace ?? "default";
  }

  /** A client for a kubeconfig's context (default the current one): bearer token or client certificate. */
  static fromKubeconfig(text: string, options: { context?: string; timeoutMs?: number } = {}): KubeClient {
    const connection = parseKubeconfig(text, options.context === undefined ? {} : { context: options.context });
    return new KubeClient({
      server: connection.server,
      caCertPem: connection.caCertPem,
      ...(connection.token === undefined ? {} : { token: connection.token }),
      ...(connection.clientCertPem === undefined ? {} : { clientCertPem: connection.clientCertPem }),
      ...(connection.clientKeyPem === undefined ? {} : { clientKeyPem: connection.clientKeyPem }),
      ...(connection.tlsServerName === undefined ? {} : { tlsServerName: connection.tlsServerName }),
      ...(connection.namespace === undefined ? {} : { namespace: connection.namespace }),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    });
  }

  /** The server URL. */
  get server(): string {
    return this.transport.server;
  }

  /** Sends any request; error statuses throw the named KubeApiError. */
  raw<T = unknown>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<KubeResponse<T>> {
    return this.transport.request<T>(method, path, {
      ...(body === undefined ? {} : { body }),
      ...(headers === undefined ? {} : { headers }),
    });
  }

  async get<T = KubeObject>(path: string): Promise<T> {
    return (await this.transport.request<T>("GET", path)).body;
  }

  async list<T = KubeObject>(path: string, options: ListOptions = {}): Promise<KubeList<T>> {
    const query = { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector, limit: options.limit, continue: options.continue };
    return (await this.transport.request<KubeList<T>>("GET", withQuery(path, query))).body;
  }

  /** Every item of a collection, following `continue` tokens page by page. */
  async listAll<T = KubeObject>(path: string, options: Omit<ListOptions, "continue"> = {}): Promise<T[]> {
    const items: T[] = [];
    let next: string | undefined;
    do {
      const page: KubeList<T> = await this.list<T>(path, { ...options, ...(next === undefined ? {} : { continue: next }) });
      items.push(...page.items);
      next = page.metadata.continue || undefined;
    } while (next !== undefined);
    return items;
  }

  /** Creates an object in a collection (`path` names the collection). */
  async create<T = KubeObject>(path: string, body: unknown, options: WriteOptions = {}): Promise<T> {
    return (await this.transport.request<T>("POST", withQuery(path, writeQuery(options)), { body })).body;
  }

  /** Replaces an object; its `metadata.resourceVersion`, if set, must be the current one (else KubeConflictError). */
  async update<T = KubeObject>(path: string, body: unknown, options: WriteOptions = {}): Promise<T> {
    return (await this.transport.request<T>("PUT", withQuery(path, writeQuery(options)), { body })).body;
  }

  async patch<T = KubeObject>(path: string, body: unknown, type: PatchType = "merge", options: WriteOptions = {}): Promise<T> {
    return (await this.transport.request<T>("PATCH", withQuery(path, writeQuery(options)), { body, contentType: PATCH_CONTENT_TYPE[type] })).body;
  }

  /** Deletes an object; answers the object (still there while finalizers hold it) or a Status. */
  async delete<T = KubeObject>(path: string, options: DeleteOptions = {}): Promise<T> {
    const body = { kind: "DeleteOptions", apiVersion: "v1", ...options };
    return (await this.transport.request<T>("DELETE", path, { body })).body;
  }

  /**
   * Watches a collection: `onEvent` gets ADDED, MODIFIED, DELETED and BOOKMARK events in order (a handler
   * returning a promise holds back the next event). `opened` resolves once the server accepted the watch;
   * `done` settles when the watch ends (see KubeWatch).
   */
  watch<T = KubeObject>(path: string, options: WatchOptions, onEvent: (event: WatchEvent<T>) => void | Promise<void>): KubeWatch & { opened: Promise<void> } {
    const query = {
      watch: "true",
      resourceVersion: options.resourceVersion,
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      allowWatchBookmarks: options.allowWatchBookmarks ? "true" : undefined,
      timeoutSeconds: options.timeoutSeconds,
    };
    const request = `GET ${path} (watch)`;
    const brokeOff = (error: unknown) =>
      new KubeUnreachableError(this.server, `${request}: the stream from ${this.server} broke off: ${(error as Error).message}`, { cause: error });
    const abandon = new AbortController();
    let reading: KubeWatch | undefined;
    let markOpened: () => void = () => {};
    const opened = new Promise<void>((resolve) => (markOpened = resolve));
    const started = this.transport.stream("GET", withQuery(path, query), { signal: abandon.signal, ...(options.accept ? { headers: { accept: options.accept } } : {}) });
    const done = (async () => {
      try {
        const { response, abort } = await started;
        reading = readWatch<T>(response, abort, request, onEvent, brokeOff);
        if (abandon.signal.aborted) reading.close();
      } catch (error) {
        if (abandon.signal.aborted) return;
        throw error;
      }
      markOpened();
      await reading.done;
    })();
    // Rejects like `done` when the watch cannot start; callers may leave it unawaited and read `done`.
    const openedOrFailed = Promise.race([opened, done]);
    openedOrFailed.catch(() => {});
    return {
      opened: openedOrFailed,
      done,
      close: () => {
        abandon.abort();
        reading?.close();
      },
    };
  }

  /** The resource of a kind in a group version (discovered once, then cached). */
  resource(apiVersion: string, kind: string): Promise<ApiResource> {
    return this.discovery.resolve(apiVersion, kind);
  }

  /** The resource a user names as kubectl accepts it: `clusters`, `cluster`, `Cluster`, `cl`, `clusters.slipway.dev`. */
  findResource(name: string): Promise<ApiResource> {
    return this.discovery.find(name);
  }

  /** Forgets discovered resources (after new kinds were installed). */
  invalidateDiscovery(): void {
    this.discovery.invalidate();
  }

  /**
   * The path of a collection or an object. A namespaced object with a name but no namespace is in the
   * client's namespace; a namespaced collection without a namespace spans all namespaces.
   */
  async resourcePath(address: ObjectAddress): Promise<string> {
    const resource = await this.discovery.resolve(address.apiVersion, address.kind);
    const namespace = resource.namespaced ? (address.namespace ?? (address.name !== undefined ? this.namespace : undefined)) : undefined;
    let path = groupVersionPrefix(resource.apiVersion);
    if (namespace !== undefined) path += `/namespaces/${encodeURIComponent(namespace)}`;
    path += `/${resource.name}`;
    if (address.name !== undefined) path += `/${encodeURIComponent(address.name)}`;
    if (address.subresource !== undefined) path += `/${address.subresource}`;
    return path;
  }

  /**
   * Creates the object, or, when it exists, merge-patches it with the object's fields (like `kubectl
   * apply` without a last-applied record: fields the object leaves out are kept, not removed). Status
   * and server-owned metadata are left out of the patch. Answers what happened and the object as stored.
   */
  async apply<T extends KubeObject = KubeObject>(object: T, options: WriteOptions = {}): Promise<ApplyResult<T>> {
    const name = object.metadata.name;
    if (!name) throw new TypeError(`apply needs metadata.name (${object.kind})`);
    const resource = await this.discovery.resolve(object.apiVersion, object.kind);
    const namespace = resource.namespaced ? (object.metadata.namespace ?? this.namespace) : undefined;
    const collection = await this.resourcePath({ apiVersion: object.apiVersion, kind: object.kind, ...(namespace === undefined ? {} : { namespace }) });
    const desired = desiredFields(object, namespace);
    try {
      return { action: "created", object: await this.create<T>(collection, desired, options) };
    } catch (error) {
      if (!(error instanceof KubeAlreadyExistsError)) throw error;
    }
    const path = `${collection}/${encodeURIComponent(name)}`;
    const current = await this.get<T>(path);
    const patched = await this.patch<T>(path, desired, "merge", options);
    const changed = patched.metadata.resourceVersion !== current.metadata.resourceVersion;
    return { action: changed ? "configured" : "unchanged", object: patched };
  }

  /** Closes pooled connections; open watches end. */
  close(): void {
    this.transport.close();
  }
}

/** The object as a user declares it: without status and server-owned metadata, in its namespace. */
function desiredFields(object: KubeObject, namespace: string | undefined): KubeObject {
  const { status: _status, ...rest } = object;
  const metadata: KubeObject["metadata"] = { ...object.metadata };
  for (const field of SERVER_METADATA) delete metadata[field];
  if (namespace !== undefined) metadata.namespace = namespace;
  return { ...rest, metadata };
}
