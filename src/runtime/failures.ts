// What a failed reconcile step means. Errors the code knows by name — a cloud's 5xx or throttling, an API
// that does not answer, a conflict, a quota the cloud refuses — are retried with backoff for as long as
// they last: the cause may pass, or someone may fix it. An error nobody named (a TypeError, a bare
// Error) is a defect: it is retried a few times, in case it came from a passing state, and then the
// step fails with reason InternalError and a message asking for a report, instead of showing as
// "Retrying" for ever.

/** The reason of a step that failed with an unexpected error. */
export const INTERNAL_ERROR = "InternalError";

/** Attempts an unexpected error gets, counting the first, before its step fails with InternalError. */
export const UNEXPECTED_ERROR_ATTEMPTS = 5;

/** JavaScript's own error classes: code that throws one has not said what went wrong. */
const UNNAMED: readonly (abstract new (...args: never[]) => Error)[] = [Error, TypeError, RangeError, ReferenceError, SyntaxError, EvalError, URIError, AggregateError];

/**
 * True when no part of the code expects the error: not one of the named error classes (the project's,
 * a library's), nor an operating-system error with a code (ECONNREFUSED …), nor a thrown non-error.
 */
export function isUnexpectedError(error: unknown): boolean {
  if (!(error instanceof Error)) return true;
  if (typeof (error as { code?: unknown }).code === "string") return false;
  return UNNAMED.some((type) => Object.getPrototypeOf(error) === type.prototype);
}

/** The error's class and message, on one line, without its stack. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const message = error.message.split("\n")[0] ?? "";
  return error.name && error.name !== "Error" ? `${error.name}: ${message}` : message;
}

/**
 * A step that failed with an unexpected error `attempts` times in a row: what the status shows (reason
 * InternalError). The error itself, with its stack, is in the log.
 */
export class InternalReconcileError extends Error {
  override readonly name = "InternalReconcileError";
  readonly reason = INTERNAL_ERROR;

  constructor(
    /** The phase that failed. */
    readonly step: string,
    readonly attempts: number,
    cause: unknown,
  ) {
    super(`step ${step} failed ${attempts} times in a row with an unexpected error: ${describeError(cause)}. This is a defect in Slipway: please report it with this message`, { cause });
  }
}

/**
 * What a reconcile's failure becomes once `failures` earlier attempts of the key failed too: the error
 * as thrown, or — when nobody expects it and it has had its attempts — an InternalReconcileError.
 */
export function judgeFailure(error: unknown, failures: number, step: string): unknown {
  if (!isUnexpectedError(error)) return error;
  const attempts = failures + 1;
  return attempts >= UNEXPECTED_ERROR_ATTEMPTS ? new InternalReconcileError(step, attempts, error) : error;
}
