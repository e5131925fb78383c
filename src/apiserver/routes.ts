// The REST surface of one API (one registry over one store): URL parsing, verbs, Tables and watches.
// The server mounts one or more of these (the sim cloud serves a workload cluster's API per path).
import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { parse as parseYaml } from "yaml";
import { apiVersionOf, type KindDefinition, type Registry } from "../api/registry.ts";
import type { KubeObject } from "../api/meta.ts";
import { authorize } from "./authorization/authorizer.ts";
import { apiVersions, group, groupList, resourceList, SERVER_VERSION, type CreateOnlyKind } from "./discovery.ts";
import { BadRequestError, InternalError, InvalidError, MethodNotAllowedError, NotFoundError, UnsupportedMediaTypeError, type ApiError } from "./errors.ts";
import type { ApiMetrics } from "./metrics.ts";
import type { ObjectService, DeleteOptions, DeletePropagation, ObjectEvent, WriteOptions, WriteResult } from "./objects.ts";
import { renderOpenApi } from "./openapi.ts";
import { SCALE_SUBRESOURCE, serveScale } from "./scale.ts";
import { decodeProtobuf, hasProtobuf, prefersProtobuf, PROTOBUF } from "./protobuf.ts";
import { OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_RESPONSE, renderedOpenApiV2 } from "./openapi-v2.ts";
import { isApplyPatch, patchTypeOf } from "./patch.ts";
import { fieldManagerError, fieldManagerOf, type Identity, type RequestContext } from "./request-context.ts";
import { toTable, wantsTable, type IncludeObject } from "./table.ts";
import type { FieldValidation } from "./validation.ts";

/**
 * A subresource that computes an answer rather than storing anything, as a ServiceAccount's `token`
 * answers a TokenRequest: POST with a body, get the body back with its status filled in. The request is
 * authorized as a create of the subresource.
 */
export interface SubresourceAction {
  /** e.g. "slipway.dev/clusters/plan", or "/pods/eviction" for a core kind */
  path: string;
  /** The kind the subresource takes, for discovery to list it (kubectl drain looks for pods/eviction there). */
  discovery?: { group: string; version: string; kind: string };
  /** The HTTP status of an answer (default 200; an eviction answers 201). */
  code?: number;
  /** POST (default: a create of the subresource, as an eviction) or PUT (an update, as a CSR's approval). */
  method?: "POST" | "PUT";
  handle(request: { namespace: string | undefined; name: string; body: unknown; context: RequestContext }): Promise<unknown>;
}

/**
 * A kind that is only created, its answer computed from the request and never stored, as kube-apiserver
 * serves SelfSubjectAccessReview or SelfSubjectReview: POST the object to its collection, get it back
 * (201) with its status filled in. The request is authorized as a create of the kind.
 */
export interface CreateOnlyResource extends CreateOnlyKind {
  handle(request: { namespace: string | undefined; body: unknown; context: RequestContext }): unknown;
}

/** What /version answers. */
export type VersionInfo = typeof SERVER_VERSION;

/** What a request resolves to: which API it addresses and the path inside it. */
export interface ApiContext {
  registry: Registry;
  /** The object service: authorization, admission, storage and post-write hooks of this API. */
  objects: ObjectService;
  metrics: ApiMetrics;
  /** Pre-rendered OpenAPI documents. */
  openapi: { index: string; documents: Map<string, string> };
  bookmarkIntervalMs: number;
  /** Subresources answered by a computation (see SubresourceAction), by path. */
  actions?: Map<string, SubresourceAction>;
  /** What /version answers (default: Slipway's own version). */
  version?: VersionInfo;
  /** Kinds only ever created and never stored (see CreateOnlyResource). */
  createOnly?: readonly CreateOnlyResource[];
}

export function createApiContext(options: {
  registry: Registry;
  objects: ObjectService;
  metrics: ApiMetrics;
  bookmarkIntervalMs?: number;
  actions?: SubresourceAction[];
  createOnly?: CreateOnlyResource[];
}): ApiContext {
  return {
    ...options,
    actions: new Map((options.actions ?? []).map((a) => [a.path, a])),
    openapi: renderOpenApi(options.registry),
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? BOOKMARK_INTERVAL_MS,
  };
}

type Query = Record<string, string | undefined>;

interface ResourcePath {
  def: KindDefinition;
  namespace?: string;
  name?: string;
  subresource?: string;
}

/** Labels a request for logs and metrics. */
export interface RequestInfo {
  verb: string;
  resource: string;
  /** The resource's API group ("" for core) and version, once the path names a resource. */
  group?: string;
  version?: string;
  namespace?: string;
  name?: string;
}

const MAX_WATCH_SECONDS = 1800;
/** How often a watch that asked for bookmarks gets one: kube-apiserver's frequency. */
export const BOOKMARK_INTERVAL_MS = 60_000;
/** How long before its timeout a watch gets its last bookmark. */
const BOOKMARK_BEFORE_TIMEOUT_MS = 2_000;
/** The largest page a list answers; a larger limit (up to int64) asks for no more. */
const MAX_PAGE = 2 ** 31 - 1;

/** A boolean query parameter, read as Go's strconv.ParseBool reads it (what kube-apiserver accepts). */
export function queryBool(name: string, v: string | undefined): boolean {
  if (v === undefined || v === "") return false;
  if (["1", "t", "T", "true", "TRUE", "True"].includes(v)) return true;
  if (["0", "f", "F", "false", "FALSE", "False"].includes(v)) return false;
  throw new BadRequestError(`${name} must be a boolean (true or false), got "${v}"`);
}

function resolveResource(registry: Registry, groupName: string, version: string, rest: string[]): ResourcePath {
  const notFound = () => new NotFoundError({ group: groupName, kind: "", plural: rest.join("/") }, "the server could not find the requested resource");
  if (rest[0] === "namespaces" && rest.length >= 3) {
    const def = registry.byPlural(groupName, version, rest[2]!);
    if (def && def.namespaced) {
      if (rest.length > 5) throw notFound();
      return { def, namespace: rest[1], name: rest[3], subresource: rest[4] };
    }
  }
  const def = registry.byPlural(groupName, version, rest[0]!);
  if (!def || rest.length > 3) throw notFound();
  if (def.namespaced && rest[1] !== undefined) throw notFound();
  return { def, name: rest[1], subresource: rest[2] };
}

/** How deeply a request body may nest (kube-apiserver refuses deeper documents too; manifests need far fewer). */
export const MAX_BODY_DEPTH = 100;

/** The nesting depth of a parsed document, counted without recursion (a deep one must not overflow the stack). */
export function nestingDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_BODY_DEPTH) return deepest;
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

function parseBody(request: FastifyRequest): unknown {
  const raw = request.body;
  if (raw === undefined || raw === null || raw === "") return undefined;
  if (Buffer.isBuffer(raw) && mimeOf(request) === PROTOBUF) return raw.length === 0 ? undefined : decodeProtobuf(raw);
  const text = typeof raw === "string" ? raw : Buffer.isBuffer(raw) ? raw.toString("utf8") : JSON.stringify(raw);
  const mime = mimeOf(request);
  let parsed: unknown;
  try {
    parsed = mime.endsWith("yaml") ? (parseYaml(text) as unknown) : (JSON.parse(text) as unknown);
  } catch (e) {
    throw new BadRequestError(`the request body is not valid ${mime.includes("yaml") ? "YAML" : "JSON"}: ${(e as Error).message}`);
  }
  if (nestingDepth(parsed) > MAX_BODY_DEPTH) throw new BadRequestError(`the request body nests deeper than ${MAX_BODY_DEPTH} levels`);
  return parsed;
}

function mimeOf(request: FastifyRequest): string {
  return (request.headers["content-type"] ?? "application/json").split(";")[0]!.trim().toLowerCase();
}

/** The body of a create, update or computed action: JSON, YAML, or protobuf for the kinds that have a message. */
function requireJsonBody(request: FastifyRequest): unknown {
  const mime = mimeOf(request);
  if (!["application/json", "application/yaml", "application/x-yaml", PROTOBUF].includes(mime)) throw new UnsupportedMediaTypeError(mime);
  const body = parseBody(request);
  if (body === undefined) throw new BadRequestError("the request body is empty");
  return body;
}

/** The options of a write: ?fieldValidation, and the request's context with ?dryRun and the field manager. */
function writeOptions(query: Query, context: RequestContext): WriteOptions {
  const fv = query.fieldValidation;
  let fieldValidation: FieldValidation = "Strict";
  if (fv === "Ignore" || fv === "Warn" || fv === "Strict") fieldValidation = fv;
  else if (fv !== undefined && fv !== "") throw new BadRequestError(`fieldValidation must be one of Ignore, Warn, Strict (got "${fv}")`);
  const refused = fieldManagerError(context.fieldManager);
  if (refused) throw new BadRequestError(refused);
  return { fieldValidation, context: query.dryRun === "All" ? { ...context, dryRun: true } : context };
}

/**
 * The options of a delete, from the query and a DeleteOptions body: propagationPolicy, or the older
 * orphanDependents (true means Orphan), never both; preconditions; dryRun.
 */
function deleteOptions(request: FastifyRequest, query: Query, context: RequestContext): DeleteOptions {
  const body = (parseBody(request) ?? {}) as {
    propagationPolicy?: string;
    orphanDependents?: boolean;
    preconditions?: { uid?: string; resourceVersion?: string };
    dryRun?: string[];
  };
  const policy = query.propagationPolicy ?? body.propagationPolicy;
  if (policy !== undefined && !["Background", "Foreground", "Orphan"].includes(policy)) {
    throw new BadRequestError(`propagationPolicy must be one of Background, Foreground, Orphan (got "${policy}")`);
  }
  const orphan = query.orphanDependents !== undefined ? queryBool("orphanDependents", query.orphanDependents) : body.orphanDependents;
  if (orphan !== undefined && typeof orphan !== "boolean") throw new BadRequestError("orphanDependents must be a boolean");
  if (orphan !== undefined && policy !== undefined) {
    throw new InvalidError({ group: "meta.k8s.io", kind: "DeleteOptions", plural: "deleteoptions" }, [
      { field: "propagationPolicy", reason: "FieldValueInvalid", message: `Invalid value: "${policy}": orphanDependents and deletionPropagation cannot be both set` },
    ]);
  }
  const dryRunBody = Array.isArray(body.dryRun) && body.dryRun.includes("All");
  const options = writeOptions(dryRunBody ? { ...query, dryRun: "All" } : query, context);
  return {
    ...options,
    propagationPolicy: (policy ?? (orphan === undefined ? undefined : orphan ? "Orphan" : "Background")) as DeletePropagation | undefined,
    preconditions: body.preconditions,
  };
}

function includeObjectOf(query: Query): IncludeObject {
  const v = query.includeObject;
  return v === "None" || v === "Object" ? v : "Metadata";
}

/** A header value holds Latin-1 only: anything else (a field name in another script) goes as a \\u escape. */
function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Passes on what a write says to its client: warnings, and the headers post-write hooks asked for. */
function sendWriteResult(reply: FastifyReply, result: WriteResult): KubeObject {
  if (result.warnings.length > 0) reply.header("Warning", result.warnings.map((w) => `299 - ${headerSafe(JSON.stringify(w))}`).join(", "));
  for (const [name, value] of Object.entries(result.responseHeaders ?? {})) reply.header(name, value);
  return result.object;
}

/** The actions of a group that discovery lists, by "<plural>/<subresource>". */
function listedActions(ctx: ApiContext, group: string): Record<string, { group: string; version: string; kind: string }> {
  const listed: Record<string, { group: string; version: string; kind: string }> = {};
  for (const [path, action] of ctx.actions ?? []) {
    if (action.discovery && path.startsWith(`${group}/`)) listed[path.slice(group.length + 1)] = action.discovery;
  }
  return listed;
}

/** Discovery, OpenAPI and version paths: what is not a resource. */
function isResourcePath(segments: string[]): boolean {
  return (segments[0] === "api" && segments.length >= 3) || (segments[0] === "apis" && segments.length >= 4);
}

/**
 * Handles one request addressed to `path` inside the API of `ctx`, for an authenticated identity;
 * returns the body to send.
 */
export async function handleApiRequest(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  info: RequestInfo,
  identity: Identity,
): Promise<unknown> {
  const segments = path.split("/").filter((s) => s.length > 0).map(decodeURIComponent);
  const query = request.query as Query;
  const method = request.method;
  info.verb = method.toLowerCase();
  const context: RequestContext = { identity, fieldManager: fieldManagerOf(query.fieldManager, request.headers["user-agent"]) };
  if (!isResourcePath(segments)) {
    const pending = authorize(ctx.objects.authorizer, { identity, verb: info.verb, path });
    if (pending) await pending;
  }
  if (segments[0] === "version" && segments.length === 1) return ctx.version ?? SERVER_VERSION;
  if (segments[0] === "openapi") return openapi(ctx, segments, request, reply);
  let groupName: string;
  let version: string | undefined;
  let rest: string[];
  if (segments[0] === "api") {
    if (segments.length === 1) return apiVersions(request.headers.host ?? "127.0.0.1");
    groupName = "";
    version = segments[1];
    rest = segments.slice(2);
  } else if (segments[0] === "apis") {
    if (segments.length === 1) return groupList(ctx.registry, ctx.createOnly);
    groupName = segments[1]!;
    if (segments.length === 2) {
      const g = group(ctx.registry, groupName, ctx.createOnly);
      if (!g) throw new NotFoundError({ group: groupName, kind: "", plural: "" }, "the server could not find the requested resource");
      return g;
    }
    version = segments[2];
    rest = segments.slice(3);
  } else {
    throw new NotFoundError({ group: "", kind: "", plural: path }, "the server could not find the requested resource");
  }
  if (rest.length === 0) {
    const list = resourceList(ctx.registry, groupName, version!, listedActions(ctx, groupName), ctx.createOnly);
    if (!list) throw new NotFoundError({ group: groupName, kind: "", plural: "" }, "the server could not find the requested resource");
    return list;
  }
  const computed = createOnlyTarget(ctx, groupName, version!, rest);
  if (computed) {
    info.verb = "create";
    info.resource = computed.kind.plural;
    info.group = groupName;
    info.version = version;
    info.namespace = computed.namespace;
    if (method !== "POST") throw new MethodNotAllowedError(`${method} is not supported on ${computed.kind.plural}: it is only created`);
    const body = requireJsonBody(request);
    const resource = { group: groupName, version: version!, resource: computed.kind.plural, namespace: computed.namespace };
    const pending = authorize(ctx.objects.authorizer, { ...context, verb: "create", resource });
    if (pending) await pending;
    const answer = await computed.kind.handle({ namespace: computed.namespace, body, context });
    reply.code(201);
    return answer;
  }
  const target = resolveResource(ctx.registry, groupName, version!, rest);
  info.resource = target.def.plural + (target.subresource ? `/${target.subresource}` : "");
  info.group = target.def.group;
  info.version = target.def.version;
  info.namespace = target.namespace;
  info.name = target.name;
  return serveResource(ctx, request, reply, target, query, info, context);
}

/** The create-only kind a path addresses (its collection, in a namespace when it is namespaced). */
function createOnlyTarget(ctx: ApiContext, groupName: string, version: string, rest: string[]): { kind: CreateOnlyResource; namespace?: string } | undefined {
  const namespaced = rest[0] === "namespaces" && rest.length === 3;
  const plural = namespaced ? rest[2] : rest.length === 1 ? rest[0] : undefined;
  const kind = ctx.createOnly?.find((k) => k.group === groupName && k.version === version && k.plural === plural && k.namespaced === namespaced);
  return kind ? { kind, ...(namespaced ? { namespace: rest[1] } : {}) } : undefined;
}

async function serveResource(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  target: ResourcePath,
  query: Query,
  info: RequestInfo,
  context: RequestContext,
): Promise<unknown> {
  const { def, namespace, name, subresource } = target;
  const objects = ctx.objects;
  const method = request.method;
  const table = wantsTable(request.headers.accept);
  const action = subresource !== undefined && name !== undefined ? ctx.actions?.get(`${def.group}/${def.plural}/${subresource}`) : undefined;
  if (action) {
    const expected = action.method ?? "POST";
    if (method !== expected) throw new MethodNotAllowedError(`${method} is not supported on ${def.plural}/${subresource}; ${expected} asks for it`);
    const verb = expected === "PUT" ? "update" : "create";
    info.verb = verb;
    const body = requireJsonBody(request);
    const resource = { group: def.group, version: def.version, resource: def.plural, subresource, namespace: def.namespaced ? namespace : undefined, name };
    const pending = authorize(objects.authorizer, { ...context, verb, resource });
    if (pending) await pending;
    const answer = await action.handle({ namespace, name: name!, body, context });
    if (action.code) reply.code(action.code);
    return answer;
  }
  if (subresource === SCALE_SUBRESOURCE && def.subresources.scale && name !== undefined) {
    info.verb = method === "GET" ? "get" : method === "PUT" ? "update" : "patch";
    const body = method === "GET" ? undefined : parseBody(request);
    if (method !== "GET" && body === undefined) throw new BadRequestError("the request body is empty");
    const patchType = method === "PATCH" && !isApplyPatch(request.headers["content-type"]) ? patchTypeOf(request.headers["content-type"]) : undefined;
    return serveScale(objects, def, { method, namespace, name, body, patchType, context: method === "GET" ? context : writeOptions(query, context).context! });
  }
  if (subresource !== undefined && subresource !== "status") {
    throw new NotFoundError({ group: def.group, kind: def.kind, plural: `${def.plural}/${subresource}` }, "the server could not find the requested resource");
  }
  if (subresource === "status" && !def.subresources.status) {
    throw new NotFoundError({ group: def.group, kind: def.kind, plural: `${def.plural}/status` }, "the server could not find the requested resource");
  }
  if (name === undefined) {
    if (method === "GET") {
      if (queryBool("watch", query.watch)) {
        info.verb = "watch";
        await serveWatch(ctx, request, reply, def, namespace, query, table, context);
        return reply;
      }
      info.verb = "list";
      const asked = query.limit ? Number(query.limit) : undefined;
      if (asked !== undefined && (!/^\d+$/.test(query.limit!) || !Number.isFinite(asked))) throw new BadRequestError(`limit must be a non-negative integer (got "${query.limit}")`);
      // Any int64 is a valid limit; a page is never larger than this anyway.
      const limit = asked === undefined ? undefined : Math.min(asked, MAX_PAGE);
      const listOptions = {
        labelSelector: query.labelSelector,
        fieldSelector: query.fieldSelector,
        limit,
        continue: query.continue,
        resourceVersion: query.resourceVersion,
        resourceVersionMatch: query.resourceVersionMatch,
        context,
      };
      if (!table && prefersProtobuf(request.headers.accept) && hasProtobuf({ apiVersion: apiVersionOf(def), kind: `${def.kind}List` })) return objects.list(def, namespace, listOptions);
      // JSON (a Table is JSON too): made from the stored text of each item, not parsed and encoded again
      // (a list may hold thousands), sent in pieces as the connection takes them instead of as one string.
      const chunks = table
        ? await objects.listTableChunks(def, namespace, { ...listOptions, includeObject: includeObjectOf(query) })
        : await objects.listJsonChunks(def, namespace, listOptions);
      void reply.type("application/json; charset=utf-8");
      return Readable.from(chunks, { objectMode: false });
    }
    if (method === "DELETE") {
      info.verb = "deletecollection";
      if (def.namespaced && namespace === undefined) throw new MethodNotAllowedError(`DELETE is not supported on ${def.plural} across namespaces; name a namespace`);
      const { list, warnings } = await objects.deleteCollection(def, namespace, {
        ...deleteOptions(request, query, context),
        labelSelector: query.labelSelector,
        fieldSelector: query.fieldSelector,
      });
      return sendWriteResult(reply, { object: list as unknown as KubeObject, warnings });
    }
    if (method === "POST") {
      info.verb = "create";
      const result = await objects.create(def, namespace, requireJsonBody(request), writeOptions(query, context));
      reply.code(201);
      return sendWriteResult(reply, result);
    }
    throw new MethodNotAllowedError(`${method} is not supported on ${def.plural}`);
  }
  switch (method) {
    case "GET": {
      info.verb = "get";
      const object = await objects.get(def, namespace, name, { context });
      return table ? toTable(def, [object], { includeObject: includeObjectOf(query), resourceVersion: object.metadata.resourceVersion }) : object;
    }
    case "PUT": {
      info.verb = "update";
      const body = requireJsonBody(request);
      const options = writeOptions(query, context);
      const result =
        subresource === "status" ? await objects.updateStatus(def, namespace, name, body, options) : await objects.update(def, namespace, name, body, options);
      return sendWriteResult(reply, result);
    }
    case "PATCH": {
      info.verb = "patch";
      const apply = isApplyPatch(request.headers["content-type"]);
      const type = apply ? undefined : patchTypeOf(request.headers["content-type"]);
      const body = parseBody(request);
      if (body === undefined) throw new BadRequestError("the request body is empty");
      if (!apply && query.force !== undefined) throw new BadRequestError("force: Forbidden: may not be specified for non-apply patch");
      // An apply names its manager explicitly: the User-Agent does not stand in for it.
      const options = { ...writeOptions(query, apply ? { ...context, fieldManager: query.fieldManager || undefined } : context), subresource: subresource === "status" ? ("status" as const) : undefined };
      const result = type ? await objects.patch(def, namespace, name, type, body, options) : await objects.apply(def, namespace, name, body, { ...options, force: queryBool("force", query.force) });
      if (result.previous === undefined) reply.code(201);
      return sendWriteResult(reply, result);
    }
    case "DELETE": {
      info.verb = "delete";
      if (subresource) throw new MethodNotAllowedError("DELETE is not supported on a subresource");
      const result = await objects.delete(def, namespace, name, deleteOptions(request, query, context));
      return sendWriteResult(reply, result);
    }
    default:
      throw new MethodNotAllowedError(`${method} is not supported on ${def.plural}`);
  }
}

function openapi(ctx: ApiContext, segments: string[], request: FastifyRequest, reply: FastifyReply): string | Buffer {
  if (segments[1] === "v2" && segments.length === 2) {
    const forms = renderedOpenApiV2(ctx.registry);
    const accept = request.headers.accept ?? "";
    if (accept.includes(OPENAPI_V2_PROTOBUF) || accept.includes(OPENAPI_V2_PROTOBUF_RESPONSE)) {
      reply.type(OPENAPI_V2_PROTOBUF_RESPONSE);
      return forms.protobuf;
    }
    reply.type("application/json");
    return forms.json;
  }
  if (segments[1] !== "v3") throw new NotFoundError({ group: "", kind: "", plural: "openapi" }, "the server could not find the requested resource");
  reply.type("application/json");
  if (segments.length === 2) return ctx.openapi.index;
  const doc = ctx.openapi.documents.get(segments.slice(2).join("/"));
  if (!doc) throw new NotFoundError({ group: "", kind: "", plural: "openapi" }, "the server could not find the requested resource");
  reply.header("Cache-Control", "public, immutable");
  return doc;
}

async function serveWatch(
  ctx: ApiContext,
  request: FastifyRequest,
  reply: FastifyReply,
  def: KindDefinition,
  namespace: string | undefined,
  query: Query,
  table: boolean,
  context: RequestContext,
): Promise<void> {
  const includeObject = includeObjectOf(query);
  const res = reply.raw;
  let started = false;
  let closed = false;
  const pending: ObjectEvent[] = [];
  const send = (event: ObjectEvent | { type: string; object: unknown }) => {
    if (closed) return;
    const object =
      table && (event.type === "ADDED" || event.type === "MODIFIED" || event.type === "DELETED")
        ? toTable(def, [event.object as KubeObject], { includeObject })
        : event.object;
    res.write(JSON.stringify({ type: event.type, object }) + "\n");
    ctx.metrics.watchEvents.inc({ resource: def.plural });
  };
  const onEvent = (event: ObjectEvent) => (started ? send(event) : pending.push(event));
  let finish = () => {};
  let earlyError: Error | undefined;
  const sendError = (error: Error) => {
    const status = "toStatus" in error ? (error as ApiError).toStatus() : new InternalError(error.message).toStatus();
    send({ type: "ERROR", object: status });
  };
  const onError = (error: Error) => {
    if (!started) {
      earlyError = error;
      return;
    }
    sendError(error);
    finish();
  };
  // Errors before the stream starts (bad selectors, a malformed resourceVersion) become plain responses.
  const watch = await ctx.objects.watch(
    def,
    namespace,
    { resourceVersion: query.resourceVersion, labelSelector: query.labelSelector, fieldSelector: query.fieldSelector, context },
    onEvent,
    onError,
  );
  reply.hijack();
  res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache, private", "Transfer-Encoding": "chunked" });
  // Clients wait for the headers before reading events; a quiet collection must not hold them back.
  res.flushHeaders();
  started = true;
  ctx.metrics.watches.inc({ resource: def.plural });
  for (const event of pending.splice(0)) send(event);
  const timeoutSeconds = Math.min(Number(query.timeoutSeconds) || MAX_WATCH_SECONDS, MAX_WATCH_SECONDS);
  const timeout = setTimeout(() => finish(), timeoutSeconds * 1000);
  // Bookmarks about once a minute, as kube-apiserver sends them, and one just before the timeout ends the
  // watch, so that the client's next watch starts from a current version.
  const bookmark = () =>
    send({ type: "BOOKMARK", object: { kind: def.kind, apiVersion: def.group ? `${def.group}/${def.version}` : def.version, metadata: { resourceVersion: String(watch.progress()) } } });
  const bookmarks = queryBool("allowWatchBookmarks", query.allowWatchBookmarks) ? setInterval(bookmark, ctx.bookmarkIntervalMs) : undefined;
  const lastBookmark = bookmarks && timeoutSeconds * 1000 > BOOKMARK_BEFORE_TIMEOUT_MS ? setTimeout(bookmark, timeoutSeconds * 1000 - BOOKMARK_BEFORE_TIMEOUT_MS) : undefined;
  finish = () => {
    if (closed) return;
    closed = true;
    watch.close();
    clearTimeout(timeout);
    clearTimeout(lastBookmark);
    if (bookmarks) clearInterval(bookmarks);
    ctx.metrics.watches.dec({ resource: def.plural });
    res.end();
  };
  res.on("close", finish);
  request.raw.on("error", finish);
  if (earlyError) {
    sendError(earlyError);
    finish();
  }
}
