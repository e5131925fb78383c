import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { promisify } from "node:util";
import { parse } from "yaml";
import { KubeconfigError, mergeKubeconfig, parseKubeconfig, renderKubeconfig } from "./kubeconfig.ts";
import { clientCertificateIdentity, createCertificateAuthority, issueCertificate, serverTlsOptions } from "./pki.ts";

const KUBECTL = "/usr/bin/kubectl";
const kubectlMissing = !existsSync(KUBECTL);
const run = promisify(execFile);

const ca = await createCertificateAuthority({ commonName: "kubernetes" });
const adminCert = await issueCertificate(ca, { commonName: "kubernetes-admin", organizations: ["system:masters"], usages: ["client"] });

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), "slipway-kubeconfig-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs the real kubectl with an isolated HOME so that no user configuration leaks in. */
async function kubectl(dir: string, args: string[]): Promise<string> {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir };
  const { stdout } = await run(KUBECTL, args, { env, timeout: 20_000 });
  return stdout;
}

test("a token kubeconfig has kubectl's layout and reads back", () => {
  const text = renderKubeconfig({
    clusterName: "slipway",
    server: "https://127.0.0.1:6443",
    caCertPem: ca.certPem,
    user: "admin",
    token: "s3cret",
    namespace: "team-a",
  });
  const doc = parse(text);
  assert.equal(doc.apiVersion, "v1");
  assert.equal(doc.kind, "Config");
  assert.equal(doc["current-context"], "admin@slipway");
  assert.deepEqual(doc.contexts, [{ name: "admin@slipway", context: { cluster: "slipway", user: "admin", namespace: "team-a" } }]);
  assert.equal(Buffer.from(doc.clusters[0].cluster["certificate-authority-data"], "base64").toString(), ca.certPem);
  assert.deepEqual(doc.users, [{ name: "admin", user: { token: "s3cret" } }]);

  assert.deepEqual(parseKubeconfig(text), {
    contextName: "admin@slipway",
    server: "https://127.0.0.1:6443",
    caCertPem: ca.certPem,
    token: "s3cret",
    namespace: "team-a",
  });
});

test("a client-certificate kubeconfig reads back the certificate and key", () => {
  const text = renderKubeconfig({
    clusterName: "prod",
    server: "https://10.0.0.10:6443",
    caCertPem: ca.certPem,
    user: "kubernetes-admin",
    clientCertPem: adminCert.certPem,
    clientKeyPem: adminCert.keyPem,
    context: "prod-admin",
  });
  assert.deepEqual(parseKubeconfig(text), {
    contextName: "prod-admin",
    server: "https://10.0.0.10:6443",
    caCertPem: ca.certPem,
    clientCertPem: adminCert.certPem,
    clientKeyPem: adminCert.keyPem,
  });
  assert.throws(
    () => renderKubeconfig({ clusterName: "c", server: "https://x", caCertPem: ca.certPem, user: "u", clientCertPem: adminCert.certPem }),
    KubeconfigError,
  );
});

test("kubectl reads the server, CA, token and namespace of a rendered kubeconfig", { skip: kubectlMissing }, async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "kubeconfig");
  writeFileSync(file, renderKubeconfig({ clusterName: "slipway", server: "https://127.0.0.1:6443", caCertPem: ca.certPem, user: "admin", token: "abc.def", namespace: "ns1" }));
  const view = (path: string) => kubectl(dir, ["--kubeconfig", file, "config", "view", "--raw", "--minify", "-o", `jsonpath=${path}`]);
  assert.equal(await view("{.clusters[0].cluster.server}"), "https://127.0.0.1:6443");
  assert.equal(Buffer.from(await view("{.clusters[0].cluster.certificate-authority-data}"), "base64").toString(), ca.certPem);
  assert.equal(await view("{.users[0].user.token}"), "abc.def");
  assert.equal(await view("{.contexts[0].context.namespace}"), "ns1");
  assert.equal((await kubectl(dir, ["--kubeconfig", file, "config", "current-context"])).trim(), "admin@slipway");
});

test("kubectl connects with a rendered kubeconfig: verifies the server and sends the token or client certificate", { skip: kubectlMissing }, async (t) => {
  const dir = tempDir(t);
  const serving = await issueCertificate(ca, { commonName: "apiserver", ipAddresses: ["127.0.0.1"], dnsNames: ["localhost"], usages: ["server"] });
  const seen: { authorization?: string; user?: string; groups?: string[] }[] = [];
  const server = createServer(serverTlsOptions(serving, { clientCaPem: ca.certPem }), (req, res) => {
    const identity = clientCertificateIdentity(req.socket as TLSSocket);
    seen.push({ authorization: req.headers.authorization, user: identity?.commonName, groups: identity?.organizations });
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ major: "1", minor: "32", gitVersion: "v1.32.0-slipway", platform: "linux/amd64" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const serverUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const tokenFile = join(dir, "token.kubeconfig");
  writeFileSync(tokenFile, renderKubeconfig({ clusterName: "c1", server: serverUrl, caCertPem: ca.certPem, user: "admin", token: "abcdef.0123456789abcdef" }));
  const tokenVersion = JSON.parse(await kubectl(dir, ["--kubeconfig", tokenFile, "version", "-o", "json"]));
  assert.equal(tokenVersion.serverVersion.gitVersion, "v1.32.0-slipway");
  assert.deepEqual(seen.at(-1), { authorization: "Bearer abcdef.0123456789abcdef", user: undefined, groups: undefined });

  const certFile = join(dir, "cert.kubeconfig");
  writeFileSync(
    certFile,
    renderKubeconfig({ clusterName: "c1", server: serverUrl.replace("127.0.0.1", "localhost"), caCertPem: ca.certPem, user: "kubernetes-admin", clientCertPem: adminCert.certPem, clientKeyPem: adminCert.keyPem }),
  );
  const certVersion = JSON.parse(await kubectl(dir, ["--kubeconfig", certFile, "version", "-o", "json"]));
  assert.equal(certVersion.serverVersion.gitVersion, "v1.32.0-slipway");
  assert.deepEqual(seen.at(-1), { authorization: undefined, user: "kubernetes-admin", groups: ["system:masters"] });

  // A kubeconfig trusting another CA makes kubectl refuse the server.
  const other = await createCertificateAuthority({ commonName: "kubernetes" });
  const wrongFile = join(dir, "wrong.kubeconfig");
  writeFileSync(wrongFile, renderKubeconfig({ clusterName: "c1", server: serverUrl, caCertPem: other.certPem, user: "admin", token: "x" }));
  await assert.rejects(kubectl(dir, ["--kubeconfig", wrongFile, "version", "-o", "json", "--request-timeout=5s"]), /certificate signed by unknown authority/);
});

test("a server name other than the URL's host reads back, and kubectl verifies and sends it over a path-prefixed URL", { skip: kubectlMissing }, async (t) => {
  const dir = tempDir(t);
  const serving = await issueCertificate(ca, { commonName: "apiserver", dnsNames: ["api.cluster-abc.internal"], usages: ["server"] });
  const seen: { servername: string | false | null; url?: string }[] = [];
  const server = createServer(serverTlsOptions(serving), (req, res) => {
    seen.push({ servername: (req.socket as TLSSocket).servername, url: req.url });
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ major: "1", minor: "32", gitVersion: "v1.32.0-abc", platform: "linux/amd64" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const serverUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}/clusters/abc`;
  const text = renderKubeconfig({ clusterName: "abc", server: serverUrl, caCertPem: ca.certPem, user: "admin", token: "t", tlsServerName: "api.cluster-abc.internal" });
  assert.equal(parse(text).clusters[0].cluster["tls-server-name"], "api.cluster-abc.internal");
  assert.deepEqual(parseKubeconfig(text), { contextName: "admin@abc", server: serverUrl, caCertPem: ca.certPem, token: "t", tlsServerName: "api.cluster-abc.internal" });

  const file = join(dir, "kubeconfig");
  writeFileSync(file, text);
  const version = JSON.parse(await kubectl(dir, ["--kubeconfig", file, "version", "-o", "json"]));
  assert.equal(version.serverVersion.gitVersion, "v1.32.0-abc");
  assert.equal(seen.at(-1)?.servername, "api.cluster-abc.internal");
  assert.equal(seen.at(-1)?.url?.split("?")[0], "/clusters/abc/version");
});

const clusterA = renderKubeconfig({ clusterName: "a", server: "https://a.example:6443", caCertPem: ca.certPem, user: "admin-a", token: "ta", context: "a" });
const clusterB = renderKubeconfig({ clusterName: "b", server: "https://b.example:6443", caCertPem: ca.certPem, user: "admin-b", token: "tb", context: "b" });

test("merging adds the new cluster, user and context and keeps the current context", () => {
  const merged = mergeKubeconfig(clusterA, clusterB);
  const doc = parse(merged);
  assert.deepEqual(doc.clusters.map((c: { name: string }) => c.name), ["a", "b"]);
  assert.deepEqual(doc.users.map((u: { name: string }) => u.name), ["admin-a", "admin-b"]);
  assert.deepEqual(doc.contexts.map((c: { name: string }) => c.name), ["a", "b"]);
  assert.equal(parseKubeconfig(merged).server, "https://a.example:6443");
  assert.equal(parseKubeconfig(merged, { context: "b" }).token, "tb");
});

test("merging replaces entries of the same name and fills an absent current context", () => {
  const renewed = renderKubeconfig({ clusterName: "a", server: "https://a2.example:6443", caCertPem: ca.certPem, user: "admin-a", token: "ta2", context: "a" });
  const merged = mergeKubeconfig(mergeKubeconfig(clusterA, clusterB), renewed);
  const doc = parse(merged);
  assert.equal(doc.clusters.length, 2);
  assert.deepEqual(parseKubeconfig(merged), { contextName: "a", server: "https://a2.example:6443", caCertPem: ca.certPem, token: "ta2" });

  assert.equal(mergeKubeconfig(undefined, clusterB), mergeKubeconfig("", clusterB));
  assert.equal(parseKubeconfig(mergeKubeconfig(undefined, clusterB)).contextName, "b");
  const noCurrent = "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\npreferences: {colors: true}\n";
  const filled = parse(mergeKubeconfig(noCurrent, clusterA));
  assert.equal(filled["current-context"], "a");
  assert.deepEqual(filled.preferences, { colors: true });
});

test("kubectl lists every context of a merged kubeconfig", { skip: kubectlMissing }, async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "config");
  writeFileSync(file, mergeKubeconfig(clusterA, clusterB));
  assert.deepEqual((await kubectl(dir, ["--kubeconfig", file, "config", "get-contexts", "-o", "name"])).trim().split("\n"), ["a", "b"]);
  assert.equal(
    await kubectl(dir, ["--kubeconfig", file, "--context", "b", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"]),
    "https://b.example:6443",
  );
});

test("unusable kubeconfigs are refused with a KubeconfigError naming the problem", () => {
  const expectError = (text: string, message: RegExp) =>
    assert.throws(() => parseKubeconfig(text), (error: unknown) => error instanceof KubeconfigError && message.test(error.message));
  const base = parse(clusterA);

  expectError("{ not yaml", /not valid YAML/);
  expectError("- a\n- b\n", /not a YAML mapping/);
  expectError("kind: Pod\n", /kind Pod/);
  expectError(JSON.stringify({ ...base, "current-context": "" }), /no current-context/);
  expectError(JSON.stringify({ ...base, "current-context": "missing" }), /no context named "missing"/);
  expectError(JSON.stringify({ ...base, clusters: [] }), /no cluster named "a"/);
  expectError(JSON.stringify({ ...base, users: [] }), /no user named "admin-a"/);
  expectError(
    JSON.stringify({ ...base, clusters: [{ name: "a", cluster: { server: "https://a", "certificate-authority": "/etc/ca.crt" } }] }),
    /certificate-authority file/,
  );
  expectError(JSON.stringify({ ...base, clusters: [{ name: "a", cluster: { "certificate-authority-data": "eA==" } }] }), /server is missing/);
  expectError(JSON.stringify({ ...base, clusters: [{ name: "a", cluster: { server: "https://a", "certificate-authority-data": "!!" } }] }), /not base64/);
  expectError(JSON.stringify({ ...base, users: [{ name: "admin-a", user: { "client-certificate-data": "eA==" } }] }), /needs both/);
  expectError(JSON.stringify({ ...base, users: [{ name: "admin-a", user: { "client-key": "/k" } }] }), /names a file/);
  assert.throws(() => mergeKubeconfig("clusters: 3\n", clusterA), /clusters is not a list/);
});
