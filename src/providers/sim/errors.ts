// Classifies what the sim cloud (or the network on the way to it) answers into ProviderError kinds, keeping
// the cloud's own code, so controllers branch on the kind and messages still say what the cloud said.
import { SimCloudError, type SimCloudErrorCode } from "../../simcloud/errors.ts";
import { ProviderError, isProviderError, type ProviderErrorKind } from "../provider.ts";

const KIND_OF_CODE: Record<SimCloudErrorCode, ProviderErrorKind> = {
  InternalError: "transient",
  Throttling: "throttled",
  QuotaExceeded: "quota",
  InsufficientCapacity: "capacity",
  InvalidParameter: "invalid",
  Unauthorized: "permission",
  NotFound: "notFound",
  DependencyViolation: "dependency",
};

/** System error codes (and abort names) of a request that never got an answer. */
const NETWORK_FAILURES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "TimeoutError",
  "AbortError",
]);

/** The first network failure code along the cause chain (e.g. ECONNREFUSED), if any. */
export function networkFailureCode(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  for (let current = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_FAILURES.has(code)) return code;
    if (NETWORK_FAILURES.has(current.name)) return current.name;
  }
  return undefined;
}

/**
 * The ProviderError for a failure of `what` (e.g. `create network in sim-east-1`). Cloud errors keep
 * their code; a request that got no answer (refused, reset, timed out) is transient, as is anything else
 * unexpected, so that it is retried with backoff rather than failing a cluster.
 */
export function toProviderError(error: unknown, what: string): ProviderError {
  if (error instanceof ProviderError) return error;
  if (error instanceof SimCloudError) {
    const network = error.code === "InternalError" ? networkFailureCode(error) : undefined;
    return new ProviderError(KIND_OF_CODE[error.code], `${what}: ${error.message}`, {
      code: network ?? error.code,
      cause: error,
      ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    });
  }
  const network = networkFailureCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return new ProviderError("transient", `${what}: ${message}`, { cause: error, ...(network ? { code: network } : {}) });
}

/** What `run` answers, or undefined when it fails with a notFound ProviderError (a tolerant get or delete). */
export async function unlessNotFound<R>(run: () => Promise<R>): Promise<R | undefined> {
  try {
    return await run();
  } catch (error) {
    if (isProviderError(error, "notFound")) return undefined;
    throw error;
  }
}
