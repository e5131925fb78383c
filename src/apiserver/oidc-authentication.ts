// OpenID Connect ID tokens as bearer tokens, as kube-apiserver's --oidc-* flags accept them: the token's
// issuer must be the one configured, its audience the client id, its signature one of the issuer's keys
// (its JWKS, found through the discovery document and fetched over HTTPS trusting the configured CA), and
// it must not have expired. The username and groups come from the configured claims, with their prefixes.
// A token of another issuer is left to the other authenticators; a bad one of this issuer proves nothing.
import { request } from "node:https";
import { createLocalJWKSet, decodeJwt, errors, jwtVerify, type JSONWebKeySet, type JWTPayload } from "jose";
import { bearerToken, type Authenticator, type Credentials } from "./authentication.ts";
import type { Identity } from "./request-context.ts";

export interface OidcIssuerSettings {
  issuerUrl: string;
  clientId: string;
  usernameClaim: string;
  usernamePrefix: string;
  groupsClaim?: string;
  groupsPrefix: string;
  /** PEM of the CA the issuer is served with (default: the system's). */
  caPem?: string;
}

/** How long fetched keys are used before they are fetched again. */
const KEYS_TTL_MS = 5 * 60_000;
/** An unknown key id fetches the keys again at most this often. */
const REFETCH_MIN_MS = 10_000;
const ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512"];

function getJson(url: string, caPem: string | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "GET", ca: caPem, timeout: 10_000, headers: { accept: "application/json" } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${url}: HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        } catch (e) {
          reject(e as Error);
        }
      });
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on("error", reject);
    req.end();
  });
}

export class OidcTokenAuthenticator implements Authenticator {
  private keys: { set: ReturnType<typeof createLocalJWKSet>; fetchedAt: number } | undefined;
  private fetching: Promise<void> | undefined;

  constructor(private readonly settings: OidcIssuerSettings) {}

  async authenticate(credentials: Credentials): Promise<Identity | undefined> {
    const token = bearerToken(credentials.authorization);
    if (!token || token.split(".").length !== 3) return undefined;
    let claims: JWTPayload;
    try {
      claims = decodeJwt(token);
    } catch {
      return undefined;
    }
    if (claims.iss !== this.settings.issuerUrl) return undefined;
    const payload = await this.verify(token).catch(() => undefined);
    return payload ? this.identityOf(payload) : undefined;
  }

  private async verify(token: string): Promise<JWTPayload> {
    const options = { issuer: this.settings.issuerUrl, audience: this.settings.clientId, algorithms: ALGORITHMS };
    const now = Date.now();
    if (!this.keys || now - this.keys.fetchedAt > KEYS_TTL_MS) await this.fetchKeys();
    try {
      return (await jwtVerify(token, this.keys!.set, options)).payload;
    } catch (error) {
      // The issuer may have new keys: fetched again (not too often), and tried once more.
      if (!(error instanceof errors.JWKSNoMatchingKey) || now - this.keys!.fetchedAt < REFETCH_MIN_MS) throw error;
      await this.fetchKeys();
      return (await jwtVerify(token, this.keys!.set, options)).payload;
    }
  }

  private fetchKeys(): Promise<void> {
    this.fetching ??= (async () => {
      try {
        const discovery = (await getJson(`${this.settings.issuerUrl}/.well-known/openid-configuration`, this.settings.caPem)) as { issuer?: string; jwks_uri?: string };
        if (discovery.issuer !== this.settings.issuerUrl || typeof discovery.jwks_uri !== "string") throw new Error(`the discovery document of ${this.settings.issuerUrl} names another issuer or no jwks_uri`);
        const jwks = (await getJson(discovery.jwks_uri, this.settings.caPem)) as JSONWebKeySet;
        this.keys = { set: createLocalJWKSet(jwks), fetchedAt: Date.now() };
      } finally {
        this.fetching = undefined;
      }
    })();
    return this.fetching;
  }

  private identityOf(payload: JWTPayload): Identity | undefined {
    const name = payload[this.settings.usernameClaim];
    if (typeof name !== "string" || name === "") return undefined;
    const claimed = this.settings.groupsClaim ? payload[this.settings.groupsClaim] : undefined;
    const groups = Array.isArray(claimed) ? claimed.filter((g): g is string => typeof g === "string") : typeof claimed === "string" ? [claimed] : [];
    return { user: `${this.settings.usernamePrefix}${name}`, groups: groups.map((g) => `${this.settings.groupsPrefix}${g}`) };
  }
}
