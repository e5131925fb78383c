// Authorization: whether an identity may do a verb on a resource (or a path outside the resources). The
// object service asks before every read and write, from HTTP and in process alike, and the routes ask
// for discovery and OpenAPI paths; the default allows everything. RBAC plugs in here.
import { ForbiddenError } from "./errors.ts";
import type { RequestContext, ResourceRequest } from "./request-context.ts";

/** A request for a path that is not a resource: discovery, OpenAPI, metrics. */
export interface NonResourceRequest extends Omit<RequestContext, "verb" | "resource"> {
  readonly verb: string;
  readonly path: string;
}

export type AuthorizationRequest = ResourceRequest | NonResourceRequest;

export type AuthorizationDecision = { allowed: true } | { allowed: false; reason?: string };

export interface Authorizer {
  authorize(request: AuthorizationRequest): AuthorizationDecision | Promise<AuthorizationDecision>;
}

const ALLOWED: AuthorizationDecision = { allowed: true };

/** Allows every request: Slipway has no RBAC enforcement yet. */
export const allowAll: Authorizer = { authorize: () => ALLOWED };

function isResourceRequest(request: AuthorizationRequest): request is ResourceRequest {
  return "resource" in request && request.resource !== undefined;
}

/** The Forbidden error of a refused request, worded as kube-apiserver words it. */
export function forbiddenError(request: AuthorizationRequest, reason?: string): ForbiddenError {
  const user = JSON.stringify(request.identity.user);
  const why = reason ? `: ${reason}` : "";
  if (!isResourceRequest(request)) {
    return new ForbiddenError(`forbidden: User ${user} cannot ${request.verb} path ${JSON.stringify(request.path)}${why}`);
  }
  const r = request.resource;
  const resource = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
  const scope = r.namespace ? `in the namespace ${JSON.stringify(r.namespace)}` : "at the cluster scope";
  const qualified = r.group ? `${r.resource}.${r.group}` : r.resource;
  return new ForbiddenError(
    `${qualified} ${JSON.stringify(r.name ?? "")} is forbidden: User ${user} cannot ${request.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(r.group)} ${scope}${why}`,
    { group: r.group, kind: "", plural: r.resource, name: r.name },
  );
}

/** Throws Forbidden unless the authorizer allows the request (synchronously when the authorizer answers so). */
export function authorize(authorizer: Authorizer, request: AuthorizationRequest): void | Promise<void> {
  const decision = authorizer.authorize(request);
  if (decision instanceof Promise) return decision.then((d) => enforce(request, d));
  enforce(request, decision);
}

function enforce(request: AuthorizationRequest, decision: AuthorizationDecision): void {
  if (!decision.allowed) throw forbiddenError(request, decision.reason);
}
