// Who may do what on a real `slipway up`, driven with the real kubectl as a platform team would: a
// ServiceAccount bound to `view` in one team's namespace, a user with a client certificate of Slipway's
// CA, tokens that expired or were forged, the admin's break-glass token and the console's sign-in — and
// the audit log that records each of them without a credential in it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createPrivateKey } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { request } from "node:https";
import { join } from "node:path";
import { SignJWT } from "jose";
import { defaultRegistry } from "../src/api/kinds.ts";
import { parseKubeconfig, renderKubeconfig } from "../src/bootstrap/kubeconfig.ts";
import { issueCertificate } from "../src/bootstrap/pki.ts";
import { createServiceAccountKey } from "../src/apiserver/serviceaccount-tokens.ts";
import { ensureCredentials, type ControlPlaneCredentials } from "../src/controlplane/credentials.ts";
import { openStore } from "../src/controlplane/stores.ts";
import { eventually, kubectl, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

const clusterIn = (namespace: string) => `
apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata: { name: east, namespace: ${namespace} }
spec: { provider: sim, region: sim-east-1 }
---
apiVersion: slipway.dev/v1alpha1
kind: Cluster
metadata: { name: ${namespace}-app, namespace: ${namespace} }
spec:
  kubernetesVersion: v1.31.2
  controlPlane: { connection: east, machineType: s1.medium, replicas: 1 }
`;

interface AuditEvent {
  verb: string;
  requestURI: string;
  user: { username: string; groups: string[] };
  objectRef?: { resource?: string; namespace?: string; name?: string; subresource?: string };
  responseStatus: { code: number };
}

describe("users, service accounts and RBAC on the control plane", () => {
  let server: RunningSlipway;
  let admin: string;
  let credentials: ControlPlaneCredentials;
  let bot: string;
  let botToken: string;
  let carol: string;
  const kubeconfigs: Record<string, string> = {};

  /** A kubeconfig for the control plane with the given user credentials. */
  const kubeconfigFor = (name: string, user: { token?: string; clientCertPem?: string; clientKeyPem?: string }) => {
    const base = parseKubeconfig(readFileSync(admin, "utf8"));
    const path = join(server.dataDir, `${name}.kubeconfig`);
    writeFileSync(path, renderKubeconfig({ clusterName: "slipway", server: base.server, caCertPem: credentials.ca.certPem, user: name, ...user }), { mode: 0o600 });
    kubeconfigs[name] = path;
    return path;
  };
  const ok = (kc: string, ...args: string[]) => {
    const r = kubectl(kc, args);
    assert.equal(r.status, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const refused = (kc: string, ...args: string[]) => {
    const r = kubectl(kc, args);
    assert.notEqual(r.status, 0, `kubectl ${args.join(" ")} should fail: ${r.stdout}`);
    return r.stderr;
  };

  before(async () => {
    // What an operator of the installation holds: the credentials in its store (made here before the
    // first start, as `slipway up` would, to issue a client certificate of Slipway's CA and to sign a
    // token that has expired).
    const dataDir = mkdtempSync(join(tmpdir(), "slipway-access-"));
    const store = await openStore({ kind: "sqlite", dataDir, registry: defaultRegistry() });
    credentials = await ensureCredentials(store);
    await store.close();
    server = await startSlipway({ dataDir, args: ["--sim-profile", "instant", "--poll-interval", "200ms"] });
    admin = server.kubeconfig;
    for (const team of ["team-a", "team-b"]) ok(admin, "create", "namespace", team);
  });

  after(async () => {
    const code = await server.stop("SIGTERM");
    assert.equal(code, 0);
    removeDir(server.dataDir);
  });

  it("builds each team's cluster while the controllers act as their own service accounts", async () => {
    for (const team of ["team-a", "team-b"]) {
      const r = kubectl(admin, ["apply", "-f", "-"], clusterIn(team));
      assert.equal(r.status, 0, r.stderr);
    }
    for (const team of ["team-a", "team-b"]) {
      await eventually(() => ok(admin, "get", "cluster", `${team}-app`, "-n", team, "-o", "jsonpath={.status.phase}") === "Running", { timeoutMs: 60_000, what: `${team}'s cluster Running` });
      ok(admin, "get", "secret", `${team}-app-kubeconfig`, "-n", team);
    }
  });

  it("gives a ServiceAccount bound to view in team-a exactly that: can-i, lists, whoami", () => {
    ok(admin, "create", "serviceaccount", "bot", "-n", "team-a");
    ok(admin, "create", "rolebinding", "bot-view", "-n", "team-a", "--clusterrole", "view", "--serviceaccount", "team-a:bot");
    botToken = ok(admin, "create", "token", "bot", "-n", "team-a").trim();
    assert.match(botToken, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    bot = kubeconfigFor("bot", { token: botToken });

    const create = kubectl(bot, ["auth", "can-i", "create", "clusters", "-n", "team-a"]);
    assert.deepEqual([create.status, create.stdout.trim()], [1, "no"]);
    assert.equal(ok(bot, "auth", "can-i", "get", "clusters", "-n", "team-a").trim(), "yes");
    assert.equal(kubectl(bot, ["auth", "can-i", "get", "clusters", "-n", "team-b"]).stdout.trim(), "no");
    assert.equal(kubectl(bot, ["auth", "can-i", "get", "secrets", "-n", "team-a"]).stdout.trim(), "no");
    const list = ok(bot, "auth", "can-i", "--list", "-n", "team-a");
    assert.match(list, /clusters\.slipway\.dev\s+\[\]\s+\[\]\s+\[get list watch\]/);

    assert.deepEqual(ok(bot, "get", "clusters", "-n", "team-a", "-o", "name").trim().split("\n"), ["cluster.slipway.dev/team-a-app"]);
    assert.match(
      refused(bot, "get", "clusters", "-A"),
      /Error from server \(Forbidden\): clusters\.slipway\.dev is forbidden: User "system:serviceaccount:team-a:bot" cannot list resource "clusters" in API group "slipway\.dev" at the cluster scope/,
    );
    assert.match(refused(bot, "get", "clusters", "-n", "team-a", "--watch", "--request-timeout=5s", "-A"), /Forbidden/);
    assert.match(ok(bot, "auth", "whoami"), /Username\s+system:serviceaccount:team-a:bot/);
  });

  it("keeps team-b's cluster — its status, kubeconfig Secret and events — from team-a's service account", () => {
    for (const args of [
      ["get", "cluster", "team-b-app", "-n", "team-b", "--subresource=status"],
      ["get", "secret", "team-b-app-kubeconfig", "-n", "team-b"],
      ["get", "events", "-n", "team-b"],
      ["get", "secret", "team-a-app-kubeconfig", "-n", "team-a"],
    ]) {
      assert.match(refused(bot, ...args), /Error from server \(Forbidden\)/, args.join(" "));
    }
    assert.equal(ok(bot, "get", "cluster", "team-a-app", "-n", "team-a", "--subresource=status", "-o", "jsonpath={.status.phase}"), "Running");
  });

  it("refuses a token that expired or was not signed by the control plane with 401", async () => {
    const claims = JSON.parse(Buffer.from(botToken.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;
    const past = Math.floor(Date.now() / 1000) - 7200;
    const sign = (pem: string, body: Record<string, unknown>) => new SignJWT(body).setProtectedHeader({ alg: "ES256", typ: "JWT" }).sign(createPrivateKey(pem));
    const expired = await sign(credentials.serviceAccountKey.privateKeyPem, { ...claims, iat: past, nbf: past, exp: past + 600 });
    const forged = await sign(createServiceAccountKey().privateKeyPem, { ...claims });
    for (const [name, token] of [["expired", expired], ["forged", forged]] as const) {
      const kc = kubeconfigFor(name, { token });
      assert.match(refused(kc, "get", "clusters", "-n", "team-a"), /Unauthorized/, name);
    }
  });

  it("accepts a client certificate of Slipway's CA as its user and groups, and RBAC decides what they may do", async () => {
    const cert = await issueCertificate(credentials.ca, { commonName: "carol", organizations: ["team-b-admins"], usages: ["client"] });
    carol = kubeconfigFor("carol", { clientCertPem: cert.certPem, clientKeyPem: cert.keyPem });
    const whoami = ok(carol, "auth", "whoami");
    assert.match(whoami, /Username\s+carol/);
    assert.match(whoami, /Groups\s+\[team-b-admins system:authenticated\]/);
    assert.match(refused(carol, "get", "clusters", "-n", "team-b"), /User "carol" cannot list resource "clusters"/);
    ok(admin, "create", "rolebinding", "team-b-admins", "-n", "team-b", "--clusterrole", "admin", "--group", "team-b-admins");
    await eventually(() => kubectl(carol, ["get", "clusters", "-n", "team-b"]).status === 0, { what: "carol's binding applied" });
    ok(carol, "get", "secret", "team-b-app-kubeconfig", "-n", "team-b");
    assert.match(refused(carol, "get", "clusters", "-n", "team-a"), /Forbidden/);
    // An admin of team-b may not hand out more than it holds.
    assert.match(refused(carol, "create", "rolebinding", "root", "-n", "team-b", "--clusterrole", "cluster-admin", "--user", "carol"), /Forbidden.*escalat|attempting to grant/);
  });

  it("keeps the admin token a break-glass member of system:masters, and the console's sign-in working", async () => {
    assert.match(ok(admin, "auth", "whoami"), /Username\s+admin[\s\S]*system:masters/);
    assert.equal(ok(admin, "auth", "can-i", "*", "*", "-A").trim(), "yes");
    const base = parseKubeconfig(readFileSync(admin, "utf8"));
    const post = (path: string, body: unknown, token?: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(`${base.server}${path}`, { method: "POST", ca: credentials.ca.certPem, headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) } }, (res) => {
          let text = "";
          res.on("data", (d: Buffer) => (text += d.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        });
        req.on("error", reject);
        req.end(JSON.stringify(body));
      });
    const refused = await post("/login/codes", {}, botToken);
    assert.equal(refused.status, 403, "a service account's short-lived token does not become a 12-hour console session");
    const link = await post("/login/codes", {}, base.token);
    assert.equal(link.status, 200, link.body);
    const code = new URL((JSON.parse(link.body) as { link: string }).link).hash.replace(/^#login=/, "");
    const session = await post("/login/session", { code });
    assert.equal(session.status, 200, session.body);
    const console = kubeconfigFor("console", { token: (JSON.parse(session.body) as { token: string }).token });
    assert.match(ok(console, "get", "clusters", "-A"), /team-a-app[\s\S]*team-b-app/);
  });

  it("records every one of these requests in the audit log with its user and verb, and no credential", () => {
    const text = readFileSync(join(server.dataDir, "audit.log"), "utf8");
    const events = text.trim().split("\n").map((line) => JSON.parse(line) as AuditEvent);
    const by = (user: string, verb: string, match: (e: AuditEvent) => boolean) => events.some((e) => e.user.username === user && e.verb === verb && match(e));
    const BOT = "system:serviceaccount:team-a:bot";
    assert.ok(by("admin", "create", (e) => e.objectRef?.resource === "serviceaccounts" && e.objectRef.subresource === "token" && e.responseStatus.code === 201), "the token request");
    assert.ok(by(BOT, "list", (e) => e.objectRef?.resource === "clusters" && e.objectRef.namespace === "team-a" && e.responseStatus.code === 200), "bot lists team-a");
    assert.ok(by(BOT, "list", (e) => e.objectRef?.resource === "clusters" && e.objectRef.namespace === undefined && e.responseStatus.code === 403), "bot refused across namespaces");
    assert.ok(by(BOT, "get", (e) => e.objectRef?.resource === "secrets" && e.objectRef.namespace === "team-b" && e.responseStatus.code === 403), "bot refused team-b's kubeconfig");
    assert.ok(by(BOT, "create", (e) => e.objectRef?.resource === "selfsubjectaccessreviews" && e.responseStatus.code === 201), "bot's can-i");
    assert.ok(by(BOT, "create", (e) => e.objectRef?.resource === "selfsubjectreviews"), "bot's whoami");
    assert.ok(by("carol", "list", (e) => e.objectRef?.namespace === "team-b" && e.responseStatus.code === 200), "carol lists team-b");
    assert.ok(events.some((e) => e.responseStatus.code === 401), "the refused tokens");
    for (const secret of [botToken, credentials.adminToken, credentials.serviceAccountKey.privateKeyPem.split("\n")[1]!]) {
      assert.ok(!text.includes(secret), "no credential in the audit log");
    }
    for (const path of Object.values(kubeconfigs)) {
      const user = parseKubeconfig(readFileSync(path, "utf8"));
      if (user.token) assert.ok(!text.includes(user.token));
    }
  });
});
