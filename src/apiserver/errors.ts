// Business errors thrown by the object service, mapped to Kubernetes Status objects in one place.
import type { FieldError } from "../api/registry.ts";

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason: string; message: string; field?: string }[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure" | "Success";
  message: string;
  reason: string;
  details?: StatusDetails;
  code: number;
}

export abstract class ApiError extends Error {
  abstract readonly code: number;
  abstract readonly reason: string;
  constructor(
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  toStatus(): Status {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

export interface ObjectRef {
  group: string;
  kind: string;
  plural: string;
  name?: string;
}

/** The reference of an object of a kind, for errors about it. */
export function refOf(def: { group: string; kind: string; plural: string }, name?: string): ObjectRef {
  return { group: def.group, kind: def.kind, plural: def.plural, name };
}

function qualified(ref: ObjectRef): string {
  return ref.group ? `${ref.plural}.${ref.group}` : ref.plural;
}

export class NotFoundError extends ApiError {
  readonly code = 404;
  readonly reason = "NotFound";
  constructor(ref: ObjectRef, message?: string) {
    super(message ?? `${qualified(ref)} "${ref.name}" not found`, { name: ref.name, group: ref.group, kind: ref.plural });
  }
}

export class AlreadyExistsError extends ApiError {
  readonly code = 409;
  readonly reason = "AlreadyExists";
  constructor(ref: ObjectRef) {
    super(`${qualified(ref)} "${ref.name}" already exists`, { name: ref.name, group: ref.group, kind: ref.plural });
  }
}

export class ConflictError extends ApiError {
  readonly code = 409;
  readonly reason = "Conflict";
  constructor(ref: ObjectRef, why: string) {
    super(`Operation cannot be fulfilled on ${qualified(ref)} "${ref.name}": ${why}`, {
      name: ref.name,
      group: ref.group,
      kind: ref.plural,
    });
  }
}

export class InvalidError extends ApiError {
  readonly code = 422;
  readonly reason = "Invalid";
  constructor(
    ref: ObjectRef,
    readonly fieldErrors: FieldError[],
  ) {
    const list = fieldErrors.map((e) => `${e.field}: ${e.message}`);
    const summary = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
    super(`${ref.kind}${ref.group ? "." + ref.group : ""} "${ref.name ?? ""}" is invalid: ${summary}`, {
      name: ref.name,
      group: ref.group,
      kind: ref.kind,
      causes: fieldErrors.map((e) => ({ reason: e.reason, message: e.message, field: e.field })),
    });
  }
}

export class BadRequestError extends ApiError {
  readonly code = 400;
  readonly reason = "BadRequest";
  constructor(message: string, causes?: { reason: string; message: string; field?: string }[]) {
    super(message, causes ? { causes } : undefined);
  }
}

export class GoneError extends ApiError {
  readonly code = 410;
  readonly reason = "Expired";
  constructor(message: string) {
    super(message);
  }
}

export class ForbiddenError extends ApiError {
  readonly code = 403;
  readonly reason = "Forbidden";
  constructor(message: string, ref?: ObjectRef) {
    super(message, ref ? { name: ref.name, group: ref.group, kind: ref.plural } : undefined);
  }
}

export class UnauthorizedError extends ApiError {
  readonly code = 401;
  readonly reason = "Unauthorized";
  constructor() {
    super("Unauthorized");
  }
}

export class MethodNotAllowedError extends ApiError {
  readonly code = 405;
  readonly reason = "MethodNotAllowed";
  constructor(message: string) {
    super(message);
  }
}

export class UnsupportedMediaTypeError extends ApiError {
  readonly code = 415;
  readonly reason = "UnsupportedMediaType";
  constructor(contentType: string) {
    super(`the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got ${contentType})`);
  }
}

export class TooManyRequestsError extends ApiError {
  readonly code = 429;
  readonly reason = "TooManyRequests";
  constructor(message: string, retryAfterSeconds: number) {
    super(message, { retryAfterSeconds });
  }
}

/** A read asked for a resource version the store has not reached (kube-apiserver answers the same after waiting). */
export class ResourceVersionTooLargeError extends ApiError {
  readonly code = 504;
  readonly reason = "Timeout";
  constructor(asked: number, current: number) {
    super(`Too large resource version: ${asked}, current: ${current}`, {
      causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
      retryAfterSeconds: 1,
    });
  }
}

export class InternalError extends ApiError {
  readonly code = 500;
  readonly reason = "InternalError";
  constructor(message: string) {
    super(message);
  }
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}

/** A server-side apply that would change fields other managers hold: 409, one FieldManagerConflict cause per field. */
export class ApplyConflictError extends ApiError {
  readonly code = 409;
  readonly reason = "Conflict";
  constructor(message: string, causes: readonly { message: string; field: string }[]) {
    super(message, { causes: causes.map((c) => ({ reason: "FieldManagerConflict", message: c.message, field: c.field })) });
  }
}
