// A typed HTTP client of the sim cloud. It implements CloudApi like the in-process SimCloud, and turns
// error answers back into the same named error classes, so callers use either one unchanged. Its calls on
// resources are made from the kinds' descriptors (services.ts), as the server's routes are.
import * as http from "node:http";
import * as https from "node:https";
import { InternalError, isSimCloudErrorCode, simCloudError, type ErrorBody } from "./errors.ts";
import type { FaultConfig, FaultCounts } from "./faults.ts";
import { ADMIN_PREFIX, API_PREFIX, resourcePath, tagQuery } from "./paths.ts";
import { flatMethods, type AnyDescriptor, type ResourceApi } from "./resource-kinds.ts";
import type { QuotaLimitsPatch } from "./schemas.ts";
import { BUILTIN_RESOURCES } from "./services.ts";
import type * as T from "./types.ts";

export interface SimCloudClientOptions {
  /** Base URL, e.g. http://127.0.0.1:7480 */
  endpoint: string;
  /** Bearer token (an account's, or the admin token for SimCloudAdminClient). */
  token: string;
  /** Per-request timeout (default 30 s). */
  timeoutMs?: number;
}

/** Kept-alive connections to the sim cloud, shared by every client in the process (idle ones do not hold it open). */
const agents = { "http:": new http.Agent({ keepAlive: true }), "https:": new https.Agent({ keepAlive: true }) };

interface RawAnswer {
  status: number;
  statusText: string;
  retryAfter: string | undefined;
  text: string;
}

/** One HTTP exchange over the shared agents (node:http: a fleet makes thousands of these a second). */
function exchange(url: URL, method: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number): Promise<RawAnswer> {
  const secure = url.protocol === "https:";
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request(url, { method, headers, agent: agents[secure ? "https:" : "http:"], timeout: timeoutMs }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("error", reject);
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? "",
          retryAfter: response.headers["retry-after"],
          text: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    });
    request.on("timeout", () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on("error", (error: NodeJS.ErrnoException) => {
      // The server closed a kept-alive connection as we reused it: the request never arrived, say so.
      if (request.reusedSocket && error.code === "ECONNRESET") reject(Object.assign(error, { retryable: true }));
      else reject(error);
    });
    request.end(body);
  });
}

/** Sends one JSON request; answers the parsed body, or throws the SimCloudError the server described. */
async function send<R>(options: SimCloudClientOptions, method: string, path: string, body?: unknown): Promise<R> {
  const endpoint = options.endpoint.replace(/\/+$/, "");
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { authorization: `Bearer ${options.token}` };
  if (payload !== undefined) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(Buffer.byteLength(payload));
  }
  const url = new URL(endpoint + path);
  let answer: RawAnswer;
  for (let attempt = 1; ; attempt++) {
    try {
      answer = await exchange(url, method, headers, payload, options.timeoutMs ?? 30_000);
      break;
    } catch (error) {
      if ((error as { retryable?: boolean }).retryable && attempt < 3) continue;
      throw new InternalError(`cannot reach the sim cloud at ${endpoint}: ${(error as Error).message}`, { cause: error });
    }
  }
  let parsed: unknown;
  try {
    parsed = answer.text === "" ? undefined : JSON.parse(answer.text);
  } catch (error) {
    throw new InternalError(`the sim cloud answered ${answer.status} with a body that is not JSON`, { cause: error });
  }
  if (answer.status >= 200 && answer.status < 300) return parsed as R;
  const described = (parsed as Partial<ErrorBody> | undefined)?.error;
  if (!described || !isSimCloudErrorCode(described.code)) {
    throw new InternalError(`the sim cloud answered ${answer.status} ${answer.statusText}`);
  }
  const retryAfterHeader = Number(answer.retryAfter);
  const retryAfterMs = described.retryAfterMs ?? (retryAfterHeader > 0 ? retryAfterHeader * 1000 : undefined);
  throw simCloudError(described.code, described.message, {
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(described.details === undefined ? {} : { details: described.details }),
  });
}

function withTags(path: string, filter: T.ListFilter | undefined): string {
  const query = tagQuery(filter?.tags);
  return query.length ? `${path}?${query.join("&")}` : path;
}

type Call = (region: string, ...args: never[]) => Promise<unknown>;

class SimCloudClientBase {
  private readonly apis = new Map<AnyDescriptor, Record<string, Call>>();

  constructor(private readonly options: SimCloudClientOptions) {
    Object.assign(this, flatMethods(BUILTIN_RESOURCES, (descriptor) => this.kindApi(descriptor)));
  }

  private call<R>(method: string, path: string, body?: unknown): Promise<R> {
    return send<R>(this.options, method, path, body);
  }

  private region(region: string, rest: string): string {
    return `${API_PREFIX}/regions/${encodeURIComponent(region)}/${rest}`;
  }

  describeRegions = () => this.call<T.Region[]>("GET", `${API_PREFIX}/regions`);
  describeZones = (region: string) => this.call<T.Zone[]>("GET", this.region(region, "zones"));
  describeMachineTypes = (region: string) => this.call<T.MachineType[]>("GET", this.region(region, "machine-types"));
  describeImages = (region: string) => this.call<T.Image[]>("GET", this.region(region, "images"));
  getQuota = (region: string) => this.call<T.Quota>("GET", this.region(region, "quota"));
  listResources = (filter: T.ResourceFilter = {}) => {
    const query = [...tagQuery(filter.tags), ...(filter.region ? [`region=${encodeURIComponent(filter.region)}`] : [])];
    return this.call<T.CloudResource[]>("GET", `${API_PREFIX}/resources${query.length ? `?${query.join("&")}` : ""}`);
  };

  describeInstanceEvents = (region: string, after?: number, epoch?: string) => {
    const query = after === undefined ? "" : `?after=${after}${epoch ? `&epoch=${encodeURIComponent(epoch)}` : ""}`;
    return this.call<T.InstanceEvents>("GET", this.region(region, `instance-events${query}`));
  };

  /** The operations of one kind of resource, e.g. `resources(instances).stopInstance(region, id)`; the server must serve the kind. */
  resources<D extends AnyDescriptor>(descriptor: D): ResourceApi<D> {
    return this.kindApi(descriptor) as unknown as ResourceApi<D>;
  }

  private kindApi(descriptor: AnyDescriptor): Record<string, Call> {
    const known = this.apis.get(descriptor);
    if (known) return known;
    const path = (region: string, id?: string) => resourcePath(region, descriptor.collection, id);
    const api: Record<string, Call> = {
      create: (region: string, input: unknown) => this.call("POST", path(region), input),
      get: (region: string, id: string) => this.call("GET", path(region, id)),
      list: (region: string, filter?: T.ListFilter) => this.call("GET", withTags(path(region), filter)),
      delete: (region: string, id: string) => this.call("DELETE", path(region, id)),
    };
    for (const [name, action] of Object.entries(descriptor.actions)) {
      api[name] = (region: string, id: string, ...args: unknown[]) => this.call("POST", `${path(region, id)}/${action.path}`, action.body(...args));
    }
    this.apis.set(descriptor, api);
    return api;
  }
}

/** A typed HTTP client of the sim cloud: the catalogue and the operations of every built-in kind (CloudApi). */
export type SimCloudClient = SimCloudClientBase & T.CloudApi;
export const SimCloudClient = SimCloudClientBase as new (options: SimCloudClientOptions) => SimCloudClient;

/** The operator's controls over HTTP (admin token): faults, quotas, capacity, accounts, killing instances. */
export class SimCloudAdminClient {
  constructor(private readonly options: SimCloudClientOptions) {}

  /** Returns the current fault configuration. */
  getFaults = () => send<FaultConfig>(this.options, "GET", `${ADMIN_PREFIX}/faults`);
  /** Replaces the fault configuration. */
  setFaults = (config: FaultConfig) => send<FaultConfig>(this.options, "PUT", `${ADMIN_PREFIX}/faults`, config);
  /** Faults injected since the cloud started. */
  getFaultCounts = () => send<FaultCounts>(this.options, "GET", `${ADMIN_PREFIX}/faults/counts`);
  /** Changes some limits of an account in a region. */
  setQuota = (account: string, region: string, patch: QuotaLimitsPatch) =>
    send<T.Quota>(this.options, "PUT", `${ADMIN_PREFIX}/quotas/${encodeURIComponent(account)}/${encodeURIComponent(region)}`, patch);
  /** Sets how many instances of a machine type a zone can run. */
  setCapacity = (region: string, zone: string, machineType: string, instances: number) =>
    send<unknown>(this.options, "PUT", `${ADMIN_PREFIX}/capacity/${[region, zone, machineType].map(encodeURIComponent).join("/")}`, {
      instances,
    }).then(() => undefined);
  /** Terminates an instance at once, as a host failure would. */
  killInstance = (id: string, reason?: string) =>
    send<T.Instance>(this.options, "POST", `${ADMIN_PREFIX}/instances/${encodeURIComponent(id)}/kill`, reason ? { reason } : {});
  /** Creates an account or replaces its token. */
  setAccount = (account: string, token: string) =>
    send<void>(this.options, "PUT", `${ADMIN_PREFIX}/accounts/${encodeURIComponent(account)}`, { token });
}
