// The OpenID Connect issuers of the realms, served by `slipway up` at /realms/<name>: discovery, JWKS,
// the authorization code flow with PKCE (S256), refresh tokens and userinfo come from `oidc-provider`; this
// file gives it the realm's keys, its clients (OIDCClient objects), its accounts (RealmUser objects) and the
// sign-in page. Consent is implied: every client of a realm is one Slipway registered itself.
//
// Codes, sessions and refresh tokens live in this process's memory: a restart (or another replica) asks
// users to sign in again; keys are stored, so tokens issued before stay valid until they expire.
import type { IncomingMessage, ServerResponse } from "node:http";
import { verify } from "@node-rs/argon2";
import Provider, { type Adapter, type AdapterPayload, type Configuration, type KoaContextWithOIDC } from "oidc-provider";
import type { Logger } from "pino";
import { oidcClientKind, realmKind, realmUserKind, type OIDCClientObject, type RealmObject, type RealmUserObject } from "../api/slipway/realm.ts";
import type { Client } from "../runtime/client.ts";
import { readRealmKeys } from "./keys.ts";

export const REALMS_PATH = "/realms/";
const REALM_PATH = /^\/realms\/([a-z0-9-]{1,63})(\/[^?]*)?(\?.*)?$/;
const INTERACTION_PATH = /^\/interaction\/([A-Za-z0-9_-]+)(\/login)?$/;
/** A hash verified when no user has the name given, so both answers take as long. */
const NO_USER_HASH = "$argon2id$v=19$m=19456,t=2,p=1$75jQONl1i4Seusv7dX/Y6g$wwc8NQctL7E2jtSSS5AMXnRGsSbzIltZ8qPGASAAuhk";
const SCOPES = ["openid", "profile", "email", "groups", "offline_access"];
const MAX_FORM_BYTES = 8192;
/** Failed sign-ins of one user name (in one realm) within the window, after which it is refused a while. */
const MAX_FAILURES = 5;
const FAILURE_WINDOW_MS = 5 * 60_000;

/** Failed sign-ins by realm and user name, so that passwords cannot be guessed at speed. */
export class FailedSignIns {
  private readonly failures = new Map<string, number[]>();

  private recent(key: string, now: number): number[] {
    const times = (this.failures.get(key) ?? []).filter((t) => now - t < FAILURE_WINDOW_MS);
    if (times.length === 0) this.failures.delete(key);
    else this.failures.set(key, times);
    return times;
  }

  /** How long (ms) until the name may try again; 0 when it may now. */
  blockedFor(key: string, now = Date.now()): number {
    const times = this.recent(key, now);
    return times.length >= MAX_FAILURES ? times[0]! + FAILURE_WINDOW_MS - now : 0;
  }

  fail(key: string, now = Date.now()): void {
    if (this.failures.size > 10_000) for (const k of [...this.failures.keys()]) this.recent(k, now);
    this.failures.set(key, [...this.recent(key, now), now]);
  }

  succeed(key: string): void {
    this.failures.delete(key);
  }
}

/** The path of the realm's issuer under the control plane's URL. */
export function realmIssuerUrl(baseUrl: string, realm: string): string {
  return `${baseUrl}${REALMS_PATH}${realm}`;
}

/**
 * The client id of an OIDCClient: `<namespace>.<name>` (namespaces have no dots), the same on every
 * replica and for an OIDCClient made again after a deletion, so an API server told it keeps trusting it.
 */
export function oidcClientId(client: OIDCClientObject): string {
  return `${client.metadata.namespace}.${client.metadata.name}`;
}

/** Codes, sessions, grants and tokens, kept in memory until they expire. */
class MemoryAdapter implements Adapter {
  private readonly entries = new Map<string, { payload: AdapterPayload; expiresAt: number }>();

  private live(id: string): AdapterPayload | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.entries.delete(id);
      return undefined;
    }
    return entry.payload;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    // Old entries go when new ones come, so memory stays bounded by what is live.
    if (this.entries.size > 10_000) for (const key of [...this.entries.keys()]) this.live(key);
    this.entries.set(id, { payload, expiresAt: Date.now() + (expiresIn ? expiresIn * 1000 : 14 * 24 * 3600 * 1000) });
  }
  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.live(id);
  }
  async findByUserCode(code: string): Promise<AdapterPayload | undefined> {
    return [...this.entries.keys()].map((k) => this.live(k)).find((p) => p?.userCode === code);
  }
  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return [...this.entries.keys()].map((k) => this.live(k)).find((p) => p?.uid === uid);
  }
  async consume(id: string): Promise<void> {
    const payload = this.live(id);
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id: string): Promise<void> {
    this.entries.delete(id);
  }
  async revokeByGrantId(grantId: string): Promise<void> {
    for (const [id, entry] of this.entries) if (entry.payload.grantId === grantId) this.entries.delete(id);
  }
}

/** The clients of a realm: its OIDCClients that have a client id. */
class ClientAdapter extends MemoryAdapter {
  constructor(
    private readonly client: Client,
    private readonly realm: string,
  ) {
    super();
  }

  override async find(id: string): Promise<AdapterPayload | undefined> {
    const clients = await this.client.of<OIDCClientObject>(oidcClientKind).list();
    const found = clients.items.find((c) => c.spec.realm === this.realm && c.status?.clientId === id && !c.metadata.deletionTimestamp);
    if (!found) return undefined;
    return {
      client_id: id,
      client_name: `${found.metadata.namespace}/${found.metadata.name}`,
      application_type: "native",
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      redirect_uris: ["http://127.0.0.1/callback", "http://localhost/callback", "http://localhost:8000", ...(found.spec.redirectUris ?? [])],
    };
  }
}

async function findUser(client: Client, realm: string, username: string): Promise<RealmUserObject | undefined> {
  const users = await client.of<RealmUserObject>(realmUserKind).list();
  return users.items.find((u) => u.spec.realm === realm && (u.spec.username ?? u.metadata.name) === username && !u.metadata.deletionTimestamp);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function loginPage(realm: RealmObject, action: string, error?: string): string {
  const title = escapeHtml(realm.spec?.displayName ?? realm.metadata.name!);
  return `<!doctype html><html><head><meta charset="utf-8"><title>Sign in to ${title}</title></head><body>
<h1>Sign in to ${title}</h1>${error ? `<p role="alert">${escapeHtml(error)}</p>` : ""}
<form method="post" action="${escapeHtml(action)}">
<label>Username <input name="username" autocomplete="username" required autofocus></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button></form></body></html>`;
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new Error("form too large");
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

function send(res: ServerResponse, code: number, type: string, body: string): void {
  res.writeHead(code, {
    "Content-Type": type,
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; form-action 'self'; frame-ancestors 'none'",
  });
  res.end(body);
}

interface Issuer {
  provider: Provider;
  kid: string;
  callback: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
}

export interface RealmIssuersOptions {
  client: Client;
  /** The control plane's URL (https://host:port). */
  baseUrl: () => string;
  log: Logger;
}

export class RealmIssuers {
  private readonly issuers = new Map<string, Issuer>();
  private readonly failed = new FailedSignIns();

  constructor(private readonly options: RealmIssuersOptions) {}

  /** Whether the path is under /realms/ (those requests are this class's). */
  static serves(path: string): boolean {
    return path.startsWith(REALMS_PATH);
  }

  /** Answers a request under /realms/<name>. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const match = REALM_PATH.exec(req.url ?? "");
    const notFound = () => send(res, 404, "application/json", JSON.stringify({ error: "not_found", error_description: "no such realm" }));
    if (!match) return notFound();
    const name = match[1]!;
    const realm = await this.options.client.of<RealmObject>(realmKind).tryGet(undefined, name);
    if (!realm || realm.metadata.deletionTimestamp) return notFound();
    const issuer = await this.issuerOf(realm);
    if (!issuer) return send(res, 503, "application/json", JSON.stringify({ error: "temporarily_unavailable", error_description: "the realm's keys are being made" }));
    const rest = match[2] ?? "/";
    const interaction = INTERACTION_PATH.exec(rest);
    if (interaction) return this.interaction(realm, issuer.provider, req, res, interaction[2] !== undefined);
    // Mounted as express mounts it: the provider builds its URLs from the part of originalUrl it lacks.
    const mounted = req as IncomingMessage & { originalUrl?: string };
    mounted.originalUrl = req.url;
    req.url = `${rest}${match[3] ?? ""}`;
    await issuer.callback(req, res);
  }

  private async issuerOf(realm: RealmObject): Promise<Issuer | undefined> {
    const name = realm.metadata.name!;
    const keys = await readRealmKeys(this.options.client, name);
    if (!keys) return undefined;
    const existing = this.issuers.get(name);
    if (existing && existing.kid === keys.signing.kid) return existing;
    const provider = new Provider(realmIssuerUrl(this.options.baseUrl(), name), this.configuration(name, keys.signing, keys.cookies));
    provider.on("server_error", (_ctx: unknown, error: Error) => this.options.log.error({ err: error.message, realm: name }, "realm issuer error"));
    const issuer = { provider, kid: keys.signing.kid!, callback: provider.callback() as Issuer["callback"] };
    this.issuers.set(name, issuer);
    return issuer;
  }

  private configuration(realm: string, signing: object, cookies: string[]): Configuration {
    const client = this.options.client;
    const adapters = new Map<string, Adapter>();
    return {
      adapter: (model: string) => {
        let adapter = adapters.get(model);
        if (!adapter) adapters.set(model, (adapter = model === "Client" ? new ClientAdapter(client, realm) : new MemoryAdapter()));
        return adapter;
      },
      jwks: { keys: [signing as never] },
      cookies: { keys: cookies },
      scopes: SCOPES,
      claims: { openid: ["sub"], profile: ["preferred_username", "name"], email: ["email"], groups: ["groups"] },
      // ID tokens carry the claims of the scopes asked for (kube-apiserver reads groups from the ID token).
      conformIdTokenClaims: false,
      responseTypes: ["code"],
      features: { devInteractions: { enabled: false }, userinfo: { enabled: true }, revocation: { enabled: true } },
      pkce: { required: () => true, methods: ["S256"] },
      ttl: { AccessToken: 3600, IdToken: 3600, AuthorizationCode: 60, Interaction: 600, Session: 8 * 3600, Grant: 14 * 24 * 3600, RefreshToken: 14 * 24 * 3600 },
      issueRefreshToken: async (_ctx, c) => c.grantTypeAllowed("refresh_token"),
      interactions: { url: (_ctx, interaction) => `${REALMS_PATH}${realm}/interaction/${interaction.uid}` },
      loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
        const oidc = ctx.oidc;
        const grantId = oidc.result?.consent?.grantId ?? oidc.session!.grantIdFor(oidc.client!.clientId);
        if (grantId) {
          const found = await oidc.provider.Grant.find(grantId);
          if (found) return found;
        }
        const grant = new oidc.provider.Grant({ clientId: oidc.client!.clientId, accountId: oidc.session!.accountId! });
        grant.addOIDCScope(SCOPES.join(" "));
        await grant.save();
        return grant;
      },
      findAccount: async (_ctx, sub) => {
        const user = await findUser(client, realm, sub);
        if (!user) return undefined;
        return {
          accountId: sub,
          claims: async () => ({
            sub,
            preferred_username: sub,
            name: sub,
            ...(user.spec.email ? { email: user.spec.email } : {}),
            groups: [...(user.spec.groups ?? [])],
          }),
        };
      },
      renderError: async (ctx, out) => {
        ctx.type = "json";
        ctx.body = out;
      },
    };
  }

  /** The sign-in page of an interaction (GET) and its answer (POST …/login). */
  private async interaction(realm: RealmObject, provider: Provider, req: IncomingMessage, res: ServerResponse, submitted: boolean): Promise<void> {
    let details;
    try {
      details = await provider.interactionDetails(req, res);
    } catch {
      return send(res, 400, "text/html; charset=utf-8", "<!doctype html><p>This sign-in has expired or was started elsewhere: start it again from your client.</p>");
    }
    if (details.prompt.name === "consent" && details.session?.accountId) {
      // Every client of a realm is one Slipway registered for a cluster of the realm: consent is implied.
      const grant = details.grantId ? await provider.Grant.find(details.grantId) : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id as string });
      if (!grant) return send(res, 400, "text/html; charset=utf-8", "<!doctype html><p>This sign-in has expired: start it again from your client.</p>");
      const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(" "));
      const grantId = await grant.save();
      return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    }
    const action = `${REALMS_PATH}${realm.metadata.name}/interaction/${details.uid}/login`;
    if (!submitted || req.method !== "POST") return send(res, 200, "text/html; charset=utf-8", loginPage(realm, action));
    const form = await readForm(req);
    const username = form.get("username") ?? "";
    const password = form.get("password") ?? "";
    const attempt = `${realm.metadata.name}/${username}`;
    const wait = this.failed.blockedFor(attempt);
    if (wait > 0) {
      res.setHeader("Retry-After", String(Math.ceil(wait / 1000)));
      return send(res, 429, "text/html; charset=utf-8", loginPage(realm, action, "Too many failed sign-ins: try again later."));
    }
    const user = username ? await findUser(this.options.client, realm.metadata.name!, username) : undefined;
    const hashed = user?.spec.passwordHash;
    const ok = await verify(hashed ?? NO_USER_HASH, password).catch(() => false);
    if (!user || !hashed || !ok) {
      this.failed.fail(attempt);
      this.options.log.info({ realm: realm.metadata.name }, "a sign-in to a realm was refused");
      return send(res, 401, "text/html; charset=utf-8", loginPage(realm, action, "Invalid username or password."));
    }
    this.failed.succeed(attempt);
    await provider.interactionFinished(req, res, { login: { accountId: user.spec.username ?? user.metadata.name! } }, { mergeWithLastSubmission: false });
  }
}
