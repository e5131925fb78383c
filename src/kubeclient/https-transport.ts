// The transport of the CLI and the controllers: one pool of kept-alive node:https (or node:http)
// connections to one server, with its CA, a bearer token or a client certificate, and the TLS server
// name to verify when it differs from the URL's host. Node's modules are loaded on the first request,
// so that the client (which makes this transport from a kubeconfig) loads in a browser too.
import type * as http from "node:http";
import type * as https from "node:https";
import { KubeTimeoutError, KubeUnreachableError } from "./errors.ts";
import { describeRequest, prefixedPath, type Transport, type TransportRequest, type TransportResponse, type TransportStream } from "./transport.ts";

export interface HttpsTransportOptions {
  /** The server URL, possibly with a path prefix: `https://127.0.0.1:7443/clusters/abc`. */
  server: string;
  /** PEM of the CA the server's certificate must chain to (default: the system's CAs). */
  caCertPem?: string;
  token?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  /** The name the server's certificate must carry (sent in SNI) when it differs from the URL's host. */
  tlsServerName?: string;
}

/**
 * Methods whose request may be sent again when it never reached the server (as Go's net/http replays
 * them): a repeated GET, PUT or DELETE has the effect of one.
 */
const REPLAYABLE = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/**
 * The server had closed a kept-alive connection just as the request went out on it (its idle timeout met
 * the request): nothing of the request was processed, and a new connection serves it.
 */
class StaleConnectionError extends KubeUnreachableError {}

interface Started {
  request: http.ClientRequest;
  /** Resolves with the answer once its headers arrived. */
  response: Promise<http.IncomingMessage>;
  timer: NodeJS.Timeout;
  /** The error to report for a failure while reading the answer (the time limit, if that was it). */
  failure(error: unknown): Error;
}

function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value;
  return flat;
}

interface Pool {
  module: typeof http | typeof https;
  agent: http.Agent;
}

export class HttpsTransport implements Transport {
  readonly server: string;
  private readonly url: URL;
  private pool: Pool | undefined;
  private loading: Promise<Pool> | undefined;

  constructor(private readonly options: HttpsTransportOptions) {
    this.url = new URL(options.server);
    if (this.url.protocol !== "https:" && this.url.protocol !== "http:") {
      throw new Error(`the server URL ${options.server} is not an http or https URL`);
    }
    this.server = options.server.replace(/\/+$/, "");
  }

  /** The connection pool, made on first use. */
  private connections(): Promise<Pool> {
    this.loading ??= (async () => {
      const { options } = this;
      if (this.url.protocol === "http:") {
        const module = await import("node:http");
        return (this.pool = { module, agent: new module.Agent({ keepAlive: true }) });
      }
      const [module, tls] = await Promise.all([import("node:https"), import("node:tls")]);
      const agent = new module.Agent({
        keepAlive: true,
        // One TLS context for every connection of the pool: made per connection (the default), it
        // parses the CA and the client key again each time.
        secureContext: tls.createSecureContext({
          ...(options.caCertPem ? { ca: options.caCertPem } : {}),
          ...(options.clientCertPem && options.clientKeyPem ? { cert: options.clientCertPem, key: options.clientKeyPem } : {}),
        }),
        ...(options.tlsServerName ? { servername: options.tlsServerName } : {}),
      });
      return (this.pool = { module, agent });
    })();
    return this.loading;
  }

  /** Starts a request; its `response` resolves once the answer's headers arrived. */
  private async start(req: TransportRequest): Promise<Started> {
    const pool = await this.connections();
    const headers: Record<string, string> = {
      "user-agent": "slipway-kubeclient",
      ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
      ...(req.body === undefined ? {} : { "content-length": String(Buffer.byteLength(req.body)) }),
      ...req.headers,
    };
    const requestOptions: https.RequestOptions = {
      method: req.method,
      protocol: this.url.protocol,
      hostname: this.url.hostname.replace(/^\[|\]$/g, ""),
      port: this.url.port || (this.url.protocol === "https:" ? 443 : 80),
      path: prefixedPath(this.url, req.path),
      headers,
      agent: pool.agent,
      ...(this.options.tlsServerName ? { servername: this.options.tlsServerName } : {}),
    };
    const described = describeRequest(req);
    const request = pool.module.request(requestOptions);
    // Errors are made only when they happen: each captures a stack, and a fleet's workload clients make
    // thousands of requests a minute that end well.
    let timeout: KubeTimeoutError | undefined;
    const timedOut = () => (timeout ??= new KubeTimeoutError(this.server, `${described}: no complete answer from ${this.server} within ${req.timeoutMs} ms`));
    const timer = setTimeout(() => request.destroy(timedOut()), req.timeoutMs);
    const response = new Promise<http.IncomingMessage>((resolve, reject) => {
      // Destroyed before an answer without an error (abandoned): settle all the same.
      const abandoned = () => reject(new KubeUnreachableError(this.server, `${described}: the request to ${this.server} was abandoned`));
      request.once("close", abandoned);
      request.once("response", (res) => {
        request.off("close", abandoned);
        resolve(res);
      });
      request.on("error", (error) => {
        clearTimeout(timer);
        if (request.reusedSocket && (error as NodeJS.ErrnoException).code === "ECONNRESET") {
          reject(new StaleConnectionError(this.server, `${described}: cannot reach ${this.server}: ${error.message}`, { cause: error }));
          return;
        }
        reject(this.unreachable(error, `${described}: cannot reach ${this.server}`));
      });
    });
    if (req.signal) {
      if (req.signal.aborted) request.destroy();
      else req.signal.addEventListener("abort", () => request.destroy(), { once: true });
    }
    request.end(req.body);
    const failure = (error: unknown) => timeout ?? this.unreachable(error, `${described}: the answer from ${this.server} broke off`);
    return { request, response, timer, failure };
  }

  private unreachable(error: unknown, what: string): KubeUnreachableError {
    if (error instanceof KubeUnreachableError) return error;
    return new KubeUnreachableError(this.server, `${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    try {
      return await this.requestOnce(req);
    } catch (error) {
      if (!(error instanceof StaleConnectionError) || !REPLAYABLE.has(req.method.toUpperCase())) throw error;
      return this.requestOnce(req);
    }
  }

  private async requestOnce(req: TransportRequest): Promise<TransportResponse> {
    const { response, timer, failure } = await this.start(req);
    try {
      const res = await response;
      const chunks: Buffer[] = [];
      try {
        for await (const chunk of res) chunks.push(chunk as Buffer);
      } catch (error) {
        throw failure(error);
      }
      return { status: res.statusCode ?? 0, statusText: res.statusMessage ?? "", headers: flatHeaders(res.headers), body: Buffer.concat(chunks).toString("utf8") };
    } finally {
      clearTimeout(timer);
    }
  }

  async stream(req: TransportRequest): Promise<TransportStream> {
    const { request, response, timer } = await this.start(req);
    let res: http.IncomingMessage;
    try {
      res = await response;
    } finally {
      clearTimeout(timer);
    }
    return { status: res.statusCode ?? 0, statusText: res.statusMessage ?? "", headers: flatHeaders(res.headers), body: res, abort: () => request.destroy() };
  }

  /** Ends the pooled connections (a later request opens new ones). */
  close(): void {
    this.pool?.agent.destroy();
  }
}
