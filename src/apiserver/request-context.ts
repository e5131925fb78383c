// Who is asking, and for what: the context every call of the object service carries, whether it comes
// from an HTTP request (the authenticated identity, ?fieldManager, ?dryRun) or from a caller in the
// process (a controller's own service-account identity, its name as field manager). The authorizer and
// the admission plugins see it.
import { GROUP_AUTHENTICATED, GROUP_MASTERS, SERVICE_ACCOUNT_USER_PREFIX, type ResourceAttributes, type UserInfo } from "./authorization/types.ts";

/** An authenticated user, as kube-apiserver's user.Info. */
export interface Identity extends UserInfo {
  groups: string[];
  uid?: string;
  extra?: Record<string, string[]>;
}

export type Verb = "get" | "list" | "watch" | "create" | "update" | "patch" | "delete" | "deletecollection";

/** The resource a request addresses, with the version it was addressed by. */
export interface RequestResource extends ResourceAttributes {
  version: string;
}

export interface RequestContext {
  readonly identity: Identity;
  /** Who makes the change, for the record a write leaves (kubectl, cluster-controller …). */
  readonly fieldManager?: string;
  /** Admit and validate, but write nothing (?dryRun=All). */
  readonly dryRun?: boolean;
  /** What is being done: the object service fills these in for the call it serves. */
  readonly verb?: Verb;
  readonly resource?: RequestResource;
}

/** A request context completed with what it does, as the authorizer and admission plugins see it. */
export interface ResourceRequest extends RequestContext {
  readonly verb: Verb;
  readonly resource: RequestResource;
}

/** The API server acting on its own behalf (defaults, garbage collection, bookkeeping), as kube-apiserver's loopback client. */
export const SYSTEM_IDENTITY: Identity = { user: "system:apiserver", groups: [GROUP_MASTERS, GROUP_AUTHENTICATED] };

/** The context of callers that do not say who they are. */
export const SYSTEM_CONTEXT: RequestContext = { identity: SYSTEM_IDENTITY };

/** A service account's identity, named as Kubernetes names it. */
export function serviceAccountIdentity(namespace: string, name: string): Identity {
  return {
    user: `${SERVICE_ACCOUNT_USER_PREFIX}${namespace}:${name}`,
    groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, GROUP_AUTHENTICATED],
  };
}

const MAX_FIELD_MANAGER = 128;

/** The field manager of an HTTP request: ?fieldManager, else the client's name from its User-Agent (as kube-apiserver). */
export function fieldManagerOf(query: string | undefined, userAgent: string | undefined): string | undefined {
  if (query !== undefined && query !== "") return query;
  const name = userAgent?.split("/")[0]?.trim();
  return name ? name.slice(0, MAX_FIELD_MANAGER) : undefined;
}

/** Why a field manager is refused, if it is. */
export function fieldManagerError(fieldManager: string | undefined): string | undefined {
  if (fieldManager === undefined) return undefined;
  if (fieldManager.length > MAX_FIELD_MANAGER) return `fieldManager: Too long: may not be more than ${MAX_FIELD_MANAGER} bytes`;
  if (!/^[\x20-\x7e]*$/.test(fieldManager)) return "fieldManager: Invalid value: must only contain printable characters";
  return undefined;
}
