// `slipway login REALM [--cluster NAME]`: signs in to a realm with the authorization code flow (PKCE) as
// the cluster's OIDC client, and writes a kubeconfig whose user holds the ID and refresh tokens (kubectl's
// oidc auth provider refreshes them as they expire; `slipway login` again refreshes them too, or asks for
// the password once the refresh token is no longer good). In a browser: it prints the sign-in URL and
// waits for the redirect on a loopback port. Without one (scripts, tests): --username and
// --password-stdin fill in the realm's sign-in form over HTTP.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { request } from "node:https";
import { dirname } from "node:path";
import type { Command } from "commander";
import { parse, stringify } from "yaml";
import type { ClusterObject, SecretObject } from "../api/kinds.ts";
import type { OIDCClientObject } from "../api/slipway/realm.ts";
import { names } from "../api/slipway/names.ts";
import { mergeKubeconfig } from "../bootstrap/kubeconfig.ts";
import { KubeNotFoundError } from "../kubeclient/index.ts";
import { getCluster } from "./clusters.ts";
import { withSession, type Session } from "./connect.ts";
import { CliError } from "./errors.ts";
import { UsageError } from "./usage.ts";

const API_VERSION = "slipway.dev/v1alpha1";
const SCOPES = "openid profile email groups";
const REDIRECT_PATH = "/callback";

interface LoginFlags {
  cluster?: string;
  username?: string;
  passwordStdin?: boolean;
  output?: string;
}

interface Tokens {
  id_token: string;
  refresh_token?: string;
}

/** The OIDC client of a cluster, once registered. */
export interface ClusterClient {
  cluster: ClusterObject;
  clientId: string;
  issuerUrl: string;
  issuerCa: string;
}

/** The OIDCClient of the cluster (named after it), or a CliError saying why there is none usable. */
export async function clusterClient(session: Session, clusterName: string, realm?: string): Promise<ClusterClient> {
  const cluster = await getCluster(session, clusterName);
  if (!cluster.spec.realmName) throw new CliError(`cluster "${clusterName}" names no realm (spec.realmName): its API server trusts no ID tokens`);
  if (realm !== undefined && cluster.spec.realmName !== realm) throw new CliError(`cluster "${clusterName}" trusts realm "${cluster.spec.realmName}", not "${realm}"`);
  const path = await session.client.resourcePath({ apiVersion: API_VERSION, kind: "OIDCClient", namespace: session.namespace, name: clusterName });
  let client: OIDCClientObject | undefined;
  try {
    client = await session.client.get<OIDCClientObject>(path);
  } catch (error) {
    if (!(error instanceof KubeNotFoundError)) throw error;
  }
  const status = client?.status;
  if (!status?.clientId || !status.issuerUrl || !status.issuerCertificateAuthority) {
    throw new CliError(`cluster "${clusterName}" has no OIDC client registered in realm "${cluster.spec.realmName}" yet${status?.message ? `: ${status.message}` : ""}`);
  }
  return { cluster, clientId: status.clientId, issuerUrl: status.issuerUrl, issuerCa: status.issuerCertificateAuthority };
}

/** The one cluster of the namespace that names the realm, when --cluster is left out. */
async function onlyClusterOf(session: Session, realm: string): Promise<string> {
  const path = await session.client.resourcePath({ apiVersion: API_VERSION, kind: "Cluster", namespace: session.namespace });
  const clusters = (await session.client.listAll<ClusterObject>(path)).filter((c) => c.spec.realmName === realm).map((c) => c.metadata.name!);
  if (clusters.length === 1) return clusters[0]!;
  if (clusters.length === 0) throw new CliError(`no cluster in namespace ${session.namespace} names realm "${realm}" (spec.realmName)`);
  throw new UsageError(`several clusters name realm "${realm}" (${clusters.join(", ")}): choose one with --cluster`);
}

/** The cluster's OIDC kubeconfig: its API endpoint (from its admin kubeconfig) and a user of kubectl's oidc auth provider. */
export async function oidcKubeconfig(session: Session, client: ClusterClient, tokens?: Tokens): Promise<string> {
  const name = client.cluster.metadata.name!;
  const secretName = client.cluster.status?.kubeconfigSecretName ?? names.kubeconfigSecret(name);
  const path = await session.client.resourcePath({ apiVersion: "v1", kind: "Secret", namespace: session.namespace, name: secretName });
  let secret: SecretObject;
  try {
    secret = await session.client.get<SecretObject>(path);
  } catch (error) {
    if (!(error instanceof KubeNotFoundError)) throw error;
    throw new CliError(`cluster "${name}" has no API endpoint yet (phase ${client.cluster.status?.phase ?? "Pending"}); follow it with: slipway describe cluster ${name}`);
  }
  const admin = parse(Buffer.from(secret.data?.value ?? "", "base64").toString("utf8")) as { clusters?: { cluster: Record<string, unknown> }[] } | null;
  const endpoint = admin?.clusters?.[0]?.cluster;
  if (!endpoint) throw new CliError(`the kubeconfig Secret ${secretName} of cluster "${name}" names no cluster`);
  const realm = client.cluster.spec.realmName!;
  const user = `${realm}@${name}`;
  const config: Record<string, string> = {
    "client-id": client.clientId,
    "idp-issuer-url": client.issuerUrl,
    "idp-certificate-authority-data": Buffer.from(client.issuerCa).toString("base64"),
    "extra-scopes": "profile,email,groups",
  };
  if (tokens) {
    config["id-token"] = tokens.id_token;
    if (tokens.refresh_token) config["refresh-token"] = tokens.refresh_token;
  }
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster: endpoint }],
    users: [{ name: user, user: { "auth-provider": { name: "oidc", config } } }],
    contexts: [{ name: user, context: { cluster: name, user } }],
    "current-context": user,
    preferences: {},
  });
}

/** A small HTTPS client for the issuer: trusts its CA, keeps its cookies, never follows redirects itself. */
class IssuerSession {
  private readonly cookies = new Map<string, string>();

  constructor(private readonly ca: string) {}

  send(method: "GET" | "POST", url: string, form?: Record<string, string>): Promise<{ status: number; location?: string; body: string }> {
    const body = form ? new URLSearchParams(form).toString() : undefined;
    const headers: Record<string, string> = { accept: "application/json, text/html" };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    if (body !== undefined) {
      headers["content-type"] = "application/x-www-form-urlencoded";
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    return new Promise((resolve, reject) => {
      const req = request(url, { method, headers, ca: this.ca, timeout: 30_000 }, (res) => {
        for (const cookie of res.headers["set-cookie"] ?? []) {
          const [pair] = cookie.split(";");
          const eq = pair!.indexOf("=");
          if (eq > 0) this.cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
        }
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString("utf8") }));
      });
      req.on("timeout", () => req.destroy(new Error(`${method} ${url}: timed out`)));
      req.on("error", (e) => reject(new CliError(`the realm's issuer at ${new URL(url).origin} does not answer: ${e.message}`)));
      req.end(body);
    });
  }
}

function tokenError(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: string; error_description?: string };
    return parsed.error_description ?? parsed.error ?? body;
  } catch {
    return body.slice(0, 200);
  }
}

/** Tokens for an authorization code, at the issuer's token endpoint. */
async function redeem(http: IssuerSession, tokenEndpoint: string, form: Record<string, string>): Promise<Tokens> {
  const answer = await http.send("POST", tokenEndpoint, form);
  if (answer.status !== 200) throw new CliError(`the realm refused the ${form.grant_type === "refresh_token" ? "refresh token" : "sign-in"}: ${tokenError(answer.body)}`);
  return JSON.parse(answer.body) as Tokens;
}

interface Flow {
  http: IssuerSession;
  authorizationEndpoint: string;
  tokenEndpoint: string;
}

async function discover(client: ClusterClient): Promise<Flow> {
  const http = new IssuerSession(client.issuerCa);
  const answer = await http.send("GET", `${client.issuerUrl}/.well-known/openid-configuration`);
  if (answer.status !== 200) throw new CliError(`realm issuer ${client.issuerUrl} answered HTTP ${answer.status}`);
  const discovery = JSON.parse(answer.body) as { authorization_endpoint: string; token_endpoint: string };
  return { http, authorizationEndpoint: discovery.authorization_endpoint, tokenEndpoint: discovery.token_endpoint };
}

function authorizationUrl(flow: Flow, client: ClusterClient, redirectUri: string, challenge: string, state: string): string {
  const url = new URL(flow.authorizationEndpoint);
  const params = { client_id: client.clientId, response_type: "code", scope: SCOPES, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: "S256", state, nonce: randomBytes(16).toString("base64url") };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.href;
}

/** Signs in by filling the realm's sign-in form: follows the issuer's redirects until the one to `redirectUri`. */
async function codeWithPassword(flow: Flow, start: string, redirectUri: string, username: string, password: string): Promise<string> {
  let url = start;
  let submitted = false;
  for (let hops = 0; hops < 10; hops++) {
    const answer = await flow.http.send("GET", url);
    if (answer.status === 200 && /<form/.test(answer.body) && !submitted) {
      const action = /action="([^"]+)"/.exec(answer.body)?.[1]?.replaceAll("&#47;", "/");
      if (!action) throw new CliError("the realm's sign-in page has no form");
      const posted = await flow.http.send("POST", new URL(action, url).href, { username, password });
      if (posted.status === 401) throw new CliError(`the realm refused the sign-in of ${username}: invalid username or password`);
      if (posted.status === 429) throw new CliError(`the realm refused the sign-in of ${username}: too many failed sign-ins, try again later`);
      if (!posted.location) throw new CliError(`the realm's sign-in answered HTTP ${posted.status}`);
      submitted = true;
      url = new URL(posted.location, url).href;
      continue;
    }
    if (!answer.location) throw new CliError(`the realm's issuer answered HTTP ${answer.status}: ${tokenError(answer.body)}`);
    const next = new URL(answer.location, url);
    if (next.href.startsWith(redirectUri)) return codeOf(next);
    url = next.href;
  }
  throw new CliError("the realm's sign-in did not end in a redirect back");
}

function codeOf(redirect: URL): string {
  const error = redirect.searchParams.get("error");
  if (error) throw new CliError(`the realm refused the sign-in: ${redirect.searchParams.get("error_description") ?? error}`);
  const code = redirect.searchParams.get("code");
  if (!code) throw new CliError("the realm redirected back without a code");
  return code;
}

/** Signs in through a browser: the redirect comes back to a loopback port this process listens on. */
async function codeWithBrowser(session: Session, flow: Flow, client: ClusterClient, challenge: string, state: string): Promise<{ code: string; redirectUri: string }> {
  return new Promise((resolve, reject) => {
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (url.pathname !== REDIRECT_PATH) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end("Signed in: you can close this window.\n");
      server.close();
      clearTimeout(timer);
      try {
        if (url.searchParams.get("state") !== state) throw new CliError("the redirect back carries another sign-in's state");
        resolve({ code: codeOf(url), redirectUri });
      } catch (e) {
        reject(e as Error);
      }
    });
    let redirectUri = "";
    const timer = setTimeout(() => {
      server.close();
      reject(new CliError("no sign-in within 5 minutes"));
    }, 5 * 60_000);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      redirectUri = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}${REDIRECT_PATH}`;
      session.err.write(`open this URL in a browser to sign in to realm ${client.cluster.spec.realmName}:\n  ${authorizationUrl(flow, client, redirectUri, challenge, state)}\n`);
    });
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
}

/** The refresh token the kubeconfig file holds for the user, if any. */
function storedRefreshToken(file: string, user: string): string | undefined {
  if (!existsSync(file)) return undefined;
  const config = parse(readFileSync(file, "utf8")) as { users?: { name: string; user?: { "auth-provider"?: { config?: Record<string, string> } } }[] } | null;
  return config?.users?.find((u) => u.name === user)?.user?.["auth-provider"]?.config?.["refresh-token"];
}

export async function login(session: Session, realm: string, flags: LoginFlags, target: string): Promise<{ user: string; context: string; refreshed: boolean }> {
  const client = await clusterClient(session, flags.cluster ?? (await onlyClusterOf(session, realm)), realm);
  const flow = await discover(client);
  const user = `${realm}@${client.cluster.metadata.name}`;
  let tokens: Tokens | undefined;
  let refreshed = false;
  const refresh = flags.username === undefined ? storedRefreshToken(target, user) : undefined;
  if (refresh) {
    tokens = await redeem(flow.http, flow.tokenEndpoint, { grant_type: "refresh_token", refresh_token: refresh, client_id: client.clientId }).catch(() => undefined);
    refreshed = tokens !== undefined;
  }
  if (!tokens) {
    const verifier = randomBytes(32).toString("base64url");
    const challenge = createHash("sha256").update(verifier).digest("base64url");
    const state = randomBytes(16).toString("base64url");
    let code: string;
    let redirectUri: string;
    if (flags.username !== undefined) {
      if (!flags.passwordStdin) throw new UsageError("--username needs --password-stdin (the password is read from standard input, never from the command line)");
      const password = await readStdin();
      redirectUri = `http://127.0.0.1${REDIRECT_PATH}`;
      code = await codeWithPassword(flow, authorizationUrl(flow, client, redirectUri, challenge, state), redirectUri, flags.username, password);
    } else {
      ({ code, redirectUri } = await codeWithBrowser(session, flow, client, challenge, state));
    }
    tokens = await redeem(flow.http, flow.tokenEndpoint, { grant_type: "authorization_code", code, redirect_uri: redirectUri, client_id: client.clientId, code_verifier: verifier });
  }
  const kubeconfig = await oidcKubeconfig(session, client, tokens);
  const existing = existsSync(target) ? readFileSync(target, "utf8") : undefined;
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
  writeFileSync(target, mergeKubeconfig(existing, kubeconfig), { mode: 0o600 });
  return { user, context: user, refreshed };
}

export function registerLoginCommand(program: Command, kubectlConfigPath: () => string): void {
  program
    .command("login")
    .description("sign in to a realm as a cluster's OIDC client and write a kubeconfig user with the ID and refresh tokens")
    .argument("<realm>", "name of the realm")
    .option("--cluster <name>", "the cluster to sign in to (default: the one cluster of the namespace that names the realm)")
    .option("--username <name>", "sign in without a browser, as this user (with --password-stdin)")
    .option("--password-stdin", "read the password from standard input")
    .option("--output <file>", "the kubeconfig file to write the user into (default: ~/.kube/config or the first file of $KUBECONFIG)")
    .action(async (realm: string, flags: LoginFlags, command: Command) => {
      if (flags.passwordStdin && flags.username === undefined) throw new UsageError("--password-stdin goes with --username");
      await withSession(command, async (session) => {
        const target = flags.output ?? kubectlConfigPath();
        const done = await login(session, realm, flags, target);
        session.out.write(`${done.refreshed ? "tokens refreshed" : "signed in"}: user "${done.user}" in ${target}\nuse it with: kubectl --kubeconfig ${target} --context ${done.context} get nodes\n`);
      });
    });
}
