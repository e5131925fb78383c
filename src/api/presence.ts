// "It is not there" and "it is already there", in one vocabulary for both sides of a Kubernetes-style API:
// the API server's errors (NotFoundError, AlreadyExistsError) and the kube client's (KubeNotFoundError,
// KubeAlreadyExistsError, or any KubeApiError with the same code and reason). Both carry the Status
// `code` and `reason`, which is what is read here, so every layer can use it without importing either.
// The helpers say what a caller means by ignoring one of them: make it unless it exists, delete it
// unless it is gone, read it if it is there.

interface StatusError {
  code: number;
  reason: string;
}

function statusOf(error: unknown): StatusError | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, reason } = error as Error & { code?: unknown; reason?: unknown };
  return typeof code === "number" && typeof reason === "string" ? { code, reason } : undefined;
}

/** The object (or the path) does not exist: 404, or the Status reason NotFound. */
export function isNotFound(error: unknown): boolean {
  const status = statusOf(error);
  return status !== undefined && (status.code === 404 || status.reason === "NotFound");
}

/** An object of that name exists already: a create's AlreadyExists, not an update's Conflict (both 409). */
export function isAlreadyExists(error: unknown): boolean {
  return statusOf(error)?.reason === "AlreadyExists";
}

/** Runs a create; undefined when the object exists already. */
export async function createIfAbsent<T>(create: () => Promise<T>): Promise<T | undefined> {
  try {
    return await create();
  } catch (error) {
    if (isAlreadyExists(error)) return undefined;
    throw error;
  }
}

/** Runs a delete; false when the object was gone already. */
export async function deleteIfPresent(remove: () => Promise<unknown>): Promise<boolean> {
  try {
    await remove();
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/** Runs a read (or a change) of one object; undefined when it does not exist. */
export async function ifPresent<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
