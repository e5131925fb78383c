// A small client of Kubernetes-style APIs: the `slipway` CLI talks to the control plane with it, and
// controllers talk to workload clusters. Paths are relative to the server URL (which may carry a path
// prefix); `resourcePath` builds them from apiVersion and kind through discovery. Requests travel
// through a Transport (node:https by default; any other, such as fetch in a browser, can be given).
import { parseKubeconfig } from "../bootstrap/kubeconfig.ts";
import { Applier, type ApplyResult } from "./apply.ts";
import { Discovery, groupVersionPrefix, type ApiResource } from "./discovery.ts";
import { KubeUnreachableError, kubeApiError } from "./errors.ts";
import { HttpsTransport, type HttpsTransportOptions } from "./https-transport.ts";
import { DEFAULT_TIMEOUT_MS, type Transport, type TransportRequest } from "./transport.ts";
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
  /** Who makes the change (the server records it). */
  fieldManager?: string;
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

export interface KubeResponse<T = unknown> {
  statusCode: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** Parsed JSON, the text when it is not JSON, or undefined when empty. */
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  /** Content type of the body (default application/json). */
  contentType?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** Abandons the request. */
  signal?: AbortSignal;
}

interface ClientSettings {
  /** Namespace of namespaced objects that name none (default "default"). */
  namespace?: string;
  /** Time limit of one request, until its whole answer arrived (default 30 s). */
  timeoutMs?: number;
}

/** A client over node:https with these credentials, or over a transport of the caller's. */
export type KubeClientOptions = ClientSettings & (HttpsTransportOptions | { transport: Transport });

function withQuery(path: string, query: Record<string, string | number | boolean | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  if (text === "") return path;
  return `${path}${path.includes("?") ? "&" : "?"}${text}`;
}

function writeQuery(options: WriteOptions): Record<string, string | undefined> {
  return { dryRun: options.dryRun ? "All" : undefined, fieldValidation: options.fieldValidation, fieldManager: options.fieldManager };
}

function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function retryAfterSeconds(headers: Record<string, string>): number | undefined {
  const header = headers["retry-after"];
  if (header === undefined) return undefined;
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

export class KubeClient {
  private readonly transport: Transport;
  private readonly discovery: Discovery;
  private readonly timeoutMs: number;
  /** Namespace of namespaced objects that name none. */
  readonly namespace: string;

  constructor(options: KubeClientOptions) {
    this.transport = "transport" in options ? options.transport : new HttpsTransport(options);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.discovery = new Discovery(async (path) => (await this.request("GET", path)).body);
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

  /** The transport request for a call: JSON bodies, JSON answers asked for. */
  private transportRequest(method: string, path: string, options: RequestOptions, timeoutMs: number): TransportRequest {
    const body = options.body === undefined ? undefined : typeof options.body === "string" ? options.body : JSON.stringify(options.body);
    return {
      method,
      path,
      headers: {
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": options.contentType ?? "application/json" }),
        ...lowerCased(options.headers),
      },
      ...(body === undefined ? {} : { body }),
      timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    };
  }

  /** Sends a request and reads the whole answer; error statuses throw the named KubeApiError. */
  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<KubeResponse<T>> {
    const response = await this.transport.request(this.transportRequest(method, path, options, options.timeoutMs ?? this.timeoutMs));
    const body = parseBody(response.body);
    if (response.status >= 400) {
      const retryAfter = retryAfterSeconds(response.headers);
      throw kubeApiError(response.status, response.statusText, body, {
        request: `${method} ${path}`,
        ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }),
      });
    }
    return { statusCode: response.status, headers: response.headers, body: body as T };
  }

  /** Sends any request; error statuses throw the named KubeApiError. */
  raw<T = unknown>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<KubeResponse<T>> {
    return this.request<T>(method, path, {
      ...(body === undefined ? {} : { body }),
      ...(headers === undefined ? {} : { headers }),
    });
  }

  async get<T = KubeObject>(path: string): Promise<T> {
    return (await this.request<T>("GET", path)).body;
  }

  async list<T = KubeObject>(path: string, options: ListOptions = {}): Promise<KubeList<T>> {
    const query = { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector, limit: options.limit, continue: options.continue };
    return (await this.request<KubeList<T>>("GET", withQuery(path, query))).body;
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
    return (await this.request<T>("POST", withQuery(path, writeQuery(options)), { body })).body;
  }

  /** Replaces an object; its `metadata.resourceVersion`, if set, must be the current one (else KubeConflictError). */
  async update<T = KubeObject>(path: string, body: unknown, options: WriteOptions = {}): Promise<T> {
    return (await this.request<T>("PUT", withQuery(path, writeQuery(options)), { body })).body;
  }

  async patch<T = KubeObject>(path: string, body: unknown, type: PatchType = "merge", options: WriteOptions = {}): Promise<T> {
    return (await this.request<T>("PATCH", withQuery(path, writeQuery(options)), { body, contentType: PATCH_CONTENT_TYPE[type] })).body;
  }

  /** Deletes an object; answers the object (still there while finalizers hold it) or a Status. */
  async delete<T = KubeObject>(path: string, options: DeleteOptions = {}): Promise<T> {
    const body = { kind: "DeleteOptions", apiVersion: "v1", ...options };
    return (await this.request<T>("DELETE", path, { body })).body;
  }

  /**
   * Opens a streaming request (a watch): the time limit covers only the wait for the answer's headers.
   * An error status is read whole and thrown as the named KubeApiError.
   */
  private async stream(method: string, path: string, options: RequestOptions): Promise<{ body: AsyncIterable<Uint8Array | string>; abort(): void }> {
    const stream = await this.transport.stream(this.transportRequest(method, path, options, options.timeoutMs ?? this.timeoutMs));
    if (stream.status < 400) return stream;
    let text = "";
    try {
      text = await readText(stream.body);
    } catch {
      // The error status says enough without its body.
    } finally {
      stream.abort();
    }
    throw kubeApiError(stream.status, stream.statusText, parseBody(text), { request: `${method} ${path}` });
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
    const started = this.stream("GET", withQuery(path, query), { signal: abandon.signal, ...(options.accept ? { headers: { accept: options.accept } } : {}) });
    const done = (async () => {
      try {
        const { body, abort } = await started;
        reading = readWatch<T>(body, abort, request, onEvent, brokeOff);
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

  /** Applies one object with client-side apply (see Applier, which also applies sets in order and prunes). */
  apply<T extends KubeObject = KubeObject>(object: T, options: WriteOptions = {}): Promise<ApplyResult<T>> {
    return new Applier(this, options).apply<T>(object);
  }

  /** Closes pooled connections; open watches end. */
  close(): void {
    this.transport.close();
  }
}

function lowerCased(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
}

/** A whole body as text. */
async function readText(body: AsyncIterable<Uint8Array | string>): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of body) text += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}
