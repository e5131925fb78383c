// The sim cloud's HTTP API (JSON over fastify). /v1 answers an account's bearer token with the same
// operations as CloudApi; /admin/v1 answers the admin token with the operator's controls. Errors leave as
// {"error": {code, message, retryAfterMs?, details?}} with the code's status, Throttling with Retry-After.
import { timingSafeEqual } from "node:crypto";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { SimCloud } from "./cloud.ts";
import { InvalidParameterError, NotFoundError, SimCloudError, UnauthorizedError, type ErrorBody } from "./errors.ts";
import type { FaultConfig } from "./faults.ts";
import { ADMIN_PREFIX, API_PREFIX, COLLECTIONS, parseTagQuery } from "./paths.ts";
import type { QuotaLimitsPatch } from "./schemas.ts";
import type * as T from "./types.ts";

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

interface CollectionRoutes {
  kind: T.ResourceKind;
  create(api: T.CloudApi, region: string, body: unknown): Promise<T.CloudResource>;
  get(api: T.CloudApi, region: string, id: string): Promise<T.CloudResource>;
  list(api: T.CloudApi, region: string, filter: T.ListFilter): Promise<T.CloudResource[]>;
  /** Deletes; instances answer their terminating view, others nothing. */
  remove(api: T.CloudApi, region: string, id: string): Promise<T.CloudResource | void>;
}

// Bodies are handed on as they came: every operation checks its input against its schema.
const ROUTES: CollectionRoutes[] = [
  {
    kind: "network",
    create: (api, r, body) => api.createNetwork(r, body as T.CreateNetworkInput),
    get: (api, r, id) => api.getNetwork(r, id),
    list: (api, r, f) => api.listNetworks(r, f),
    remove: (api, r, id) => api.deleteNetwork(r, id),
  },
  {
    kind: "subnet",
    create: (api, r, body) => api.createSubnet(r, body as T.CreateSubnetInput),
    get: (api, r, id) => api.getSubnet(r, id),
    list: (api, r, f) => api.listSubnets(r, f),
    remove: (api, r, id) => api.deleteSubnet(r, id),
  },
  {
    kind: "securityGroup",
    create: (api, r, body) => api.createSecurityGroup(r, body as T.CreateSecurityGroupInput),
    get: (api, r, id) => api.getSecurityGroup(r, id),
    list: (api, r, f) => api.listSecurityGroups(r, f),
    remove: (api, r, id) => api.deleteSecurityGroup(r, id),
  },
  {
    kind: "keyPair",
    create: (api, r, body) => api.createKeyPair(r, body as T.CreateKeyPairInput),
    get: (api, r, id) => api.getKeyPair(r, id),
    list: (api, r, f) => api.listKeyPairs(r, f),
    remove: (api, r, id) => api.deleteKeyPair(r, id),
  },
  {
    kind: "publicIp",
    create: (api, r, body) => api.createPublicIp(r, body as T.CreatePublicIpInput),
    get: (api, r, id) => api.getPublicIp(r, id),
    list: (api, r, f) => api.listPublicIps(r, f),
    remove: (api, r, id) => api.deletePublicIp(r, id),
  },
  {
    kind: "instance",
    create: (api, r, body) => api.createInstance(r, body as T.CreateInstanceInput),
    get: (api, r, id) => api.getInstance(r, id),
    list: (api, r, f) => api.listInstances(r, f),
    remove: (api, r, id) => api.terminateInstance(r, id),
  },
  {
    kind: "loadBalancer",
    create: (api, r, body) => api.createLoadBalancer(r, body as T.CreateLoadBalancerInput),
    get: (api, r, id) => api.getLoadBalancer(r, id),
    list: (api, r, f) => api.listLoadBalancers(r, f),
    remove: (api, r, id) => api.deleteLoadBalancer(r, id),
  },
];

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

function instanceIdsOf(body: unknown): string[] {
  const ids = (body as { instanceIds?: unknown } | undefined)?.instanceIds;
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) {
    throw new InvalidParameterError("targets.instanceIds: an array of instance ids is required", { details: { field: "instanceIds" } });
  }
  return ids;
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

  const accountApi = (request: FastifyRequest): T.CloudApi => {
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
  app.get<{ Querystring: Record<string, unknown> }>(`${API_PREFIX}/resources`, async (req) => {
    const region = typeof req.query.region === "string" ? req.query.region : undefined;
    const tags = parseTagQuery(req.query.tag);
    return accountApi(req).listResources({ ...(region ? { region } : {}), ...(tags ? { tags } : {}) });
  });

  for (const route of ROUTES) {
    const base = `${API_PREFIX}/regions/:region/${COLLECTIONS[route.kind]}`;
    app.post<{ Params: RegionParams }>(base, async (req, reply) => {
      const created = await route.create(accountApi(req), req.params.region, req.body ?? {});
      return reply.code(201).send(created);
    });
    app.get<{ Params: RegionParams; Querystring: Record<string, unknown> }>(base, async (req) => {
      const tags = parseTagQuery(req.query.tag);
      return route.list(accountApi(req), req.params.region, tags ? { tags } : {});
    });
    app.get<{ Params: ResourceParams }>(`${base}/:id`, async (req) => route.get(accountApi(req), req.params.region, req.params.id));
    app.delete<{ Params: ResourceParams }>(`${base}/:id`, async (req, reply) => {
      const result = await route.remove(accountApi(req), req.params.region, req.params.id);
      return result ? reply.send(result) : reply.code(204).send();
    });
  }

  const instance = `${API_PREFIX}/regions/:region/instances/:id`;
  app.post<{ Params: ResourceParams }>(`${instance}/stop`, async (req) => accountApi(req).stopInstance(req.params.region, req.params.id));
  app.post<{ Params: ResourceParams }>(`${instance}/start`, async (req) => accountApi(req).startInstance(req.params.region, req.params.id));
  app.post<{ Params: ResourceParams }>(`${instance}/terminate`, async (req) =>
    accountApi(req).terminateInstance(req.params.region, req.params.id),
  );
  const targets = `${API_PREFIX}/regions/:region/load-balancers/:id/targets`;
  app.post<{ Params: ResourceParams }>(`${targets}/register`, async (req) =>
    accountApi(req).registerTargets(req.params.region, req.params.id, instanceIdsOf(req.body)),
  );
  app.post<{ Params: ResourceParams }>(`${targets}/deregister`, async (req) =>
    accountApi(req).deregisterTargets(req.params.region, req.params.id, instanceIdsOf(req.body)),
  );

  app.get(`${ADMIN_PREFIX}/faults`, async (req) => {
    requireAdmin(req);
    return cloud.faults;
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
