// ID tokens of Slipway's own realms as bearer tokens of the control-plane API: a token whose issuer is one
// of the realms served here is checked against that realm's key (read from its Secret, no HTTP round
// trip), must be for one of the realm's registered clients and unexpired; the user is
// `realm:<realm>:<username>`, its groups `realm:<realm>:<group>` (the realm in the name, so that two
// realms' users never meet). What they may do is for the control plane's RBAC to say: chain this
// authenticator only where an authorizer other than allow-all runs.
import { createLocalJWKSet, decodeJwt, jwtVerify, type JWK } from "jose";
import { bearerToken, type Authenticator, type Credentials } from "../apiserver/authentication.ts";
import type { Identity } from "../apiserver/request-context.ts";
import { isNotFound } from "../api/presence.ts";
import { oidcClientKind, type OIDCClientObject } from "../api/slipway/realm.ts";
import type { Client } from "../runtime/client.ts";
import { readRealmKeys } from "./keys.ts";
import { REALMS_PATH } from "./issuer.ts";

/** The prefix of the users and groups of realm `realm` on the control plane. */
export function realmIdentityPrefix(realm: string): string {
  return `realm:${realm}:`;
}

/** The public half of a private JWK. */
function publicJwk(key: JWK): JWK {
  const { kty, n, e, crv, x, y, kid, alg, use } = key;
  return Object.fromEntries(Object.entries({ kty, n, e, crv, x, y, kid, alg, use }).filter(([, v]) => v !== undefined)) as JWK;
}

export class RealmTokenAuthenticator implements Authenticator {
  constructor(
    private readonly client: Client,
    /** The control plane's URL (https://host:port). */
    private readonly baseUrl: () => string,
  ) {}

  async authenticate(credentials: Credentials): Promise<Identity | undefined> {
    const token = bearerToken(credentials.authorization);
    if (!token || token.split(".").length !== 3) return undefined;
    let issuer: unknown;
    let audience: unknown;
    try {
      ({ iss: issuer, aud: audience } = decodeJwt(token));
    } catch {
      return undefined;
    }
    const prefix = `${this.baseUrl()}${REALMS_PATH}`;
    if (typeof issuer !== "string" || !issuer.startsWith(prefix)) return undefined;
    const realm = issuer.slice(prefix.length);
    if (!/^[a-z0-9-]{1,63}$/.test(realm)) return undefined;
    const keys = await readRealmKeys(this.client, realm);
    if (!keys) return undefined;
    const clients = await this.registeredClients(realm, audience);
    if (clients.length === 0) return undefined;
    try {
      const { payload } = await jwtVerify(token, createLocalJWKSet({ keys: [publicJwk(keys.signing)] }), { issuer, audience: clients });
      const name = payload.preferred_username;
      if (typeof name !== "string" || name === "") return undefined;
      const groups = Array.isArray(payload.groups) ? payload.groups.filter((g): g is string => typeof g === "string") : [];
      const scoped = realmIdentityPrefix(realm);
      return { user: `${scoped}${name}`, groups: groups.map((g) => `${scoped}${g}`) };
    } catch {
      return undefined;
    }
  }

  /**
   * Those of the token's audiences that are clients registered in `realm`. A client id is
   * `<namespace>.<name>` of its OIDCClient (realms/issuer.ts), so each is one read by name, not a list of
   * every client on every request.
   */
  private async registeredClients(realm: string, audience: unknown): Promise<string[]> {
    const audiences = (Array.isArray(audience) ? audience : [audience]).filter((a): a is string => typeof a === "string");
    const registered: string[] = [];
    for (const id of audiences.slice(0, 8)) {
      const dot = id.indexOf(".");
      if (dot <= 0) continue;
      const found = await this.client
        .of<OIDCClientObject>(oidcClientKind)
        .get(id.slice(0, dot), id.slice(dot + 1))
        .catch((e: unknown) => {
          if (isNotFound(e)) return undefined;
          throw e;
        });
      if (found && found.spec.realm === realm && found.status?.clientId === id && !found.metadata.deletionTimestamp) registered.push(id);
    }
    return registered;
  }
}
