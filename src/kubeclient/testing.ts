// A Kubernetes-style API held in memory and served as a Transport, for the client's tests: discovery,
// objects in namespaces (a namespace must exist first), create, get, list with label selectors, merge
// patches (defaults filled in again, a write that changes nothing keeps its resourceVersion), delete,
// and Status errors — what the apply engine relies on, with every request recorded.
import type { KubeObject } from "./client.ts";
import { KubeUnreachableError } from "./errors.ts";
import { applyMergePatch, jsonEqual, type Json } from "./merge-patch.ts";
import type { Transport, TransportRequest, TransportResponse, TransportStream } from "./transport.ts";

export interface FakeResource {
  /** "" for the core group. */
  group: string;
  version: string;
  kind: string;
  /** The plural. */
  name: string;
  namespaced: boolean;
  /** Fills in defaults on every write (as admission would). */
  defaults?: (object: KubeObject) => void;
  /** Field errors that refuse a write, as `field: message`. */
  validate?: (object: KubeObject) => { field: string; message: string }[];
}

export const NAMESPACES: FakeResource = { group: "", version: "v1", kind: "Namespace", name: "namespaces", namespaced: false };
export const CONFIG_MAPS: FakeResource = { group: "", version: "v1", kind: "ConfigMap", name: "configmaps", namespaced: true };
/** A custom kind whose list elements get a default, and which refuses a negative size. */
export const WIDGETS: FakeResource = {
  group: "example.dev",
  version: "v1",
  kind: "Widget",
  name: "widgets",
  namespaced: true,
  defaults: (object) => {
    const spec = (object.spec ?? {}) as { ports?: { port: number; protocol?: string }[] };
    for (const port of spec.ports ?? []) port.protocol ??= "TCP";
  },
  validate: (object) => {
    const size = (object.spec as { size?: number } | undefined)?.size;
    return size !== undefined && size < 0 ? [{ field: "spec.size", message: `Invalid value: ${size}: must be 0 or more` }] : [];
  },
};

function apiVersionOf(resource: FakeResource): string {
  return resource.group === "" ? resource.version : `${resource.group}/${resource.version}`;
}

function prefixOf(resource: FakeResource): string {
  return resource.group === "" ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
}

function json(status: number, body: unknown): TransportResponse {
  return { status, statusText: "", headers: { "content-type": "application/json" }, body: body === undefined ? "" : JSON.stringify(body) };
}

function failure(code: number, reason: string, message: string, causes?: { field: string; message: string }[]): TransportResponse {
  return json(code, { kind: "Status", apiVersion: "v1", status: "Failure", reason, code, message, ...(causes ? { details: { causes } } : {}) });
}

function matches(object: KubeObject, selector: string | null): boolean {
  if (!selector) return true;
  return selector.split(",").every((term) => {
    const [key, value] = term.split("=");
    return object.metadata.labels?.[key!] === value;
  });
}

export class FakeApi implements Transport {
  readonly server = "https://fake.invalid";
  /** Every request, in order. */
  readonly requests: TransportRequest[] = [];
  /** Answers this instead of serving the request, when it returns something. */
  intercept: ((request: TransportRequest) => TransportResponse | Error | undefined) | undefined;
  private readonly objects = new Map<string, KubeObject>();
  private revision = 0;
  private uids = 0;

  constructor(private readonly resources: FakeResource[] = [NAMESPACES, CONFIG_MAPS, WIDGETS]) {}

  /** The stored object, if any. */
  stored(resource: FakeResource, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.objects.get(this.key(resource, resource.namespaced ? namespace : undefined, name));
  }

  /** Writes an object as another client would (defaults and a new resourceVersion; no validation). */
  put(object: KubeObject): KubeObject {
    const resource = this.resources.find((r) => r.kind === object.kind && apiVersionOf(r) === object.apiVersion)!;
    const stored = this.prepared(resource, structuredClone(object), undefined);
    this.objects.set(this.key(resource, stored.metadata.namespace, stored.metadata.name!), stored);
    return stored;
  }

  /** The write requests (not reads, not discovery), as `METHOD path`. */
  writes(): string[] {
    return this.requests.filter((r) => r.method !== "GET").map((r) => `${r.method} ${r.path.split("?")[0]}`);
  }

  async request(request: TransportRequest): Promise<TransportResponse> {
    this.requests.push(request);
    const intercepted = this.intercept?.(request);
    if (intercepted instanceof Error) throw intercepted;
    if (intercepted) return intercepted;
    return this.serve(request);
  }

  async stream(request: TransportRequest): Promise<TransportStream> {
    this.requests.push(request);
    throw new KubeUnreachableError(this.server, `${request.method} ${request.path}: the fake API does not stream`);
  }

  close(): void {}

  private key(resource: FakeResource, namespace: string | undefined, name: string): string {
    return `${resource.group}/${resource.name}/${namespace ?? ""}/${name}`;
  }

  private serve(request: TransportRequest): TransportResponse {
    const url = new URL(request.path, this.server);
    const path = url.pathname;
    if (path === "/api") return json(200, { kind: "APIVersions", versions: ["v1"] });
    if (path === "/apis") {
      const groups = [...new Set(this.resources.filter((r) => r.group !== "").map(apiVersionOf))];
      return json(200, { kind: "APIGroupList", groups: groups.map((gv) => ({ name: gv.split("/")[0], preferredVersion: { groupVersion: gv }, versions: [{ groupVersion: gv }] })) });
    }
    for (const resource of this.resources) {
      const prefix = prefixOf(resource);
      if (path === prefix) {
        const offered = this.resources.filter((r) => prefixOf(r) === prefix);
        return json(200, {
          kind: "APIResourceList",
          groupVersion: apiVersionOf(resource),
          resources: offered.map((r) => ({ name: r.name, kind: r.kind, namespaced: r.namespaced, verbs: ["create", "delete", "get", "list", "patch", "update"] })),
        });
      }
    }
    const found = this.locate(path);
    if (!found) return failure(404, "NotFound", `the server could not find the requested resource (${path})`);
    const { resource, namespace, name } = found;
    const key = name === undefined ? undefined : this.key(resource, namespace, name);
    const current = key === undefined ? undefined : this.objects.get(key);
    const what = `${resource.name}${resource.group ? `.${resource.group}` : ""} "${name}"`;
    const body = request.body === undefined ? undefined : (JSON.parse(request.body) as KubeObject);
    switch (request.method) {
      case "GET":
        if (name === undefined) {
          const items = [...this.objects.values()].filter(
            (o) => o.kind === resource.kind && o.apiVersion === apiVersionOf(resource) && (namespace === undefined || o.metadata.namespace === namespace) && matches(o, url.searchParams.get("labelSelector")),
          );
          return json(200, { kind: `${resource.kind}List`, apiVersion: apiVersionOf(resource), metadata: { resourceVersion: String(this.revision) }, items });
        }
        return current ? json(200, current) : failure(404, "NotFound", `${what} not found`);
      case "POST": {
        const object = body!;
        const objectKey = this.key(resource, namespace, object.metadata.name!);
        if (this.objects.has(objectKey)) return failure(409, "AlreadyExists", `${resource.name} "${object.metadata.name}" already exists`);
        if (resource.namespaced && !this.objects.has(this.key(NAMESPACES, undefined, namespace!))) return failure(404, "NotFound", `namespaces "${namespace}" not found`);
        return this.write(resource, objectKey, { ...object, metadata: { ...object.metadata, ...(namespace ? { namespace } : {}) } }, undefined, url);
      }
      case "PATCH": {
        if (!current) return failure(404, "NotFound", `${what} not found`);
        if (request.headers["content-type"] !== "application/merge-patch+json") return failure(415, "UnsupportedMediaType", `${request.headers["content-type"]} is not supported`);
        const merged = applyMergePatch(structuredClone(current) as unknown as Json, body as unknown as Json) as unknown as KubeObject;
        return this.write(resource, key!, merged, current, url);
      }
      case "DELETE":
        if (!current) return failure(404, "NotFound", `${what} not found`);
        this.objects.delete(key!);
        return json(200, { kind: "Status", apiVersion: "v1", status: "Success", details: { name, kind: resource.name } });
      default:
        return failure(405, "MethodNotAllowed", `${request.method} is not allowed`);
    }
  }

  /** Validates, fills in defaults and stores; a write that changes nothing keeps the stored object. */
  private write(resource: FakeResource, key: string, object: KubeObject, current: KubeObject | undefined, url: URL): TransportResponse {
    const causes = resource.validate?.(object) ?? [];
    if (causes.length > 0) {
      return json(422, { kind: "Status", apiVersion: "v1", status: "Failure", reason: "Invalid", code: 422, message: `${resource.kind} "${object.metadata.name}" is invalid`, details: { kind: resource.kind, name: object.metadata.name, causes } });
    }
    const next = this.prepared(resource, object, current);
    if (current && jsonEqual(next, current)) return json(200, current);
    if (url.searchParams.get("dryRun") === "All") return json(current ? 200 : 201, next);
    next.metadata.resourceVersion = String(++this.revision);
    this.objects.set(key, next);
    return json(current ? 200 : 201, next);
  }

  private prepared(resource: FakeResource, object: KubeObject, current: KubeObject | undefined): KubeObject {
    const next = structuredClone(object);
    resource.defaults?.(next);
    next.metadata.uid = current?.metadata.uid ?? `uid-${++this.uids}`;
    next.metadata.creationTimestamp = current?.metadata.creationTimestamp ?? "2026-01-01T00:00:00Z";
    next.metadata.resourceVersion = current?.metadata.resourceVersion ?? String(++this.revision);
    if (next.metadata.labels && Object.keys(next.metadata.labels).length === 0) delete next.metadata.labels;
    if (next.metadata.annotations && Object.keys(next.metadata.annotations).length === 0) delete next.metadata.annotations;
    return next;
  }

  /** The resource, namespace and name (none for a collection) a path addresses. */
  private locate(path: string): { resource: FakeResource; namespace: string | undefined; name: string | undefined } | undefined {
    for (const resource of this.resources) {
      const prefix = prefixOf(resource);
      if (!path.startsWith(`${prefix}/`)) continue;
      const segments = path.slice(prefix.length + 1).split("/").map(decodeURIComponent);
      if (resource.namespaced && segments[0] === "namespaces" && segments.length >= 3 && segments[2] === resource.name) {
        return { resource, namespace: segments[1], name: segments[3] };
      }
      if (segments[0] === resource.name && segments.length <= 2) return { resource, namespace: undefined, name: segments[1] };
    }
    return undefined;
  }
}
