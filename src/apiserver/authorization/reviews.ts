// The reviews a user asks about itself, as kube-apiserver answers them: SelfSubjectReview (who am I:
// `kubectl auth whoami`), SelfSubjectAccessReview (may I: `kubectl auth can-i`) and
// SelfSubjectRulesReview (what may I in a namespace: `kubectl auth can-i --list`). Each is created and
// answered from the caller's identity and the server's authorizer, and never stored.
import { BadRequestError, InvalidError } from "../errors.ts";
import type { CreateOnlyResource } from "../routes.ts";
import type { Identity } from "../request-context.ts";
import type { Authorizer } from "./authorizer.ts";
import type { SubjectRulesReviewStatus } from "./rbac.ts";
import type { RequestAttributes } from "./types.ts";

const AUTHENTICATION = { group: "authentication.k8s.io", version: "v1" } as const;
const AUTHORIZATION = { group: "authorization.k8s.io", version: "v1" } as const;

type Json = Record<string, unknown>;

function objectOf(body: unknown, kind: string, apiVersion: string): Json {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new BadRequestError(`the request body must be a ${kind} object`);
  const object = body as Json;
  if ((object.kind !== undefined && object.kind !== kind) || (object.apiVersion !== undefined && object.apiVersion !== apiVersion)) {
    throw new BadRequestError(`the request body must be a ${apiVersion} ${kind} (got ${String(object.apiVersion)} ${String(object.kind)})`);
  }
  return object;
}

function specOf(object: Json): Json {
  const spec = object.spec ?? {};
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) throw new BadRequestError("spec must be an object");
  return spec as Json;
}

function stringField(object: Json, field: string, path: string, kind: string): string {
  const value = object[field];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") throw new InvalidError({ ...AUTHORIZATION, kind, plural: "" }, [{ field: `${path}.${field}`, reason: "FieldValueInvalid", message: "Invalid value: must be a string" }]);
  return value;
}

/** The answer's metadata: nothing is stored, so nothing of a stored object is set. */
const answerMetadata = (object: Json): Json => ({ ...((object.metadata as Json | undefined) ?? {}), creationTimestamp: null });

function userInfoOf(identity: Identity): Json {
  return {
    username: identity.user,
    ...(identity.uid ? { uid: identity.uid } : {}),
    groups: [...identity.groups],
    ...(identity.extra && Object.keys(identity.extra).length > 0 ? { extra: identity.extra } : {}),
  };
}

/** The attributes a SelfSubjectAccessReview asks about, for the caller. */
function accessAttributes(spec: Json, identity: Identity): RequestAttributes {
  const kind = "SelfSubjectAccessReview";
  const resource = spec.resourceAttributes as Json | undefined;
  const nonResource = spec.nonResourceAttributes as Json | undefined;
  if ((resource === undefined) === (nonResource === undefined)) {
    throw new InvalidError({ ...AUTHORIZATION, kind, plural: "" }, [
      { field: "spec.resourceAttributes", reason: "FieldValueInvalid", message: "Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified" },
    ]);
  }
  if (nonResource !== undefined) {
    return { identity, verb: stringField(nonResource, "verb", "spec.nonResourceAttributes", kind), path: stringField(nonResource, "path", "spec.nonResourceAttributes", kind) };
  }
  const at = (field: string) => stringField(resource!, field, "spec.resourceAttributes", kind);
  const subresource = at("subresource");
  const namespace = at("namespace");
  const name = at("name");
  return {
    identity,
    verb: at("verb"),
    resource: { group: at("group"), resource: at("resource"), ...(subresource ? { subresource } : {}), ...(namespace ? { namespace } : {}), ...(name ? { name } : {}) },
  };
}

export interface SelfReviewOptions {
  /** The server's authorizer, as its request path asks it. */
  authorizer: Authorizer;
  /** The rules bound to a user in a namespace ("" for cluster-wide ones only). */
  rulesReview: (identity: Identity, namespace: string) => SubjectRulesReviewStatus | Promise<SubjectRulesReviewStatus>;
}

/** SelfSubjectReview, SelfSubjectAccessReview and SelfSubjectRulesReview, for a server's API context. */
export function selfReviews(options: SelfReviewOptions): CreateOnlyResource[] {
  return [
    {
      ...AUTHENTICATION,
      kind: "SelfSubjectReview",
      plural: "selfsubjectreviews",
      singular: "selfsubjectreview",
      namespaced: false,
      handle: ({ body, context }) => {
        const apiVersion = `${AUTHENTICATION.group}/${AUTHENTICATION.version}`;
        const object = objectOf(body, "SelfSubjectReview", apiVersion);
        return { apiVersion, kind: "SelfSubjectReview", metadata: answerMetadata(object), status: { userInfo: userInfoOf(context.identity) } };
      },
    },
    {
      ...AUTHORIZATION,
      kind: "SelfSubjectAccessReview",
      plural: "selfsubjectaccessreviews",
      singular: "selfsubjectaccessreview",
      namespaced: false,
      handle: async ({ body, context }) => {
        const apiVersion = `${AUTHORIZATION.group}/${AUTHORIZATION.version}`;
        const object = objectOf(body, "SelfSubjectAccessReview", apiVersion);
        const spec = specOf(object);
        const decision = await options.authorizer.authorize(accessAttributes(spec, context.identity));
        const status = { allowed: decision.allowed, ...(decision.reason ? { reason: decision.reason } : {}) };
        return { apiVersion, kind: "SelfSubjectAccessReview", metadata: answerMetadata(object), spec, status };
      },
    },
    {
      ...AUTHORIZATION,
      kind: "SelfSubjectRulesReview",
      plural: "selfsubjectrulesreviews",
      singular: "selfsubjectrulesreview",
      namespaced: false,
      handle: async ({ body, context }) => {
        const apiVersion = `${AUTHORIZATION.group}/${AUTHORIZATION.version}`;
        const object = objectOf(body, "SelfSubjectRulesReview", apiVersion);
        const spec = specOf(object);
        const namespace = stringField(spec, "namespace", "spec", "SelfSubjectRulesReview");
        const status = await options.rulesReview(context.identity, namespace);
        return { apiVersion, kind: "SelfSubjectRulesReview", metadata: answerMetadata(object), spec, status };
      },
    },
  ];
}
