// ServiceAccount tokens, as kube-apiserver issues and checks them: the TokenRequest subresource
// (`kubectl create token NAME`) answers a JWT signed with the server's service-account key, for the
// audiences asked (the API's own by default) and until an expiry (1 hour by default, 10 minutes at
// least); the authenticator accepts a bearer token only when its signature, issuer, audience and expiry
// hold and the account it names still exists with the same uid — so deleting an account revokes its
// tokens. The identity is system:serviceaccount:NS:NAME in system:serviceaccounts and
// system:serviceaccounts:NS.
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, type KeyObject } from "node:crypto";
import { jwtVerify, SignJWT } from "jose";
import type { KubeObject } from "../api/meta.ts";
import type { KindDefinition } from "../api/registry.ts";
import { bearerToken, type Authenticator } from "./authentication.ts";
import { BadRequestError, InvalidError } from "./errors.ts";
import { nowTimestamp, type ObjectService } from "./objects.ts";
import { serviceAccountIdentity, type Identity } from "./request-context.ts";
import type { SubresourceAction } from "./routes.ts";

/** The key pair tokens are signed with (PEM: PKCS#8 private, SPKI public), kept with the server's credentials. */
export interface ServiceAccountKeyPem {
  privateKeyPem: string;
  publicKeyPem: string;
}

export function createServiceAccountKey(): ServiceAccountKeyPem {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return {
    privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
  };
}

const TOKEN_REQUEST = { group: "authentication.k8s.io", version: "v1", kind: "TokenRequest", plural: "serviceaccounts/token" } as const;
const API_VERSION = `${TOKEN_REQUEST.group}/${TOKEN_REQUEST.version}`;
export const DEFAULT_TOKEN_SECONDS = 3600;
/** kube-apiserver refuses shorter tokens. */
export const MIN_TOKEN_SECONDS = 600;
const MAX_TOKEN_SECONDS = 2 ** 32;
const ALGORITHM = "ES256";
/** The claim Kubernetes keeps the account's namespace, name and uid under. */
const KUBERNETES_CLAIM = "kubernetes.io";

interface KubernetesClaim {
  namespace?: unknown;
  serviceaccount?: { name?: unknown; uid?: unknown };
}

export interface ServiceAccountTokensOptions {
  key: ServiceAccountKeyPem;
  /** The tokens' `iss`. */
  issuer: string;
  /** The audiences the API accepts; the first is a token's audience unless the request names others. */
  audiences: readonly string[];
  objects: ObjectService;
  /** The ServiceAccount kind of the server's registry. */
  kind: KindDefinition;
  now?: () => number;
}

/** The spec of a TokenRequest body for the account `name`, checked (kubectl sends nulls for what it leaves out). */
function tokenRequestSpec(name: string, body: unknown, defaultAudiences: readonly string[]): { audiences: string[]; expirationSeconds: number } {
  const invalid = (field: string, message: string) =>
    new InvalidError({ group: TOKEN_REQUEST.group, kind: TOKEN_REQUEST.kind, plural: TOKEN_REQUEST.plural, name }, [{ field, reason: "FieldValueInvalid", message }]);
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new BadRequestError("the request body must be a TokenRequest object");
  const object = body as { kind?: unknown; spec?: unknown };
  if (object.kind !== undefined && object.kind !== TOKEN_REQUEST.kind) throw new BadRequestError(`the request body must be a ${API_VERSION} TokenRequest (got kind ${String(object.kind)})`);
  const spec = (object.spec ?? {}) as { audiences?: unknown; expirationSeconds?: unknown; boundObjectRef?: unknown };
  if (typeof spec !== "object" || Array.isArray(spec)) throw invalid("spec", "Invalid value: must be an object");
  if (spec.boundObjectRef !== undefined && spec.boundObjectRef !== null) throw invalid("spec.boundObjectRef", "Unsupported value: tokens bound to objects are not issued here");
  let audiences = [...defaultAudiences];
  if (spec.audiences !== undefined && spec.audiences !== null) {
    if (!Array.isArray(spec.audiences) || spec.audiences.some((a) => typeof a !== "string" || a === "")) throw invalid("spec.audiences", "Invalid value: must be a list of non-empty strings");
    if (spec.audiences.length > 0) audiences = spec.audiences as string[];
  }
  let expirationSeconds = DEFAULT_TOKEN_SECONDS;
  if (spec.expirationSeconds !== undefined && spec.expirationSeconds !== null) {
    const seconds = spec.expirationSeconds;
    if (typeof seconds !== "number" || !Number.isInteger(seconds)) throw invalid("spec.expirationSeconds", "Invalid value: must be an integer number of seconds");
    if (seconds < MIN_TOKEN_SECONDS) throw invalid("spec.expirationSeconds", `Invalid value: ${seconds}: may not specify a duration less than 10 minutes`);
    if (seconds > MAX_TOKEN_SECONDS) throw invalid("spec.expirationSeconds", `Invalid value: ${seconds}: may not specify a duration larger than 2^32 seconds`);
    expirationSeconds = seconds;
  }
  return { audiences, expirationSeconds };
}

export class ServiceAccountTokens {
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  private readonly now: () => number;

  constructor(private readonly options: ServiceAccountTokensOptions) {
    this.privateKey = createPrivateKey(options.key.privateKeyPem);
    this.publicKey = createPublicKey(options.key.publicKeyPem);
    this.now = options.now ?? Date.now;
  }

  /** A signed token for the account, valid `expirationSeconds` from now for `audiences`. */
  async issue(account: KubeObject, options: { audiences: readonly string[]; expirationSeconds: number }): Promise<{ token: string; expiresAt: Date }> {
    const namespace = account.metadata.namespace ?? "";
    const name = account.metadata.name ?? "";
    const issuedAt = Math.floor(this.now() / 1000);
    const expiresAt = issuedAt + options.expirationSeconds;
    const token = await new SignJWT({ [KUBERNETES_CLAIM]: { namespace, serviceaccount: { name, uid: account.metadata.uid } } })
      .setProtectedHeader({ alg: ALGORITHM, typ: "JWT" })
      .setIssuer(this.options.issuer)
      .setSubject(serviceAccountIdentity(namespace, name).user)
      .setAudience([...options.audiences])
      .setIssuedAt(issuedAt)
      .setNotBefore(issuedAt)
      .setExpirationTime(expiresAt)
      .setJti(randomUUID())
      .sign(this.privateKey);
    return { token, expiresAt: new Date(expiresAt * 1000) };
  }

  /** The TokenRequest subresource of ServiceAccounts (answers 201, as kube-apiserver). */
  action(): SubresourceAction {
    return {
      path: `/${TOKEN_REQUEST.plural}`,
      discovery: { group: TOKEN_REQUEST.group, version: TOKEN_REQUEST.version, kind: TOKEN_REQUEST.kind },
      code: 201,
      handle: async ({ namespace, name, body }) => {
        const spec = tokenRequestSpec(name, body, this.options.audiences);
        // Read as the server: asking for a token is what the caller was authorized for.
        const account = await this.options.objects.get(this.options.kind, namespace, name);
        const { token, expiresAt } = await this.issue(account, spec);
        return {
          apiVersion: API_VERSION,
          kind: TOKEN_REQUEST.kind,
          metadata: { name, namespace, creationTimestamp: nowTimestamp(new Date(this.now())) },
          spec: { audiences: spec.audiences, expirationSeconds: spec.expirationSeconds, boundObjectRef: null },
          status: { token, expirationTimestamp: nowTimestamp(expiresAt) },
        };
      },
    };
  }

  /** Accepts a bearer token this server signed, still valid, for one of the API's audiences, of an account that still exists. */
  readonly authenticator: Authenticator = {
    authenticate: async (credentials): Promise<Identity | undefined> => {
      const token = bearerToken(credentials.authorization);
      // A JWT has three parts; anything else is some other authenticator's.
      if (!token || token.split(".").length !== 3) return undefined;
      let claims: Record<string, unknown>;
      try {
        ({ payload: claims } = await jwtVerify(token, this.publicKey, {
          issuer: this.options.issuer,
          audience: [...this.options.audiences],
          algorithms: [ALGORITHM],
          currentDate: new Date(this.now()),
        }));
      } catch {
        return undefined;
      }
      const bound = claims[KUBERNETES_CLAIM] as KubernetesClaim | undefined;
      const namespace = bound?.namespace;
      const name = bound?.serviceaccount?.name;
      const uid = bound?.serviceaccount?.uid;
      if (typeof namespace !== "string" || typeof name !== "string" || typeof uid !== "string") return undefined;
      const identity = serviceAccountIdentity(namespace, name);
      if (claims.sub !== identity.user) return undefined;
      const account = await this.options.objects.tryGet(this.options.kind, namespace, name);
      if (!account || account.metadata.uid !== uid || account.metadata.deletionTimestamp) return undefined;
      const extra = typeof claims.jti === "string" ? { "authentication.kubernetes.io/credential-id": [`JTI=${claims.jti}`] } : undefined;
      return { ...identity, uid, ...(extra ? { extra } : {}) };
    },
  };
}
