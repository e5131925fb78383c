// How the client reaches a server: one request in, one answer out (status, headers, body), and a
// streaming variant for watches. The client builds the requests and reads the answers (JSON, named
// errors); a transport only carries bytes and credentials. `HttpsTransport` (node:https, with a CA,
// client certificates and a TLS server name) serves the CLI and the controllers; `FetchTransport`
// (the platform's fetch) serves a browser. Nothing here depends on Node.

/** Time limit of one request when neither the request nor the client says otherwise. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface TransportRequest {
  method: string;
  /** Path and query, relative to the server URL (which may carry a path prefix of its own). */
  path: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body?: string;
  /**
   * For `request`: until the whole answer arrived. For `stream`: until the answer's headers arrived
   * (a watch then stays open as long as the server keeps it).
   */
  timeoutMs: number;
  /** Abandons the request (and, for `stream`, the open answer). */
  signal?: AbortSignal;
}

export interface TransportResponse {
  status: number;
  statusText: string;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The body as text ("" when empty). */
  body: string;
}

export interface TransportStream {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  /** The body as it arrives; iterating it fails when the connection breaks off. */
  body: AsyncIterable<Uint8Array | string>;
  /** Ends the answer early (closing a watch). */
  abort(): void;
}

/**
 * Carries requests to one server. Failures to get an answer reject with KubeUnreachableError (or
 * KubeTimeoutError past the time limit); every answer that arrives resolves, whatever its status.
 */
export interface Transport {
  /** The server URL, without a trailing slash (for messages). */
  readonly server: string;
  request(request: TransportRequest): Promise<TransportResponse>;
  stream(request: TransportRequest): Promise<TransportStream>;
  /** Releases pooled connections; open streams end. */
  close(): void;
}

/** Joins a path under the server URL's own path: `https://h/clusters/abc` + `/api/v1` → `/clusters/abc/api/v1`. */
export function prefixedPath(server: URL, path: string): string {
  const relative = path.startsWith("/") ? path : `/${path}`;
  return server.pathname.replace(/\/+$/, "") + relative;
}

/** `GET /api/v1/namespaces`: the request as messages name it (without the query). */
export function describeRequest(request: Pick<TransportRequest, "method" | "path">): string {
  return `${request.method} ${request.path.split("?")[0]}`;
}
