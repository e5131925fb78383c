// Users' way to the services their clusters' addons expose (azimuth's Zenith, made simple): the control
// plane's own HTTPS endpoint serves /services/<namespace>/<cluster>/<service>/… for callers it
// authenticates (401 otherwise) and whose authorizer allows a `get` on that Cluster (403 otherwise), and
// proxies the request to the Service through the cluster's API server (its services/proxy subresource,
// with Slipway's credentials for the cluster — the caller's own are never passed on). Only services a
// cluster lists in status.services are reachable.
import type { FastifyReply, FastifyRequest } from "fastify";
import { clusterKind, type ClusterObject } from "../api/slipway/cluster.ts";
import { authorize } from "../apiserver/authorization/authorizer.ts";
import { BadRequestError, MethodNotAllowedError, NotFoundError, UnauthorizedError } from "../apiserver/errors.ts";
import type { ObjectService } from "../apiserver/objects.ts";
import type { KindDefinition } from "../api/registry.ts";
import type { Identity } from "../apiserver/request-context.ts";
import type { WorkloadClients } from "../controllers/workload.ts";
import { KubeApiError, KubeUnreachableError } from "../kubeclient/index.ts";

const SERVICE_PATH = /^\/services\/([^/]+)\/([^/]+)\/([^/]+)(\/.*)?$/;

export interface ServicesProxyOptions {
  authenticate(request: FastifyRequest): Promise<Identity | undefined>;
  objects: ObjectService;
  workloads: WorkloadClients;
}

/** The `site` handler of the services path: answers a request under /services/, or undefined for any other path. */
export function servicesSite(options: ServicesProxyOptions): (request: FastifyRequest, reply: FastifyReply, path: string) => Promise<unknown> | undefined {
  return (request, reply, path) => (path === "/services" || path.startsWith("/services/") ? proxy(options, request, reply, path) : undefined);
}

function segment(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new BadRequestError(`the path segment ${text} is not valid percent-encoding`);
  }
}

async function proxy(options: ServicesProxyOptions, request: FastifyRequest, reply: FastifyReply, path: string): Promise<unknown> {
  const identity = await options.authenticate(request);
  if (!identity) throw new UnauthorizedError();
  const match = SERVICE_PATH.exec(path);
  if (!match) throw new NotFoundError({ group: "", kind: "Service", plural: "services", name: path }, `${path}: a service is at /services/<namespace>/<cluster>/<service>/`);
  const [namespace, name, service] = [segment(match[1]!), segment(match[2]!), segment(match[3]!)];
  await authorize(options.objects.authorizer, { identity, verb: "get", resource: { group: clusterKind.group, resource: clusterKind.plural, namespace, name } });
  const cluster = (await options.objects.tryGet(clusterKind as unknown as KindDefinition, namespace, name)) as ClusterObject | undefined;
  if (!cluster) throw new NotFoundError({ group: clusterKind.group, kind: "Cluster", plural: clusterKind.plural, name });
  const entry = cluster.status?.services?.find((s) => s.name === service);
  if (!entry) throw new NotFoundError({ group: "", kind: "Service", plural: "services", name: service }, `cluster ${name} has no service ${service} (slipway services ${name} lists them)`);
  const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
  // Relative links of the page resolve under the service only with the trailing slash.
  if (match[4] === undefined) return reply.code(301).header("location", `${path}/${query}`).send();
  if (request.method !== "GET" && request.method !== "HEAD") throw new MethodNotAllowedError(`${request.method} is not proxied to services; GET and HEAD are`);
  const client = await options.workloads.forClusterObject(cluster);
  if (!client) return reply.code(503).type("text/plain; charset=utf-8").send(`cluster ${name} has no kubeconfig yet\n`);
  const target = `/api/v1/namespaces/${encodeURIComponent(entry.namespace)}/services/${encodeURIComponent(entry.service)}${entry.port ? `:${entry.port}` : ""}/proxy${match[4]}${query}`;
  try {
    const answer = await client.request("GET", target, { headers: { accept: "*/*" } });
    const body = typeof answer.body === "string" || answer.body === undefined ? (answer.body ?? "") : JSON.stringify(answer.body);
    return reply
      .code(answer.statusCode)
      .type(answer.headers["content-type"] ?? "application/octet-stream")
      .send(request.method === "HEAD" ? "" : body);
  } catch (error) {
    if (error instanceof KubeApiError) return reply.code(error.code).type("text/plain; charset=utf-8").send(`${error.code === 503 ? "the service has no ready endpoint" : "the cluster answered"}: ${error.status?.message ?? error.message}\n`);
    if (error instanceof KubeUnreachableError) return reply.code(502).type("text/plain; charset=utf-8").send(`cluster ${name} cannot be reached\n`);
    throw error;
  }
}
