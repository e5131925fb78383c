// A transport over the platform's `fetch`, for a browser (where the page's origin and the browser's own
// trust store stand in for the CA and client certificates) and for any runtime that has fetch. It
// carries a bearer token when given one.
import { KubeTimeoutError, KubeUnreachableError } from "./errors.ts";
import { describeRequest, prefixedPath, type Transport, type TransportRequest, type TransportResponse, type TransportStream } from "./transport.ts";

export interface FetchTransportOptions {
  /** The server URL, possibly with a path prefix. */
  server: string;
  token?: string;
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
  /** Sent with each request; a browser console on the same origin uses "same-origin". */
  credentials?: RequestCredentials;
}

function headersOf(response: Response): Record<string, string> {
  const flat: Record<string, string> = {};
  response.headers.forEach((value, name) => (flat[name.toLowerCase()] = value));
  return flat;
}

/** The chunks of a fetch body, read with its reader (not every browser iterates a ReadableStream). */
async function* chunksOf(body: ReadableStream<Uint8Array> | null): AsyncGenerator<Uint8Array> {
  if (!body) return;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

export class FetchTransport implements Transport {
  readonly server: string;
  private readonly url: URL;
  private readonly fetch: typeof fetch;
  /** Requests under way, so that `close` ends them. */
  private readonly open = new Set<AbortController>();

  constructor(private readonly options: FetchTransportOptions) {
    this.url = new URL(options.server);
    if (this.url.protocol !== "https:" && this.url.protocol !== "http:") {
      throw new Error(`the server URL ${options.server} is not an http or https URL`);
    }
    this.server = options.server.replace(/\/+$/, "");
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Sends the request; answers the response once its headers arrived, and what ends it. */
  private async start(req: TransportRequest): Promise<{ response: Response; controller: AbortController; timer: ReturnType<typeof setTimeout>; timedOut: () => boolean }> {
    const described = describeRequest(req);
    const controller = new AbortController();
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      controller.abort();
    }, req.timeoutMs);
    if (req.signal) {
      if (req.signal.aborted) controller.abort();
      else req.signal.addEventListener("abort", () => controller.abort(), { once: true });
    }
    this.open.add(controller);
    controller.signal.addEventListener("abort", () => this.open.delete(controller), { once: true });
    const url = `${this.url.origin}${prefixedPath(this.url, req.path)}`;
    const headers = { ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}), ...req.headers };
    try {
      const response = await this.fetch(url, {
        method: req.method,
        headers,
        ...(req.body === undefined ? {} : { body: req.body }),
        signal: controller.signal,
        ...(this.options.credentials ? { credentials: this.options.credentials } : {}),
      });
      return { response, controller, timer, timedOut: () => expired };
    } catch (error) {
      clearTimeout(timer);
      this.open.delete(controller);
      if (expired) throw this.timeout(described, req.timeoutMs);
      if (controller.signal.aborted) throw new KubeUnreachableError(this.server, `${described}: the request to ${this.server} was abandoned`);
      throw new KubeUnreachableError(this.server, `${described}: cannot reach ${this.server}: ${reasonOf(error)}`, { cause: error });
    }
  }

  private timeout(described: string, timeoutMs: number): KubeTimeoutError {
    return new KubeTimeoutError(this.server, `${described}: no complete answer from ${this.server} within ${timeoutMs} ms`);
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    const { response, controller, timer, timedOut } = await this.start(req);
    try {
      const body = await response.text();
      return { status: response.status, statusText: response.statusText, headers: headersOf(response), body };
    } catch (error) {
      if (timedOut()) throw this.timeout(describeRequest(req), req.timeoutMs);
      throw new KubeUnreachableError(this.server, `${describeRequest(req)}: the answer from ${this.server} broke off: ${reasonOf(error)}`, { cause: error });
    } finally {
      clearTimeout(timer);
      this.open.delete(controller);
    }
  }

  async stream(req: TransportRequest): Promise<TransportStream> {
    const { response, controller, timer } = await this.start(req);
    clearTimeout(timer);
    const done = () => this.open.delete(controller);
    const body = (async function* () {
      try {
        yield* chunksOf(response.body);
      } finally {
        done();
      }
    })();
    return { status: response.status, statusText: response.statusText, headers: headersOf(response), body, abort: () => controller.abort() };
  }

  close(): void {
    for (const controller of this.open) controller.abort();
    this.open.clear();
  }
}

/** The innermost message of a fetch failure ("fetch failed" says little; its cause says why). */
function reasonOf(error: unknown): string {
  let current: unknown = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(error);
}
