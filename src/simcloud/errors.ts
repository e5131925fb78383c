// Errors of the sim cloud. Every error carries a machine-readable code; the HTTP API sends the code and
// the client turns it back into the same class, so callers branch on `instanceof` or `code`, never on text.

export const ERROR_STATUS = {
  InvalidParameter: 400,
  Unauthorized: 401,
  QuotaExceeded: 403,
  NotFound: 404,
  DependencyViolation: 409,
  Throttling: 429,
  InternalError: 500,
  InsufficientCapacity: 503,
} as const;

export type SimCloudErrorCode = keyof typeof ERROR_STATUS;

export function isSimCloudErrorCode(value: unknown): value is SimCloudErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_STATUS, value);
}

export interface SimCloudErrorOptions {
  /** How long to wait before retrying (Throttling). */
  retryAfterMs?: number;
  /** Structured facts about the error, e.g. the quota, its limit and usage. */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class SimCloudError extends Error {
  override name = "SimCloudError";
  readonly retryAfterMs: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    readonly code: SimCloudErrorCode,
    message: string,
    options: SimCloudErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfterMs = options.retryAfterMs;
    this.details = options.details;
  }

  /** The HTTP status the API answers with for this error. */
  get status(): number {
    return ERROR_STATUS[this.code];
  }

  /** True for errors a caller should retry unchanged (after `retryAfterMs` when set). */
  get retryable(): boolean {
    return this.code === "Throttling" || this.code === "InternalError" || this.code === "InsufficientCapacity";
  }
}

export class InvalidParameterError extends SimCloudError {
  override name = "InvalidParameterError";
  constructor(message: string, options?: SimCloudErrorOptions) {
    super("InvalidParameter", message, options);
  }
}

export class UnauthorizedError extends SimCloudError {
  override name = "UnauthorizedError";
  constructor(message: string, options?: SimCloudErrorOptions) {
    super("Unauthorized", message, options);
  }
}

export class QuotaExceededError extends SimCloudError {
  override name = "QuotaExceededError";
  constructor(message: string, options?: SimCloudErrorOptions) {
    super("QuotaExceeded", message, options);
  }
}

export class NotFoundError extends SimCloudError {
  override name = "NotFoundError";
  constructor(message: string, options?: SimCloudErrorOptions) {
    super("NotFound", message, options);
  }
}

export class DependencyViolationError extends SimCloudError {
  override name = "DependencyViolationError";
  constructor(message: string, options?: SimCloudErrorOptions) {
    super("DependencyViolation", message, options);
  }
}

export class ThrottlingError extends SimCloudError {
  override name = "ThrottlingError";
  constructor(message: string, options?: SimCloudErrorOptions) {
    super("Throttling", message, options);
  }
}

export class InternalError extends SimCloudError {
  override name = "InternalError";
  constructor(message: string, options?: SimCloudErrorOptions) {
    super("InternalError", message, options);
  }
}

export class InsufficientCapacityError extends SimCloudError {
  override name = "InsufficientCapacityError";
  constructor(message: string, options?: SimCloudErrorOptions) {
    super("InsufficientCapacity", message, options);
  }
}

const ERROR_CLASSES: Record<SimCloudErrorCode, new (message: string, options?: SimCloudErrorOptions) => SimCloudError> = {
  InvalidParameter: InvalidParameterError,
  Unauthorized: UnauthorizedError,
  QuotaExceeded: QuotaExceededError,
  NotFound: NotFoundError,
  DependencyViolation: DependencyViolationError,
  Throttling: ThrottlingError,
  InternalError: InternalError,
  InsufficientCapacity: InsufficientCapacityError,
};

/** Builds the named error class for a code (used by the HTTP client and by fault injection). */
export function simCloudError(code: SimCloudErrorCode, message: string, options?: SimCloudErrorOptions): SimCloudError {
  return new ERROR_CLASSES[code](message, options);
}

/** The JSON body of an error answer. */
export interface ErrorBody {
  error: { code: SimCloudErrorCode; message: string; retryAfterMs?: number; details?: Record<string, unknown> };
}
