// The HTTP(S) server: authentication (the authenticator chain of the API a request addresses), one log
// line and metrics per request, Status bodies for every error, health endpoints, and routing of each
// request to the API it addresses.
import { createServer as createHttpServer, type RequestListener } from "node:http";
import { createServer as createHttpsServer, type ServerOptions as HttpsOptions } from "node:https";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { InternalError, isApiError, UnauthorizedError, type Status } from "./errors.ts";
import type { ApiMetrics } from "./metrics.ts";
import { handleApiRequest, type ApiContext, type RequestInfo } from "./routes.ts";
import { SERVER_VERSION } from "./discovery.ts";
import { PING, runHealthChecks, type HealthCheck } from "./health.ts";
import { credentialsOf, type Authenticator } from "./authentication.ts";
import { encodeProtobuf, hasProtobuf, prefersProtobuf, PROTOBUF } from "./protobuf.ts";
import { authorize } from "./authorization/authorizer.ts";
import type { AuditRecord } from "./audit.ts";

export interface Mounted {
  ctx: ApiContext;
  /** The path inside the mounted API (e.g. /apis/slipway.dev/v1alpha1/clusters). */
  path: string;
  /** Who may call the mounted API. */
  authenticator: Authenticator;
}

export interface ApiServerOptions {
  /** Serve HTTPS with these options (key, cert, and for client certificates ca + requestCert). */
  tls?: HttpsOptions;
  logger: Logger;
  metrics: ApiMetrics;
  /** Finds the API a request addresses (one for Slipway; one per workload cluster in the sim cloud). */
  route: (request: FastifyRequest, path: string) => Mounted | undefined;
  bodyLimitBytes?: number;
  /**
   * Pages served beside the API (the web console and its sign-in): answers a request, or undefined for
   * a path it does not serve. Asked before the API, for every path but the health endpoints.
   */
  site?: (request: FastifyRequest, reply: FastifyReply, path: string) => Promise<unknown> | undefined;
  /** What /readyz checks besides answering at all (e.g. the store, the controllers). */
  readiness?: readonly HealthCheck[];
  /** What /version answers (default: the emulated Kubernetes API's constant). */
  version?: object;
  /** A client that has not finished its TLS handshake by then is dropped (default 10 s; Node's own is 120 s). */
  tlsHandshakeTimeoutMs?: number;
  /** How many connections are served at once (default 1024); one more is closed as soon as it opens. */
  maxConnections?: number;
  /**
   * A client that has not sent a request's headers this long after it began is dropped (default 10 s;
   * Node's own is 60 s, checked every 30 s). A watch, once its request is in, is not affected.
   */
  headersTimeoutMs?: number;
  /**
   * How long a kept-alive connection may sit idle between requests before it is closed (default 90 s,
   * kube-apiserver's: longer than a client reuses one for, so that the client, not the server, closes
   * it and a request is never sent on a connection the server is closing). The server says so in each
   * response's `Keep-Alive: timeout=` header.
   */
  keepAliveTimeoutMs?: number;
  /** Told of every request once it is answered (a watch once it starts), for the audit log. */
  audit?: (record: AuditRecord) => void;
}

const PUBLIC_PATHS = new Set(["/healthz", "/livez", "/readyz", "/version"]);

function statusBody(code: number, reason: string, message: string): Status {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
}

function reasonOf(code: number): string {
  switch (code) {
    case 400:
      return "BadRequest";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    default:
      return "BadRequest";
  }
}

function lastValues(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(text)) out[k] = v;
  return out;
}

/** What the audit log records of a request: never a body, never the query (it may carry a token). */
function auditRecord(request: FastifyRequest, info: RequestInfo & { user?: string; groups?: string[]; received: Date }, code: number): AuditRecord {
  const [resource, subresource] = info.resource.split("/");
  const objectRef =
    info.group !== undefined && resource
      ? {
          resource,
          ...(subresource ? { subresource } : {}),
          ...(info.namespace ? { namespace: info.namespace } : {}),
          ...(info.name ? { name: info.name } : {}),
          apiGroup: info.group,
          ...(info.version ? { apiVersion: info.version } : {}),
        }
      : undefined;
  const agent = request.headers["user-agent"];
  return {
    user: info.user ?? "system:anonymous",
    groups: info.groups ?? ["system:unauthenticated"],
    verb: info.verb,
    path: request.url.split("?")[0]!,
    ...(objectRef ? { objectRef } : {}),
    code,
    sourceIPs: [request.ip],
    ...(typeof agent === "string" ? { userAgent: agent } : {}),
    received: info.received,
    answered: new Date(),
  };
}

export const DEFAULT_MAX_CONNECTIONS = 1024;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 90_000;
export const DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS = 10_000;

/**
 * The HTTP(S) server under the framework, with the limits a client that never speaks must not outlast:
 * the TLS handshake, the request headers (checked often enough to hold to that time), a whole request
 * body in a minute, idle keep-alive connections after `keepAliveTimeoutMs`, and a cap on connections at once.
 */
function limitedServer(options: ApiServerOptions, handler: RequestListener) {
  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const settings = {
    headersTimeout,
    requestTimeout: Math.max(60_000, headersTimeout),
    keepAliveTimeout: options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4))),
  };
  const server = options.tls
    ? createHttpsServer({ ...settings, handshakeTimeout: options.tlsHandshakeTimeoutMs ?? DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS, ...options.tls }, handler)
    : createHttpServer(settings, handler);
  server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  return server;
}

export function createApiServer(options: ApiServerOptions): FastifyInstance {
  const { logger, metrics } = options;
  const app = Fastify({
    serverFactory: (handler) => limitedServer(options, handler as RequestListener),
    logger: false,
    bodyLimit: options.bodyLimitBytes ?? 3 * 1024 * 1024,
    forceCloseConnections: true,
    routerOptions: { querystringParser: lastValues },
    return503OnClosing: true,
    // What the framework refuses before routing (a malformed percent-encoding, a bad header) is a Status too.
    frameworkErrors: (error, request, reply) => {
      logger.info({ err: error.message, url: request.url.split("?")[0] }, "request refused before routing");
      void (reply as unknown as FastifyReply).code(400).type("application/json").send(statusBody(400, "BadRequest", `the request cannot be read: ${error.message}`));
    },
  }) as unknown as FastifyInstance;

  type Info = RequestInfo & { user?: string; groups?: string[]; start: bigint; received: Date };
  const infos = new WeakMap<FastifyRequest, Info>();

  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => done(null, body));
  app.addContentTypeParser(PROTOBUF, { parseAs: "buffer" }, (_req, body, done) => done(null, body));

  const record = (request: FastifyRequest, code: number) => {
    const info = infos.get(request);
    if (!info) return;
    const seconds = Number(process.hrtime.bigint() - info.start) / 1e9;
    const resource = info.resource || "-";
    metrics.requests.inc({ verb: info.verb, resource, code: String(code) });
    if (info.verb !== "watch") metrics.latency.observe({ verb: info.verb, resource }, seconds);
    logger.info(
      { verb: info.verb, resource, namespace: info.namespace, name: info.name, code, ms: Math.round(seconds * 1e4) / 10, user: info.user },
      "request",
    );
    options.audit?.(auditRecord(request, info, code));
  };

  app.addHook("onResponse", async (request, reply) => record(request, reply.statusCode));

  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    if (isApiError(error)) {
      const status = error.toStatus();
      if (error.details?.retryAfterSeconds) reply.header("Retry-After", String(error.details.retryAfterSeconds));
      return reply.code(status.code).type("application/json").send(status);
    }
    const code = (error as { statusCode?: number }).statusCode;
    if (code && code >= 400 && code < 500) {
      return reply.code(code).type("application/json").send(statusBody(code, reasonOf(code), (error as Error).message));
    }
    logger.error({ err: error, url: request.url.split("?")[0] }, "request failed");
    return reply.code(500).type("application/json").send(new InternalError("an internal error occurred; see the server log").toStatus());
  });

  app.all("/*", async (request, reply) => {
    const path = request.url.split("?")[0]!;
    const info: Info = { verb: request.method.toLowerCase(), resource: "", start: process.hrtime.bigint(), received: new Date() };
    infos.set(request, info);
    if (path === "/healthz" || path === "/livez") {
      info.resource = path.slice(1);
      return reply.type("text/plain").send("ok");
    }
    if (path === "/readyz" || path.startsWith("/readyz/")) {
      info.resource = "readyz";
      const query = request.query as Record<string, string | undefined>;
      const only = path.length > "/readyz/".length ? decodeURIComponent(path.slice("/readyz/".length)) : undefined;
      const report = await runHealthChecks("readyz", [PING, ...(options.readiness ?? [])], { verbose: query.verbose !== undefined, exclude: query.exclude?.split(","), only });
      if (!report) return reply.code(404).type("text/plain").send(`no readyz check named ${only}\n`);
      for (const { name, reason } of report.failed) logger.warn({ check: name, reason }, "readyz check failed");
      return reply.code(report.code).type("text/plain").send(report.body);
    }
    if (path === "/version") {
      info.resource = "version";
      return options.version ?? options.route(request, path)?.ctx.version ?? SERVER_VERSION;
    }
    const page = options.site?.(request, reply, path);
    if (page !== undefined) {
      info.resource = "console";
      return page;
    }
    const mounted = options.route(request, path);
    if (!mounted) throw new UnauthorizedError();
    const identity = await mounted.authenticator.authenticate(credentialsOf(request));
    if (!identity) throw new UnauthorizedError();
    info.user = identity.user;
    info.groups = identity.groups;
    if (mounted.path === "/metrics") {
      info.resource = "metrics";
      await authorize(mounted.ctx.objects.authorizer, { identity, verb: info.verb, path: mounted.path });
      return reply.type(metrics.registry.contentType).send(await metrics.text());
    }
    if (PUBLIC_PATHS.has(mounted.path)) return mounted.path === "/version" ? (mounted.ctx.version ?? SERVER_VERSION) : reply.type("text/plain").send("ok");
    const body = await handleApiRequest(mounted.ctx, request, reply, mounted.path, info, identity);
    if (body === reply) {
      // A watch: the stream has started and is answered by itself; it is counted now.
      record(request, 200);
      infos.delete(request);
      return reply;
    }
    if (prefersProtobuf(request.headers.accept) && hasProtobuf(body)) return reply.type(PROTOBUF).send(encodeProtobuf(body as Record<string, unknown>));
    return body;
  });

  return app;
}
