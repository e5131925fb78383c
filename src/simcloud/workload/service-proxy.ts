// The service proxy of an emulated workload cluster (GET /api/v1/namespaces/<ns>/services/<name>[:port]/proxy/…,
// as kube-apiserver serves it): the caller must be allowed `get` on services/proxy; the Service's ready
// pods are its endpoints (none: 503, as kube answers "no endpoints available"), and the first of them
// answers as a small static web server would — the files of the ConfigMaps mounted into its container
// (a path ending in / serves index.html), else a one-line page naming the pod. So a dashboard whose
// Deployment mounts its page from a ConfigMap answers with that page, end to end through the API.
import type { ConfigMapObject } from "../../api/core.ts";
import type { KindDefinition } from "../../api/registry.ts";
import { ApiError, NotFoundError } from "../../apiserver/errors.ts";
import type { ObjectService } from "../../apiserver/objects.ts";
import type { Identity } from "../../apiserver/request-context.ts";
import { authorize } from "../../apiserver/authorization/authorizer.ts";
import { selectorMatches } from "./kinds-podspec.ts";
import type { ServiceObject } from "./kinds-service.ts";
import type { PodObject } from "./kinds.ts";

/** The proxy path of a service: namespace, the service (name, or [scheme:]name:port) and the path under it. */
const PROXY_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/services\/([^/]+)\/proxy(\/.*)?$/;

export interface ProxiedAnswer {
  code: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

/** kube's 503 when a service has no ready endpoint. */
export class ServiceUnavailableError extends ApiError {
  readonly code = 503;
  readonly reason = "ServiceUnavailable";
}

const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  json: "application/json",
  svg: "image/svg+xml",
  txt: "text/plain; charset=utf-8",
};

export function parseServiceProxyPath(path: string): { namespace: string; service: string; port?: string; path: string } | undefined {
  const match = PROXY_PATH.exec(path);
  if (!match) return undefined;
  const parts = decodeURIComponent(match[2]!).split(":");
  // name | name:port | scheme:name:port
  const [service, port] = parts.length === 3 ? [parts[1]!, parts[2]!] : [parts[0]!, parts[1]];
  return { namespace: decodeURIComponent(match[1]!), service, ...(port ? { port } : {}), path: match[3] ?? "/" };
}

function ready(pod: PodObject): boolean {
  return !pod.metadata.deletionTimestamp && pod.status?.phase === "Running" && (pod.status.containerStatuses ?? []).every((c) => c.ready);
}

interface Kinds {
  service: KindDefinition;
  pod: KindDefinition;
  configMap: KindDefinition;
}

/** Answers one proxied request for `identity`, or throws the API error kube would answer with. */
export async function answerServiceProxy(objects: ObjectService, kinds: Kinds, identity: Identity, method: string, path: string): Promise<ProxiedAnswer | undefined> {
  const target = parseServiceProxyPath(path);
  if (!target) return undefined;
  const { namespace, service: name } = target;
  await authorize(objects.authorizer, { identity, verb: method === "GET" || method === "HEAD" ? "get" : method.toLowerCase(), resource: { group: "", resource: "services", subresource: "proxy", namespace, name } });
  const service = (await objects.tryGet(kinds.service, namespace, name)) as ServiceObject | undefined;
  if (!service) throw new NotFoundError({ group: "", kind: "Service", plural: "services", name });
  const ports = service.spec?.ports ?? [];
  const port = target.port === undefined ? ports[0] : ports.find((p) => p.name === target.port || String(p.port) === target.port);
  if (!port) throw new ServiceUnavailableError(`no endpoints available for service "${name}"`);
  const selector = service.spec?.selector;
  const pods = selector ? ((await objects.list(kinds.pod, namespace)).items as PodObject[]).filter((p) => ready(p) && selectorMatches({ matchLabels: selector }, p.metadata.labels ?? {})) : [];
  pods.sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
  const pod = pods[0];
  if (!pod) throw new ServiceUnavailableError(`no endpoints available for service "${name}"`);
  if (method !== "GET" && method !== "HEAD") return { code: 405, contentType: "text/plain; charset=utf-8", body: "405 method not allowed\n" };
  const files = await filesOf(objects, kinds, pod, port.targetPort ?? port.port);
  const headers = { "x-served-by": `${namespace}/${pod.metadata.name}` };
  if (files.size === 0) return { code: 200, contentType: CONTENT_TYPES.txt!, body: `${pod.metadata.name} answered ${method} ${target.path}\n`, headers };
  const wanted = decodeURIComponent(target.path).replace(/^\/+/, "");
  const file = wanted === "" || wanted.endsWith("/") ? `${wanted}index.html` : wanted;
  const body = files.get(file);
  if (body === undefined) return { code: 404, contentType: CONTENT_TYPES.txt!, body: "404 page not found\n", headers };
  return { code: 200, contentType: CONTENT_TYPES[file.split(".").pop() ?? ""] ?? "application/octet-stream", body, headers };
}

/** The files a pod's container serves: each ConfigMap volume it mounts, key (or item path) by file name. */
async function filesOf(objects: ObjectService, kinds: Kinds, pod: PodObject, targetPort: number | string): Promise<Map<string, string>> {
  const spec = pod.spec as unknown as {
    containers: { ports?: { name?: string; containerPort: number }[]; volumeMounts?: { name: string }[] }[];
    volumes?: { name: string; configMap?: { name?: string; items?: { key: string; path: string }[] } }[];
  };
  const container = spec.containers.find((c) => (c.ports ?? []).some((p) => p.containerPort === targetPort || p.name === targetPort)) ?? spec.containers[0];
  const files = new Map<string, string>();
  for (const mount of container?.volumeMounts ?? []) {
    const source = (spec.volumes ?? []).find((v) => v.name === mount.name)?.configMap;
    if (!source?.name) continue;
    const cm = (await objects.tryGet(kinds.configMap, pod.metadata.namespace, source.name)) as ConfigMapObject | undefined;
    const data = cm?.data ?? {};
    const items = source.items ?? Object.keys(data).map((key) => ({ key, path: key }));
    for (const item of items) if (data[item.key] !== undefined) files.set(item.path, data[item.key]!);
  }
  return files;
}
