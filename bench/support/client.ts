// A minimal HTTPS client for benchmarks: one keep-alive agent, a trusted CA, an optional bearer token,
// whole responses read into memory. Unexpected status codes become UnexpectedStatusError.
import { Agent, request, type RequestOptions } from "node:https";
import type { IncomingMessage } from "node:http";

export class UnexpectedStatusError extends Error {
  override readonly name = "UnexpectedStatusError";
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${method} ${path} answered ${status}: ${body.slice(0, 300)}`);
  }
}

export interface Endpoint {
  /** https://127.0.0.1:PORT */
  server: string;
  caCertPem: string;
  token?: string;
}

export interface ClientResponse {
  status: number;
  body: Buffer;
}

const REQUEST_TIMEOUT_MS = 15_000;

export class BenchClient {
  readonly agent: Agent;
  private readonly url: URL;

  constructor(
    private readonly endpoint: Endpoint,
    maxSockets: number,
  ) {
    this.url = new URL(endpoint.server);
    if (this.url.hostname !== "127.0.0.1") throw new Error(`benchmarks only talk to 127.0.0.1, not ${this.url.hostname}`);
    this.agent = new Agent({ keepAlive: true, maxSockets, ca: endpoint.caCertPem });
  }

  /** Sends one request; rejects unless the status is one of `expect`. */
  async send(method: string, path: string, options: { body?: unknown; contentType?: string; expect?: number[] } = {}): Promise<ClientResponse> {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const response = await new Promise<ClientResponse>((resolve, reject) => {
      const req = request(this.options(method, path, payload, options.contentType), (res) => {
        readAll(res).then((body) => resolve({ status: res.statusCode ?? 0, body }), reject);
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${method} ${path} timed out after ${REQUEST_TIMEOUT_MS} ms`)));
      req.on("error", reject);
      req.end(payload);
    });
    const expect = options.expect ?? [200];
    if (!expect.includes(response.status)) throw new UnexpectedStatusError(method, path, response.status, response.body.toString("utf8"));
    return response;
  }

  async json<T>(method: string, path: string, options: { body?: unknown; contentType?: string; expect?: number[] } = {}): Promise<T> {
    const response = await this.send(method, path, options);
    return JSON.parse(response.body.toString("utf8")) as T;
  }

  /** Options for a request on this client's agent (also used to open long-running watch streams). */
  options(method: string, path: string, payload?: string, contentType?: string): RequestOptions {
    const headers: Record<string, string | number> = { Accept: "application/json" };
    if (this.endpoint.token !== undefined) headers.Authorization = `Bearer ${this.endpoint.token}`;
    if (payload !== undefined) {
      headers["Content-Type"] = contentType ?? "application/json";
      headers["Content-Length"] = Buffer.byteLength(payload);
    }
    return { method, host: this.url.hostname, port: this.url.port, path, headers, agent: this.agent, ca: this.endpoint.caCertPem };
  }

  close(): void {
    this.agent.destroy();
  }
}

/** What `kubectl get` asks for: a Table, or JSON from a server without Tables. */
export const TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/** One GET with its own Accept header (send() always asks for JSON); resolves with the body's size once it is read. */
export function getWithAccept(client: BenchClient, path: string, accept: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const options = client.options("GET", path);
    options.headers = { ...options.headers, Accept: accept };
    const req = request(options, (res) => {
      let bytes = 0;
      res.on("data", (chunk: Buffer) => (bytes += chunk.length));
      res.on("end", () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`GET ${path} answered ${res.statusCode}`))));
      res.on("error", reject);
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`GET ${path} timed out after ${REQUEST_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end();
  });
}

function readAll(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (chunk: Buffer) => chunks.push(chunk));
    res.on("end", () => resolve(Buffer.concat(chunks)));
    res.on("error", reject);
  });
}
