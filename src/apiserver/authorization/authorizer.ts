// The request path's authorizer: whether an identity may do a verb on a resource (or on a path outside
// the resources). The object service asks before every read and write, from HTTP and in process alike,
// and the routes ask for discovery, OpenAPI and metrics paths. The default allows everything; the
// RbacAuthorizer of this folder fits the interface, so enforcing RBAC is passing it to a server.
import { forbiddenError } from "./forbidden.ts";
import type { RequestAttributes } from "./types.ts";

export interface AuthorizationDecision {
  allowed: boolean;
  /** Why; a refusal's reason ends its Forbidden message. */
  reason?: string;
}

export interface Authorizer {
  authorize(request: RequestAttributes): AuthorizationDecision | Promise<AuthorizationDecision>;
}

const ALLOWED: AuthorizationDecision = { allowed: true };

/** Allows every request. */
export const allowAll: Authorizer = { authorize: () => ALLOWED };

/** Throws Forbidden unless the authorizer allows the request (synchronously when the authorizer answers so). */
export function authorize(authorizer: Authorizer, request: RequestAttributes): void | Promise<void> {
  const decision = authorizer.authorize(request);
  if (decision instanceof Promise) return decision.then((d) => enforce(request, d));
  enforce(request, decision);
}

function enforce(request: RequestAttributes, decision: AuthorizationDecision): void {
  if (!decision.allowed) throw forbiddenError(request, decision.reason);
}
