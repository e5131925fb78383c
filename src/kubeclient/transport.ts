// One HTTPS connection pool to one API server: credentials, CA and server name, a path prefix in the
// server URL, per-request time limits, and the answers turned into parsed bodies or named errors.
import * as http from "node:http";
import * as https from "node:https";
import { createSecureContext } from "node:tls";
import { KubeTimeoutError, KubeUnreachableError, kubeApiError } from "./errors.ts";

export interface TransportOptions {
  /** The server URL, possibly with a path prefix: `https://127.0.0.1:7443/clusters/abc`. */
  server: string;
  /** PEM of the CA the server's certificate must chain to (default: the system's CAs). */
  caCertPem?: string;
  token?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  /** The name the server's certificate must carry (sent in SNI) when it differs from the URL's host. */
  tlsServerName?: string;
  /** Time limit of one request, until its whole answer arrived (default 30 s). */
  timeoutMs?: number;
}

export interface KubeResponse<T = unknown> {
  statusCode: number;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON, the text when it is not JSON, or undefined when empty. */
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  /** Content type of the body (default application/json). */
  contentType?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** Abandons the request. */
  signal?: AbortSignal;
}

export const DEFAULT_TIMEOUT_MS = 30_000;

interface Started {
  request: http.ClientRequest;
  /** Resolves with the answer once its headers arrived. */
  response: Promise<http.IncomingMessage>;
  timer: NodeJS.Timeout;
  /** The error to report for a failure while reading the answer (the time limit, if that was it). */
  failure(error: unknown): Error;
}

function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function retryAfterSeconds(headers: http.IncomingHttpHeaders): number | undefined {
  const header = headers["retry-after"];
  if (header === undefined) return undefined;
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

export class Transport {
  readonly server: string;
  private readonly url: URL;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number;

  constructor(private readonly options: TransportOptions) {
    this.url = new URL(options.server);
    if (this.url.protocol !== "https:" && this.url.protocol !== "http:") {
      throw new Error(`the server URL ${options.server} is not an http or https URL`);
    }
    this.server = options.server.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.agent =
      this.url.protocol === "https:"
        ? new https.Agent({
            keepAlive: true,
            // One TLS context for every connection of the pool: made per connection (the default), it
            // parses the CA and the client key again each time.
            secureContext: createSecureContext({
              ...(options.caCertPem ? { ca: options.caCertPem } : {}),
              ...(options.clientCertPem && options.clientKeyPem ? { cert: options.clientCertPem, key: options.clientKeyPem } : {}),
            }),
            ...(options.tlsServerName ? { servername: options.tlsServerName } : {}),
          })
        : new http.Agent({ keepAlive: true });
  }

  /** Starts a request of `path` (under the server URL's own path); resolves once the answer's headers arrived. */
  private start(method: string, path: string, options: RequestOptions, timeoutMs: number): Started {
    const relative = path.startsWith("/") ? path : `/${path}`;
    const prefix = this.url.pathname.replace(/\/+$/, "");
    const payload = options.body === undefined ? undefined : typeof options.body === "string" ? options.body : JSON.stringify(options.body);
    const headers: Record<string, string> = {
      accept: "application/json",
      "user-agent": "slipway-kubeclient",
      ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
      ...(payload === undefined ? {} : { "content-type": options.contentType ?? "application/json", "content-length": String(Buffer.byteLength(payload)) }),
      ...options.headers,
    };
    const requestOptions: https.RequestOptions = {
      method,
      protocol: this.url.protocol,
      hostname: this.url.hostname.replace(/^\[|\]$/g, ""),
      port: this.url.port || (this.url.protocol === "https:" ? 443 : 80),
      path: prefix + relative,
      headers,
      agent: this.agent,
      ...(this.options.tlsServerName ? { servername: this.options.tlsServerName } : {}),
    };
    const described = `${method} ${relative.split("?")[0]}`;
    const request = (this.url.protocol === "https:" ? https : http).request(requestOptions);
    const timeout = new KubeTimeoutError(this.server, `${described}: no complete answer from ${this.server} within ${timeoutMs} ms`);
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      request.destroy(timeout);
    }, timeoutMs);
    const response = new Promise<http.IncomingMessage>((resolve, reject) => {
      request.once("response", resolve);
      // Destroyed before an answer without an error (abandoned): settle all the same.
      request.once("close", () => reject(new KubeUnreachableError(this.server, `${described}: the request to ${this.server} was abandoned`)));
      request.on("error", (error) => {
        clearTimeout(timer);
        reject(this.unreachable(error, `${described}: cannot reach ${this.server}`));
      });
    });
    if (options.signal) {
      if (options.signal.aborted) request.destroy();
      else options.signal.addEventListener("abort", () => request.destroy(), { once: true });
    }
    request.end(payload);
    const failure = (error: unknown) => (expired ? timeout : this.unreachable(error, `${described}: the answer from ${this.server} broke off`));
    return { request, response, timer, failure };
  }

  private unreachable(error: unknown, what: string): KubeUnreachableError {
    if (error instanceof KubeUnreachableError) return error;
    return new KubeUnreachableError(this.server, `${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }

  /** Sends a request and reads the whole answer; error statuses throw the named KubeApiError. */
  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<KubeResponse<T>> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const { response, timer, failure } = this.start(method, path, options, timeoutMs);
    try {
      const res = await response;
      const chunks: Buffer[] = [];
      try {
        for await (const chunk of res) chunks.push(chunk as Buffer);
      } catch (error) {
        throw failure(error);
      }
      const body = parseBody(Buffer.concat(chunks).toString("utf8"));
      const statusCode = res.statusCode ?? 0;
      if (statusCode >= 400) {
        const retryAfter = retryAfterSeconds(res.headers);
        throw kubeApiError(statusCode, res.statusMessage ?? "", body, {
          request: `${method} ${path}`,
          ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }),
        });
      }
      return { statusCode, headers: res.headers, body: body as T };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Starts a streaming request (a watch): the time limit covers only the wait for the answer's headers.
   * An error status is read whole and thrown as the named KubeApiError.
   */
  async stream(method: string, path: string, options: RequestOptions = {}): Promise<{ response: http.IncomingMessage; abort(): void }> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const { request, response, timer } = this.start(method, path, options, timeoutMs);
    let res: http.IncomingMessage;
    try {
      res = await response;
    } finally {
      clearTimeout(timer);
    }
    const statusCode = res.statusCode ?? 0;
    if (statusCode >= 400) {
      const chunks: Buffer[] = [];
      for await (const chunk of res) chunks.push(chunk as Buffer);
      throw kubeApiError(statusCode, res.statusMessage ?? "", parseBody(Buffer.concat(chunks).toString("utf8")), { request: `${method} ${path}` });
    }
    return { response: res, abort: () => request.destroy() };
  }

  /** Closes the pooled connections. */
  close(): void {
    this.agent.destroy();
  }
}
