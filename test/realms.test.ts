// Identity realms end to end: `slipway up` serves two realms as OpenID Connect issuers; clusters naming
// a realm get an OIDCClient and a Platform, their kubeadm configuration trusts the issuer, and the
// emulated workload API accepts that realm's ID tokens for that client only. Users sign in with
// `slipway login` (the realm's authorization code flow with PKCE, its sign-in form filled over HTTP), and
// kubectl then acts as them: the realm's admin group is cluster-admin, other users are refused by RBAC,
// tokens of another realm, for another client or forged are refused as unauthenticated.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { REPO, SLIPWAY_BIN, eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

const PASSWORDS = { carol: "carol-correct-horse", dave: "dave-battery-staple", erin: "erin-partner-pass" };

const realms = `apiVersion: slipway.dev/v1alpha1
kind: Realm
metadata:
  name: corp
spec:
  displayName: Corp
  adminGroup: platform-admins
---
apiVersion: slipway.dev/v1alpha1
kind: Realm
metadata:
  name: partners
spec:
  adminGroup: platform-admins
---
apiVersion: slipway.dev/v1alpha1
kind: RealmUser
metadata:
  name: carol
spec:
  realm: corp
  email: carol@example.com
  groups: [platform-admins]
  password: ${PASSWORDS.carol}
---
apiVersion: slipway.dev/v1alpha1
kind: RealmUser
metadata:
  name: dave
spec:
  realm: corp
  password: ${PASSWORDS.dave}
---
apiVersion: slipway.dev/v1alpha1
kind: RealmUser
metadata:
  name: erin
spec:
  realm: partners
  groups: [platform-admins]
  password: ${PASSWORDS.erin}
---
apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata:
  name: east
spec:
  provider: sim
  region: sim-east-1
`;

function cluster(name: string, realm: string): string {
  return `apiVersion: slipway.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\nspec:\n  realmName: ${realm}\n  controlPlane:\n    connection: east\n    machineType: s1.medium\n`;
}

interface KubeconfigFile {
  clusters: { name: string; cluster: { server: string; "certificate-authority-data": string; "tls-server-name"?: string } }[];
  users: { name: string; user: { "auth-provider"?: { name: string; config: Record<string, string> } } }[];
}

describe("identity realms: OIDC clients for clusters, sign-in with slipway login, RBAC for realm users", () => {
  let plane: RunningSlipway;
  let kc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const file = (name: string) => join(plane.dataDir, name);
  const login = (realm: string, cluster: string, user: string | undefined, output: string, password?: string) =>
    spawnSync(process.execPath, [SLIPWAY_BIN, "--kubeconfig", kc, "login", realm, "--cluster", cluster, ...(user ? ["--username", user, "--password-stdin"] : []), "--output", output], {
      cwd: REPO,
      input: password ?? "",
      encoding: "utf8",
      timeout: 60_000,
    });
  const idToken = (kubeconfig: string) => (parse(readFileSync(kubeconfig, "utf8")) as KubeconfigFile).users[0]!.user["auth-provider"]!.config["id-token"]!;
  /** GET on a workload cluster's API with a bearer token: the HTTP status. */
  const statusWithToken = (kubeconfig: string, path: string, token: string) => {
    const { cluster } = (parse(readFileSync(kubeconfig, "utf8")) as KubeconfigFile).clusters[0]!;
    const url = new URL(`${cluster.server.replace(/\/$/, "")}${path}`);
    return new Promise<number>((resolve, reject) => {
      const req = request(url, { ca: Buffer.from(cluster["certificate-authority-data"], "base64"), servername: cluster["tls-server-name"], headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end();
    });
  };

  /** GET on the control plane (trusting its CA): the body. */
  const getText = (url: string) => {
    const ca = Buffer.from((parse(readFileSync(kc, "utf8")) as KubeconfigFile).clusters[0]!.cluster["certificate-authority-data"], "base64");
    return new Promise<string>((resolve, reject) => {
      const req = request(url, { ca }, (res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${url}: HTTP ${res.statusCode}`))));
      });
      req.on("error", reject);
      req.end();
    });
  };

  before(async () => {
    plane = await startSlipway({ args: ["--sim-profile", "instant", "--poll-interval", "100ms"] });
    kc = plane.kubeconfig;
  });

  after(async () => {
    await plane?.stop("SIGTERM");
    if (plane) removeDir(plane.dataDir);
  });

  it("refuses bad realm input naming the field, and stores nothing of it", () => {
    const refused = (manifest: string, pattern: RegExp) => {
      const r = kubectl(kc, ["apply", "-f", "-"], manifest);
      assert.notEqual(r.status, 0, manifest);
      assert.match(r.stderr, pattern);
      return r.stderr;
    };
    const short = refused("apiVersion: slipway.dev/v1alpha1\nkind: RealmUser\nmetadata:\n  name: mallory\nspec:\n  realm: corp\n  password: tiny-pw\n", /spec\.password: Invalid value: "<hidden>": must be 8 to 1024/);
    assert.ok(!short.includes("tiny-pw"), "the refused password is not echoed");
    refused("apiVersion: slipway.dev/v1alpha1\nkind: RealmUser\nmetadata:\n  name: mallory\nspec:\n  realm: nowhere\n  password: long-enough-pw\n", /spec\.realm: Not found: "nowhere"/);
    refused("apiVersion: slipway.dev/v1alpha1\nkind: Realm\nmetadata:\n  name: bad\nspec:\n  adminGroup: 'Admins!'\n", /spec\.adminGroup: Invalid value/);
    refused("apiVersion: slipway.dev/v1alpha1\nkind: OIDCClient\nmetadata:\n  name: bad\nspec:\n  realm: corp\n  redirectUris: ['not a url']\n", /spec\.redirectUris\[0\]: Invalid value/);
    refused(cluster("bad", "Not_A_Realm"), /spec\.realmName: Invalid value: "Not_A_Realm"/);
    assert.equal(kubectl(kc, ["get", "realmuser", "mallory"]).status, 1);
    assert.equal(kubectl(kc, ["get", "cluster", "bad"]).status, 1);
    assert.equal(kubectl(kc, ["get", "realm", "bad"]).status, 1);
  });

  it("serves each realm as an issuer; clusters naming a realm get an OIDCClient, a Platform, and trust the issuer", async () => {
    kubectlOk(kc, ["apply", "-f", "-"], [realms, cluster("c1", "corp"), cluster("c2", "corp"), cluster("c3", "partners")].join("---\n"));
    await eventually(() => ["c1", "c2", "c3"].every((c) => ok("get", "cluster", c, "-o", "jsonpath={.status.phase}") === "Running"), { timeoutMs: 90_000, intervalMs: 250, what: "three clusters Running" });
    const client = JSON.parse(ok("get", "oidcclient", "c1", "-o", "json")) as { spec: { realm: string }; metadata: { ownerReferences: { kind: string; name: string }[] }; status: { clientId: string; issuerUrl: string; phase: string } };
    assert.equal(client.spec.realm, "corp");
    assert.equal(client.status.phase, "Ready");
    assert.equal(client.status.issuerUrl, `https://127.0.0.1:${plane.port}/realms/corp`);
    assert.deepEqual(client.metadata.ownerReferences.map((r) => `${r.kind}/${r.name}`), ["Cluster/c1"]);
    await eventually(() => ok("get", "platform", "c1", "-o", "jsonpath={.status.phase}") === "Ready", { timeoutMs: 30_000, what: "platform c1 Ready" });
    assert.equal(ok("get", "platform", "c1", "-o", "jsonpath={.status.rootGroup}"), "platforms/default/c1");
    // kubeadm init was given kube-apiserver's --oidc-* flags: the configuration it keeps in the cluster says so.
    const c1 = file("c1-admin.kubeconfig");
    writeFileSync(c1, Buffer.from(ok("get", "secret", "c1-kubeconfig", "-o", "jsonpath={.data.value}"), "base64"));
    const kept = kubectlOk(c1, ["get", "configmap", "kubeadm-config", "-n", "kube-system", "-o", "jsonpath={.data.ClusterConfiguration}"]);
    const extraArgs = (JSON.parse(kept) as { apiServer?: { extraArgs?: { name: string; value: string }[] } }).apiServer?.extraArgs ?? [];
    const arg = (name: string) => extraArgs.find((a) => a.name === name)?.value;
    assert.deepEqual([arg("oidc-issuer-url"), arg("oidc-client-id"), arg("oidc-groups-claim")], [client.status.issuerUrl, client.status.clientId, "groups"]);
    // Discovery and keys, as any OIDC client reads them.
    const discovery = JSON.parse(await getText(`${client.status.issuerUrl}/.well-known/openid-configuration`)) as Record<string, unknown>;
    assert.equal(discovery.issuer, client.status.issuerUrl);
    assert.deepEqual(discovery.code_challenge_methods_supported, ["S256"]);
    assert.deepEqual(discovery.response_types_supported, ["code"]);
    const keys = JSON.parse(await getText(discovery.jwks_uri as string)) as { keys: { kid: string; d?: string }[] };
    assert.equal(keys.keys.length, 1);
    assert.equal(keys.keys[0]!.d, undefined, "only the public key is published");
    const other = JSON.parse(await getText(`https://127.0.0.1:${plane.port}/realms/partners/jwks`)) as { keys: { kid: string }[] };
    assert.notEqual(other.keys[0]!.kid, keys.keys[0]!.kid, "each realm signs with its own key");
  });

  it("lets carol (in the realm's admin group) list nodes with her ID token, refuses dave, and refreshes tokens", async () => {
    const carol = file("carol.kubeconfig");
    const signedIn = login("corp", "c1", "carol", carol, `${PASSWORDS.carol}\n`);
    assert.equal(signedIn.status, 0, signedIn.stderr);
    assert.match(signedIn.stdout, /signed in: user "corp@c1"/);
    assert.match(ok("get", "nodes", "--kubeconfig", carol, "--no-headers"), /c1-cp-0\s+Ready/);
    const carolToken = idToken(carol);
    const claims = JSON.parse(Buffer.from(carolToken.split(".")[1]!, "base64url").toString("utf8")) as Record<string, unknown>;
    assert.equal(claims.preferred_username, "carol");
    assert.deepEqual(claims.groups, ["platform-admins"]);
    assert.equal(claims.aud, ok("get", "oidcclient", "c1", "-o", "jsonpath={.status.clientId}"));

    const dave = file("dave.kubeconfig");
    assert.equal(login("corp", "c1", "dave", dave, PASSWORDS.dave).status, 0);
    const refused = kubectl(dave, ["get", "nodes"]);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /Forbidden.*User "oidc:dave" cannot list resource "nodes"/);

    const wrong = login("corp", "c1", "dave", file("x.kubeconfig"), "not-daves-password");
    assert.notEqual(wrong.status, 0);
    assert.match(wrong.stderr, /invalid username or password/);

    // Signing in again without a password uses the refresh token the kubeconfig holds.
    const again = login("corp", "c1", undefined, carol);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /tokens refreshed/);
    assert.match(ok("get", "nodes", "--kubeconfig", carol, "--no-headers"), /c1-cp-0/);

    // kubectl itself refreshes an expired ID token with the refresh token, and writes the new one back.
    const expiring = file("carol-expired.kubeconfig");
    const config = parse(readFileSync(carol, "utf8")) as KubeconfigFile;
    const provider = config.users[0]!.user["auth-provider"]!.config;
    const part = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
    provider["id-token"] = `${part({ alg: "RS256" })}.${part({ iss: provider["idp-issuer-url"], exp: 1000 })}.c2ln`;
    writeFileSync(expiring, stringify(config));
    assert.match(kubectlOk(expiring, ["get", "nodes", "--no-headers"]), /c1-cp-0/);
    const renewed = JSON.parse(Buffer.from(idToken(expiring).split(".")[1]!, "base64url").toString("utf8")) as { exp: number; preferred_username: string };
    assert.ok(renewed.exp * 1000 > Date.now(), "kubectl wrote a new, valid ID token");
    assert.equal(renewed.preferred_username, "carol");
  });

  it("makes a member of the platform's root group cluster-admin, and keeps a user's password when its groups change", async () => {
    kubectlOk(kc, ["patch", "realmuser", "dave", "--type", "merge", "-p", '{"spec":{"groups":["platforms/default/c1"]}}']);
    const dave = file("dave.kubeconfig");
    assert.equal(login("corp", "c1", "dave", dave, PASSWORDS.dave).status, 0, "dave's password still signs in");
    assert.match(kubectlOk(dave, ["get", "nodes", "--no-headers"]), /c1-cp-0/);
  });

  it("answers 401 to a token of another realm, of another client of the realm, or forged", async () => {
    const c1 = file("carol.kubeconfig");
    const carolForC2 = file("carol-c2.kubeconfig");
    assert.equal(login("corp", "c2", "carol", carolForC2, PASSWORDS.carol).status, 0);
    const erin = file("erin.kubeconfig");
    assert.equal(login("partners", "c3", "erin", erin, PASSWORDS.erin).status, 0);
    assert.match(kubectlOk(erin, ["get", "nodes", "--no-headers"]), /c3-cp-0/, "erin is admin of her own realm's cluster");
    const good = idToken(c1);
    assert.equal(await statusWithToken(c1, "/api/v1/nodes", good), 200);
    assert.equal(await statusWithToken(c1, "/api/v1/nodes", idToken(erin)), 401, "another realm's token");
    assert.equal(await statusWithToken(c1, "/api/v1/nodes", idToken(carolForC2)), 401, "a token for another cluster's client");
    const [header, payload, signature] = good.split(".");
    const forgedPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, "base64url").toString("utf8")), groups: ["platform-admins", "system:masters"] })).toString("base64url");
    assert.equal(await statusWithToken(c1, "/api/v1/nodes", `${header}.${forgedPayload}.${signature}`), 401, "a token whose claims were changed");
    // A kubeconfig of the cluster's OIDC user, without tokens, as `slipway kubeconfig --oidc` prints it.
    const printed = spawnSync(process.execPath, [SLIPWAY_BIN, "--kubeconfig", kc, "kubeconfig", "c1", "--oidc"], { cwd: REPO, encoding: "utf8" });
    assert.equal(printed.status, 0, printed.stderr);
    const oidcConfig = (parse(printed.stdout) as KubeconfigFile).users[0]!.user["auth-provider"]!;
    assert.equal(oidcConfig.name, "oidc");
    assert.equal(oidcConfig.config["idp-issuer-url"], `https://127.0.0.1:${plane.port}/realms/corp`);
    assert.equal(oidcConfig.config["id-token"], undefined);
    writeFileSync(file("tokenless.kubeconfig"), stringify(parse(printed.stdout)));
  });

  it("keeps each realm's keys across a restart: tokens issued before are still accepted", async () => {
    const before = JSON.parse(await getText(`https://127.0.0.1:${plane.port}/realms/corp/jwks`)) as { keys: { kid: string }[] };
    const carol = file("carol.kubeconfig");
    const output = plane.output();
    assert.equal(await plane.stop("SIGTERM"), 0);
    plane = await startSlipway({ dataDir: plane.dataDir, port: plane.port, args: ["--sim-profile", "instant", "--poll-interval", "100ms"] });
    const afterRestart = JSON.parse(await getText(`https://127.0.0.1:${plane.port}/realms/corp/jwks`)) as { keys: { kid: string }[] };
    assert.deepEqual(afterRestart.keys.map((k) => k.kid), before.keys.map((k) => k.kid));
    // The cluster's endpoint as it is now (its address is the sim cloud's, which may move with a restart).
    const endpoint = file("c1-oidc.kubeconfig");
    await eventually(() => {
      const printed = spawnSync(process.execPath, [SLIPWAY_BIN, "--kubeconfig", kc, "kubeconfig", "c1", "--oidc"], { cwd: REPO, encoding: "utf8" });
      return printed.status === 0 && (writeFileSync(endpoint, printed.stdout), true);
    }, { timeoutMs: 30_000, what: "c1's OIDC kubeconfig" });
    await eventually(async () => (await statusWithToken(endpoint, "/api/v1/nodes", idToken(carol))) === 200, { timeoutMs: 30_000, what: "carol's token accepted after the restart" });
    writeFileSync(file("before-restart.log"), output);
  });

  it("never shows a password: not in objects, annotations, events, the audit log or the server's output", () => {
    const everything = [
      ok("get", "realmusers", "-o", "yaml"),
      ok("get", "events", "-A", "-o", "yaml"),
      readFileSync(file("audit.log"), "utf8"),
      readFileSync(file("before-restart.log"), "utf8"),
      plane.output(),
    ].join("\n");
    for (const password of Object.values(PASSWORDS)) assert.ok(!everything.includes(password), "a password appears");
    assert.match(ok("get", "realmuser", "carol", "-o", "jsonpath={.spec.passwordHash}"), /^\$argon2id\$/);
    assert.equal(ok("get", "realmuser", "carol", "-o", "jsonpath={.spec.password}"), "");
  });
});
