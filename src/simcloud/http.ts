// The sim cloud's HTTP API (JSON over fastify). /v1 answers an account's bearer token with the same
// operations as CloudApi; /admin/v1 answers the admin token with the operator's controls. Errors leave as
// {"error": {code, message, retryAfterMs?, details?}} with the code's status, Throttling with Retry-After.
import { timingSafeEqual } from "node:crypto";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { AccountCloud, SimCloud } from "./cloud.ts";
import { InvalidParameterError, NotFoundError, SimCloudError, UnauthorizedError, type ErrorBody } from "./errors.ts";
import type { FaultConfig } from "./faults.ts";
import { ADMIN_PREFIX, API_PREFIX, parseTagQuery } from "./paths.ts";
import type { QuotaLimitsPatch } from "./schemas.ts";

export interface SimCloudHttpOptions {
  /** Token of the /admin/v1 endpoints; without one they answer 401. */
  adminToken?: string;
  logger?: Logger;
}

interface RegionParams {
  region: string;
}
interface ResourceParams {
  region: string;
  id: string;
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  return match?.[1];
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function sendError(reply: FastifyReply, error: SimCloudError): FastifyReply {
  const body: ErrorBody = {
    error: {
      code: error.code,
      message: error.message,
      ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      ...(error.details === undefined ? {} : { details: error.details }),
    },
  };
  if (error.retryAfterMs !== undefined) reply.header("retry-after", String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))));
  return reply.code(error.status).send(body);
}

/** Builds the HTTP API over a cloud (not yet listening). */
export function createSimCloudHttp(cloud: SimCloud, options: SimCloudHttpOptions = {}): FastifyInstance {
  const logger: FastifyBaseLogger | undefined = options.logger;
  const app = Fastify(logger ? { loggerInstance: logger } : { logger: false });

  const accountApi = (request: FastifyRequest): AccountCloud => {
    const token = bearerToken(request);
    const account = token === undefined ? undefined : cloud.authenticate(token);
    if (!account) throw new UnauthorizedError("a valid bearer token is required (Authorization: Bearer <token>)");
    return cloud.forAccount(account);
  };
  const requireAdmin = (request: FastifyRequest): void => {
    const token = bearerToken(request);
    if (!options.adminToken || token === undefined || !sameSecret(token, options.adminToken)) {
      throw new UnauthorizedError("the admin token is required");
    }
  };

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof SimCloudError) return sendError(reply, error);
    const status = (error as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      return sendError(reply, new InvalidParameterError((error as Error).message));
    }
    request.log.error({ err: error }, "sim cloud request failed");
    return sendError(reply, new SimCloudError("InternalError", "an internal error occurred"));
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new NotFoundError(`no route for ${request.method} ${request.url.split("?")[0]}`)),
  );

  app.get("/healthz", async () => ({ ok: true }));

  app.get(`${API_PREFIX}/regions`, async (request) => accountApi(request).describeRegions());
  app.get<{ Params: RegionParams }>(`${API_PREFIX}/regions/:region/zones`, async (req) => accountApi(req).describeZones(req.params.region));
  app.get<{ Params: RegionParams }>(`${API_PREFIX}/regions/:region/machine-types`, async (req) =>
    accountApi(req).describeMachineTypes(req.params.region),
  );
  app.get<{ Params: RegionParams }>(`${API_PREFIX}/regions/:region/images`, async (req) => accountApi(req).describeImages(req.params.region));
  app.get<{ Params: RegionParams }>(`${API_PREFIX}/regions/:region/quota`, async (req) => accountApi(req).getQuota(req.params.region));
  app.get<{ Params: RegionParams; Querystring: Record<string, unknown> }>(`${API_PREFIX}/regions/:region/instance-events`, async (req) => {
    const after = req.query.after === undefined ? undefined : Number(req.query.after);
    if (after !== undefined && (!Number.isInteger(after) || after < 0)) throw new InvalidParameterError(`after must be a whole number (got "${String(req.query.after)}")`);
    const epoch = typeof req.query.epoch === "string" ? req.query.epoch : undefined;
    return accountApi(req).describeInstanceEvents(req.params.region, after, epoch);
  });
  app.get<{ Querystring: Record<string, unknown> }>(`${API_PREFIX}/resources`, async (req) => {
    const region = typeof req.query.region === "string" ? req.query.region : undefined;
    const tags = parseTagQuery(req.query.tag);
    return accountApi(req).listResources({ ...(region ? { region } : {}), ...(tags ? { tags } : {}) });
  });

  // Each registered kind: create, list, get, delete, and its actions. Bodies are handed on as they came:
  // every operation checks its input against its kind's schema.
  for (const kind of cloud.resourceKinds) {
    const base = `${API_PREFIX}/regions/:region/${kind.collection}`;
    const api = (request: FastifyRequest) => accountApi(request).resources(kind);
    app.post<{ Params: RegionParams }>(base, async (req, reply) => {
      const created = await api(req).create(req.params.region, req.body ?? {});
      return reply.code(201).send(created);
    });
    app.get<{ Params: RegionParams; Querystring: Record<string, unknown> }>(base, async (req) => {
      const tags = parseTagQuery(req.query.tag);
      return api(req).list(req.params.region, tags ? { tags } : {});
    });
    app.get<{ Params: ResourceParams }>(`${base}/:id`, async (req) => api(req).get(req.params.region, req.params.id));
    // A removal answers 204; an action standing for the delete (an instance's terminate) answers its view.
    app.delete<{ Params: ResourceParams }>(`${base}/:id`, async (req, reply) => {
      const result = await api(req).delete(req.params.region, req.params.id);
      return result ? reply.send(result) : reply.code(204).send();
    });
    for (const [name, action] of Object.entries(kind.actions)) {
      app.post<{ Params: ResourceParams }>(`${base}/:id/${action.path}`, async (req) => {
        const operations = api(req);
        const args = action.parse(req.body);
        return operations[name]!(req.params.region, req.params.id, ...args);
      });
    }
  }

  app.get(`${ADMIN_PREFIX}/faults`, async (req) => {
    requireAdmin(req);
    return cloud.faults;
  });
  app.get(`${ADMIN_PREFIX}/faults/counts`, async (req) => {
    requireAdmin(req);
    return cloud.faultCounts;
  });
  app.put(`${ADMIN_PREFIX}/faults`, async (req) => {
    requireAdmin(req);
    cloud.setFaults((req.body ?? {}) as FaultConfig);
    return cloud.faults;
  });
  app.put<{ Params: { account: string; region: string } }>(`${ADMIN_PREFIX}/quotas/:account/:region`, async (req) => {
    requireAdmin(req);
    return cloud.setQuota(req.params.account, req.params.region, (req.body ?? {}) as QuotaLimitsPatch);
  });
  app.put<{ Params: { region: string; zone: string; machineType: string } }>(`${ADMIN_PREFIX}/capacity/:region/:zone/:machineType`, async (req) => {
    requireAdmin(req);
    const instances = (req.body as { instances?: unknown } | undefined)?.instances;
    if (typeof instances !== "number") throw new InvalidParameterError("capacity.instances: a number is required");
    cloud.setCapacity(req.params.region, req.params.zone, req.params.machineType, instances);
    return { region: req.params.region, zone: req.params.zone, machineType: req.params.machineType, instances };
  });
  app.post<{ Params: { id: string } }>(`${ADMIN_PREFIX}/instances/:id/kill`, async (req) => {
    requireAdmin(req);
    const body = (req.body ?? {}) as { reason?: unknown; code?: unknown };
    const reason = typeof body.reason === "string" ? body.reason : undefined;
    const code = typeof body.code === "string" ? body.code : undefined;
    return cloud.killInstance(req.params.id, reason, code);
  });
  app.put<{ Params: { account: string } }>(`${ADMIN_PREFIX}/accounts/:account`, async (req, reply) => {
    requireAdmin(req);
    const token = (req.body as { token?: unknown } | undefined)?.token;
    if (typeof token !== "string") throw new InvalidParameterError("account.token: a string is required");
    cloud.setAccount(req.params.account, token);
    return reply.code(204).send();
  });

  return app;
}
