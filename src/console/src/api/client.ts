// The console's way to the control plane: the same Kubernetes-style HTTP API every client uses, with the
// session's bearer token. Failed answers become the API client's named errors (kubeclient/errors.ts),
// so a page reads an Invalid answer's causes, with the fields they name, as the CLI does.
import { KubeUnauthorizedError, KubeUnreachableError, kubeApiError } from "../../../kubeclient/errors.ts";
import { parseWatchLine, type WatchEvent } from "../../../kubeclient/watch.ts";

export type PatchType = "merge" | "json";

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
};

export interface KubeListOf<T> {
  metadata: { resourceVersion: string; continue?: string };
  items: T[];
}

export interface WatchRequest {
  resourceVersion: string;
  labelSelector?: string;
  fieldSelector?: string;
  signal: AbortSignal;
}

export class ApiClient {
  constructor(
    private readonly token: string,
    /** Called when the server no longer accepts the session (expired or revoked). */
    private readonly signedOut: () => void,
  ) {}

  private async send(method: string, path: string, body?: unknown, contentType = "application/json", signal?: AbortSignal): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(path, {
        method,
        headers: {
          Authorization: `Bearer ${this.token}`,
          Accept: "application/json",
          ...(body === undefined ? {} : { "Content-Type": contentType }),
        },
        ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
        ...(signal ? { signal } : {}),
        cache: "no-store",
      });
    } catch (error) {
      if ((error as Error).name === "AbortError") throw error;
      throw new KubeUnreachableError(location.origin, `the control plane did not answer: ${(error as Error).message}`, { cause: error });
    }
    if (!response.ok) {
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text) as unknown;
      } catch {
        // not JSON: the text is the message
      }
      const error = kubeApiError(response.status, response.statusText, parsed, { request: `${method} ${path.split("?")[0]}` });
      if (error instanceof KubeUnauthorizedError) this.signedOut();
      throw error;
    }
    return response;
  }

  async request<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
    const response = await this.send(method, path, body, contentType);
    const text = await response.text();
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", path);
  }

  list<T>(path: string, options: { labelSelector?: string; fieldSelector?: string } = {}): Promise<KubeListOf<T>> {
    return this.get<KubeListOf<T>>(withQuery(path, options));
  }

  create<T>(path: string, body: unknown, options: { dryRun?: boolean; yaml?: boolean } = {}): Promise<T> {
    return this.request<T>("POST", withQuery(path, { dryRun: options.dryRun ? "All" : undefined }), body, options.yaml ? "application/yaml" : "application/json");
  }

  patch<T>(path: string, body: unknown, type: PatchType = "merge"): Promise<T> {
    return this.request<T>("PATCH", path, body, PATCH_CONTENT_TYPES[type]);
  }

  delete<T>(path: string): Promise<T> {
    return this.request<T>("DELETE", path, { propagationPolicy: "Background" });
  }

  /**
   * Streams the changes of a collection from `resourceVersion` on until the server ends the stream or the
   * signal aborts it. Rejects with KubeGoneError when the version is too old (relist, then watch again).
   */
  async watch<T>(path: string, request: WatchRequest, onEvent: (event: WatchEvent<T>) => void): Promise<void> {
    const url = withQuery(path, {
      watch: "true",
      allowWatchBookmarks: "true",
      resourceVersion: request.resourceVersion,
      labelSelector: request.labelSelector,
      fieldSelector: request.fieldSelector,
    });
    const response = await this.send("GET", url, undefined, undefined, request.signal);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let pending = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += value;
        let newline: number;
        while ((newline = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, newline).trim();
          pending = pending.slice(newline + 1);
          if (line === "") continue;
          const event = parseWatchLine<T>(line, `watch ${path}`);
          if (event instanceof Error) throw event;
          onEvent(event);
        }
      }
    } finally {
      reader.releaseLock();
    }
  }
}

export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== "") params.set(key, value);
  const text = params.toString();
  return text ? `${path}${path.includes("?") ? "&" : "?"}${text}` : path;
}
