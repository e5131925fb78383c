// Errors of a Kubernetes-style API as named classes: the server's `Status` answers become one class per
// reason (callers branch on `instanceof`, never on text), and requests that got no answer become
// KubeUnreachableError.

/** One offending field, as `Status.details.causes` names it. */
export interface KubeStatusCause {
  field?: string;
  message: string;
  reason?: string;
}

/** The `Status` object an API server answers a failed request with. */
export interface KubeStatus {
  kind: "Status";
  apiVersion?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: KubeStatusCause[];
    retryAfterSeconds?: number;
  };
}

export interface KubeApiErrorOptions {
  /** The Status the server sent, when it sent one. */
  status?: KubeStatus;
  /** The request, for messages: e.g. `GET /api/v1/namespaces/x`. */
  request?: string;
  retryAfterSeconds?: number;
  cause?: unknown;
}

/** The server answered with an error. */
export class KubeApiError extends Error {
  override name = "KubeApiError";
  readonly status: KubeStatus | undefined;
  readonly request: string | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    /** HTTP status code. */
    readonly code: number,
    /** The Status reason (NotFound, AlreadyExists, Conflict, Invalid, …), or the HTTP status text. */
    readonly reason: string,
    message: string,
    options: KubeApiErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
    this.request = options.request;
    this.retryAfterSeconds = options.retryAfterSeconds ?? options.status?.details?.retryAfterSeconds;
  }
}

export class KubeNotFoundError extends KubeApiError {
  override name = "KubeNotFoundError";
}

export class KubeAlreadyExistsError extends KubeApiError {
  override name = "KubeAlreadyExistsError";
}

/** A write based on a stale resourceVersion (or another concurrent change). */
export class KubeConflictError extends KubeApiError {
  override name = "KubeConflictError";
}

export class KubeInvalidError extends KubeApiError {
  override name = "KubeInvalidError";
  /** The offending fields. */
  get causes(): KubeStatusCause[] {
    return (this.status?.details?.causes ?? []).map((c) => ({ ...c }));
  }
}

export class KubeUnauthorizedError extends KubeApiError {
  override name = "KubeUnauthorizedError";
}

export class KubeForbiddenError extends KubeApiError {
  override name = "KubeForbiddenError";
}

/** The resourceVersion asked for is too old (410): relist, then watch again. */
export class KubeGoneError extends KubeApiError {
  override name = "KubeGoneError";
}

/** The request got no answer: connection refused or reset, TLS failure, DNS, or no answer in time. */
export class KubeUnreachableError extends Error {
  override name = "KubeUnreachableError";
  constructor(
    /** The server's URL. */
    readonly server: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** No (complete) answer within the request's time limit. */
export class KubeTimeoutError extends KubeUnreachableError {
  override name = "KubeTimeoutError";
}

type ApiErrorClass = new (code: number, reason: string, message: string, options?: KubeApiErrorOptions) => KubeApiError;

const BY_REASON: Record<string, ApiErrorClass> = {
  NotFound: KubeNotFoundError,
  AlreadyExists: KubeAlreadyExistsError,
  Conflict: KubeConflictError,
  Invalid: KubeInvalidError,
  Unauthorized: KubeUnauthorizedError,
  Forbidden: KubeForbiddenError,
  Expired: KubeGoneError,
  Gone: KubeGoneError,
};

const BY_CODE: Record<number, ApiErrorClass> = {
  401: KubeUnauthorizedError,
  403: KubeForbiddenError,
  404: KubeNotFoundError,
  409: KubeConflictError,
  410: KubeGoneError,
  422: KubeInvalidError,
};

export function isKubeStatus(value: unknown): value is KubeStatus {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "Status";
}

/** The named error for a failed answer: by the Status reason, else by the HTTP code. */
export function kubeApiError(code: number, statusText: string, body: unknown, options: { request?: string; retryAfterSeconds?: number } = {}): KubeApiError {
  const status = isKubeStatus(body) ? body : undefined;
  const reason = status?.reason || statusText || `HTTP ${code}`;
  const text = typeof body === "string" ? body.trim().slice(0, 300) : "";
  const message = status?.message || text || `the server answered ${code} ${statusText}`.trim();
  const ErrorClass = (status?.reason ? BY_REASON[status.reason] : undefined) ?? BY_CODE[code] ?? KubeApiError;
  return new ErrorClass(status?.code ?? code, reason, message, {
    ...(status ? { status } : {}),
    ...(options.request ? { request: options.request } : {}),
    ...(options.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: options.retryAfterSeconds }),
  });
}
