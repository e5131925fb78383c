// Who may do what on the control plane's API: the authenticator chain (the admin token of the data
// directory's kubeconfig — a break-glass member of system:masters —, the console's session tokens,
// ServiceAccount tokens, client certificates of Slipway's CA), Kubernetes RBAC over the control plane's
// own Role/ClusterRole/RoleBinding/ClusterRoleBinding objects, the default roles installed at start,
// the role Slipway's controllers act with, the cluster templates every signed-in user may read, and the self reviews `kubectl auth whoami` and
// `kubectl auth can-i` ask.
import type { KubeObject } from "../api/meta.ts";
import type { KindDefinition, Registry } from "../api/registry.ts";
import { AuthenticatorChain, bearerToken, ClientCertificates, StaticTokenAuthenticator, type Authenticator, type Credentials } from "../apiserver/authentication.ts";
import { authorize } from "../apiserver/authorization/authorizer.ts";
import { defaultClusterRoleBindings, defaultClusterRoles } from "../apiserver/authorization/default-roles.ts";
import { selfReviews } from "../apiserver/authorization/reviews.ts";
import { ServedRbac } from "../apiserver/authorization/served.ts";
import { GROUP_AUTHENTICATED, GROUP_MASTERS, RBAC_GROUP, type PolicyRule } from "../apiserver/authorization/types.ts";
import type { ObjectService } from "../apiserver/objects.ts";
import type { Identity } from "../apiserver/request-context.ts";
import type { CreateOnlyResource } from "../apiserver/routes.ts";
import { ServiceAccountTokens } from "../apiserver/serviceaccount-tokens.ts";
import { CONTROLLERS_NAMESPACE } from "../runtime/client.ts";
import type { ControlPlaneCredentials } from "./credentials.ts";
import type { SessionTokens } from "./login.ts";

/** The admin of the data directory's kubeconfig and of the console's sign-in links. */
export const ADMIN_IDENTITY: Identity = { user: "admin", groups: [GROUP_MASTERS] };

/** The `iss` of the control plane's ServiceAccount tokens, and the audience its API accepts. */
export const TOKEN_ISSUER = "https://slipway.local";
export const API_AUDIENCE = "slipway";

/** The console's path that makes sign-in links. */
const SIGN_IN_LINKS = "/login/codes";

/** The ClusterRole Slipway's controllers act with (bound to every service account of slipway-system). */
export const CONTROLLERS_ROLE = "slipway:controllers";

/** What the controllers touch: Slipway's kinds, and the Secrets, ConfigMaps and Events that go with them. */
const CONTROLLER_RULES: PolicyRule[] = [
  { apiGroups: ["slipway.dev"], resources: ["*"], verbs: ["*"] },
  { apiGroups: [""], resources: ["secrets", "configmaps", "events"], verbs: ["*"] },
  { apiGroups: [""], resources: ["namespaces"], verbs: ["get", "list", "watch"] },
];

/** The catalogue every namespace's clusters are made from: anyone signed in may read it. */
export const CATALOGUE_READER_ROLE = "slipway:catalogue-reader";
const CATALOGUE_RULES: PolicyRule[] = [{ apiGroups: ["slipway.dev"], resources: ["clustertemplates"], verbs: ["get", "list", "watch"] }];

/** Asking for a plan is creating nothing: whoever may edit clusters may ask. */
const PLAN_RULE: PolicyRule = { apiGroups: ["slipway.dev"], resources: ["clusters/plan"], verbs: ["create"] };

/** The ClusterRoles and ClusterRoleBindings the control plane keeps (Kubernetes' defaults and its controllers'). */
export function controlPlaneRbacObjects(): KubeObject[] {
  const roles = defaultClusterRoles().map((role) => (role.metadata.name === "edit" || role.metadata.name === "admin" ? { ...role, rules: [...role.rules, PLAN_RULE] } : role));
  const labels = { "kubernetes.io/bootstrapping": "rbac-defaults" };
  const annotations = { "rbac.authorization.kubernetes.io/autoupdate": "true" };
  const boundToGroup = (name: string, rules: PolicyRule[], group: string) => [
    { apiVersion: `${RBAC_GROUP}/v1`, kind: "ClusterRole", metadata: { name, labels, annotations }, rules },
    {
      apiVersion: `${RBAC_GROUP}/v1`,
      kind: "ClusterRoleBinding",
      metadata: { name, labels, annotations },
      roleRef: { apiGroup: RBAC_GROUP, kind: "ClusterRole", name },
      subjects: [{ kind: "Group", apiGroup: RBAC_GROUP, name: group }],
    },
  ];
  return [
    ...roles,
    ...defaultClusterRoleBindings(),
    ...boundToGroup(CONTROLLERS_ROLE, CONTROLLER_RULES, `system:serviceaccounts:${CONTROLLERS_NAMESPACE}`),
    ...boundToGroup(CATALOGUE_READER_ROLE, CATALOGUE_RULES, GROUP_AUTHENTICATED),
  ] as unknown as KubeObject[];
}

const DECIDING_FIELDS = ["rules", "roleRef", "subjects"] as const;

/**
 * Creates the default roles and bindings that are missing and puts back those whose rules or subjects
 * were changed, unless their `rbac.authorization.kubernetes.io/autoupdate` annotation says "false" (as
 * kube-apiserver reconciles its bootstrap policy at start). Idempotent; replicas starting together may race, and
 * the loser's write is a conflict it can ignore.
 */
export async function ensureDefaultRbac(objects: ObjectService): Promise<void> {
  for (const wanted of controlPlaneRbacObjects()) {
    const def = objects.registry.byKind(wanted.apiVersion, wanted.kind) as KindDefinition;
    const name = wanted.metadata.name!;
    const current = await objects.tryGet(def, undefined, name);
    try {
      if (!current) {
        await objects.create(def, undefined, wanted);
        continue;
      }
      if (current.metadata.annotations?.["rbac.authorization.kubernetes.io/autoupdate"] === "false") continue;
      if (DECIDING_FIELDS.every((f) => JSON.stringify(current[f]) === JSON.stringify(wanted[f]))) continue;
      const next: KubeObject = { ...current };
      for (const f of DECIDING_FIELDS) if (wanted[f] !== undefined) next[f] = wanted[f];
      await objects.update(def, undefined, name, next);
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (code !== 409) throw e;
    }
  }
}

export interface ControlPlaneAccess {
  rbac: ServedRbac;
  tokens: ServiceAccountTokens;
  authenticator: Authenticator;
  createOnly: CreateOnlyResource[];
  /**
   * Who may have a console sign-in link made for them (POST /login/codes): an authenticated caller RBAC
   * allows `post` on that path — members of system:masters unless a ClusterRole grants it. A console
   * session lasts 12 hours and does not follow its credential: a short-lived ServiceAccount token must
   * not become one by default.
   */
  signInLinkFor(credentials: Credentials): Promise<Identity | undefined>;
}

export interface ControlPlaneAccessOptions {
  registry: Registry;
  credentials: ControlPlaneCredentials;
  sessions: SessionTokens;
  /**
   * Authenticators tried after Slipway's own credentials (ID tokens of an OpenID Connect issuer go
   * here): the chain stays the one place that says who a request comes from.
   */
  more?: readonly Authenticator[];
}

/** RBAC to pass to the object service (authorizer, admission, hook); attach it once the service exists. */
export function controlPlaneRbac(): ServedRbac {
  return new ServedRbac({ watch: true });
}

/** The authenticator chain, the token issuer and the self reviews, over the object service RBAC guards. */
export function controlPlaneAccess(objects: ObjectService, rbac: ServedRbac, options: ControlPlaneAccessOptions): ControlPlaneAccess {
  const serviceAccounts = options.registry.byKind("v1", "ServiceAccount");
  if (!serviceAccounts) throw new Error("the control plane's registry has no ServiceAccount kind");
  const tokens = new ServiceAccountTokens({ key: options.credentials.serviceAccountKey, issuer: TOKEN_ISSUER, audiences: [API_AUDIENCE], objects, kind: serviceAccounts });
  const sessions = options.sessions;
  const authenticator = new AuthenticatorChain([
    new StaticTokenAuthenticator([[options.credentials.adminToken, ADMIN_IDENTITY]]),
    { authenticate: (credentials) => sessions.verify(bearerToken(credentials.authorization) ?? "") },
    tokens.authenticator,
    new ClientCertificates().issuedBy("slipway", options.credentials.ca.certPem),
    ...(options.more ?? []),
  ]);
  const createOnly = selfReviews({ authorizer: rbac.authorizer, rulesReview: (identity, namespace) => rbac.rulesReview(identity, namespace) });
  const signInLinkFor = async (credentials: Credentials) => {
    const identity = await authenticator.authenticate(credentials);
    if (identity) await authorize(rbac.authorizer, { identity, verb: "post", path: SIGN_IN_LINKS });
    return identity;
  };
  return { rbac, tokens, authenticator, createOnly, signInLinkFor };
}
