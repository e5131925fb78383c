// A typed HTTP client of the sim cloud. It implements CloudApi like the in-process SimCloud, and turns
// error answers back into the same named error classes, so callers use either one unchanged.
import * as http from "node:http";
import * as https from "node:https";
import { InternalError, isSimCloudErrorCode, simCloudError, type ErrorBody } from "./errors.ts";
import type { FaultConfig } from "./faults.ts";
import { ADMIN_PREFIX, API_PREFIX, resourcePath, tagQuery } from "./paths.ts";
import type { QuotaLimitsPatch } from "./schemas.ts";
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

export class SimCloudClient implements T.CloudApi {
  constructor(private readonly options: SimCloudClientOptions) {}

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

  createNetwork = (region: string, input: T.CreateNetworkInput) => this.call<T.Network>("POST", resourcePath(region, "network"), input);
  getNetwork = (region: string, id: string) => this.call<T.Network>("GET", resourcePath(region, "network", id));
  listNetworks = (region: string, filter?: T.ListFilter) => this.call<T.Network[]>("GET", withTags(resourcePath(region, "network"), filter));
  deleteNetwork = (region: string, id: string) => this.call<void>("DELETE", resourcePath(region, "network", id));

  createSubnet = (region: string, input: T.CreateSubnetInput) => this.call<T.Subnet>("POST", resourcePath(region, "subnet"), input);
  getSubnet = (region: string, id: string) => this.call<T.Subnet>("GET", resourcePath(region, "subnet", id));
  listSubnets = (region: string, filter?: T.ListFilter) => this.call<T.Subnet[]>("GET", withTags(resourcePath(region, "subnet"), filter));
  deleteSubnet = (region: string, id: string) => this.call<void>("DELETE", resourcePath(region, "subnet", id));

  createSecurityGroup = (region: string, input: T.CreateSecurityGroupInput) =>
    this.call<T.SecurityGroup>("POST", resourcePath(region, "securityGroup"), input);
  getSecurityGroup = (region: string, id: string) => this.call<T.SecurityGroup>("GET", resourcePath(region, "securityGroup", id));
  listSecurityGroups = (region: string, filter?: T.ListFilter) =>
    this.call<T.SecurityGroup[]>("GET", withTags(resourcePath(region, "securityGroup"), filter));
  deleteSecurityGroup = (region: string, id: string) => this.call<void>("DELETE", resourcePath(region, "securityGroup", id));

  createKeyPair = (region: string, input: T.CreateKeyPairInput) => this.call<T.KeyPair>("POST", resourcePath(region, "keyPair"), input);
  getKeyPair = (region: string, id: string) => this.call<T.KeyPair>("GET", resourcePath(region, "keyPair", id));
  listKeyPairs = (region: string, filter?: T.ListFilter) => this.call<T.KeyPair[]>("GET", withTags(resourcePath(region, "keyPair"), filter));
  deleteKeyPair = (region: string, id: string) => this.call<void>("DELETE", resourcePath(region, "keyPair", id));

  createPublicIp = (region: string, input: T.CreatePublicIpInput) => this.call<T.PublicIp>("POST", resourcePath(region, "publicIp"), input);
  getPublicIp = (region: string, id: string) => this.call<T.PublicIp>("GET", resourcePath(region, "publicIp", id));
  listPublicIps = (region: string, filter?: T.ListFilter) => this.call<T.PublicIp[]>("GET", withTags(resourcePath(region, "publicIp"), filter));
  deletePublicIp = (region: string, id: string) => this.call<void>("DELETE", resourcePath(region, "publicIp", id));

  createInstance = (region: string, input: T.CreateInstanceInput) => this.call<T.Instance>("POST", resourcePath(region, "instance"), input);
  getInstance = (region: string, id: string) => this.call<T.Instance>("GET", resourcePath(region, "instance", id));
  listInstances = (region: string, filter?: T.ListFilter) => this.call<T.Instance[]>("GET", withTags(resourcePath(region, "instance"), filter));
  stopInstance = (region: string, id: string) => this.call<T.Instance>("POST", `${resourcePath(region, "instance", id)}/stop`, {});
  startInstance = (region: string, id: string) => this.call<T.Instance>("POST", `${resourcePath(region, "instance", id)}/start`, {});
  terminateInstance = (region: string, id: string) => this.call<T.Instance>("POST", `${resourcePath(region, "instance", id)}/terminate`, {});

  createLoadBalancer = (region: string, input: T.CreateLoadBalancerInput) =>
    this.call<T.LoadBalancer>("POST", resourcePath(region, "loadBalancer"), input);
  getLoadBalancer = (region: string, id: string) => this.call<T.LoadBalancer>("GET", resourcePath(region, "loadBalancer", id));
  listLoadBalancers = (region: string, filter?: T.ListFilter) =>
    this.call<T.LoadBalancer[]>("GET", withTags(resourcePath(region, "loadBalancer"), filter));
  deleteLoadBalancer = (region: string, id: string) => this.call<void>("DELETE", resourcePath(region, "loadBalancer", id));
  registerTargets = (region: string, id: string, instanceIds: string[]) =>
    this.call<T.LoadBalancer>("POST", `${resourcePath(region, "loadBalancer", id)}/targets/register`, { instanceIds });
  deregisterTargets = (region: string, id: string, instanceIds: string[]) =>
    this.call<T.LoadBalancer>("POST", `${resourcePath(region, "loadBalancer", id)}/targets/deregister`, { instanceIds });
}

/** The operator's controls over HTTP (admin token): faults, quotas, capacity, accounts, killing instances. */
export class SimCloudAdminClient {
  constructor(private readonly options: SimCloudClientOptions) {}

  /** Returns the current fault configuration. */
  getFaults = () => send<FaultConfig>(this.options, "GET", `${ADMIN_PREFIX}/faults`);
  /** Replaces the fault configuration. */
  setFaults = (config: FaultConfig) => send<FaultConfig>(this.options, "PUT", `${ADMIN_PREFIX}/faults`, config);
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
