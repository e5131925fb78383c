import "reflect-metadata";
import { describe, it, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { X509Certificate, createHash, createSign, createVerify, createPrivateKey, generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { createServer, request } from "node:https";
import type { Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from "node:tls";
import * as x509 from "@peculiar/x509";
import {
  PkiError,
  caCertHash,
  certificateInfo,
  certificateRequestSubject,
  createCertificateRequest,
  createIntermediateCertificateAuthority,
  signCertificateRequest,
  clientCertificateIdentity,
  clientTlsOptions,
  createBootstrapToken,
  createCertificateAuthority,
  createServiceAccountKeyPair,
  isValidBootstrapToken,
  issueCertificate,
  keyMatchesCertificate,
  serverTlsOptions,
  verifyIssuedBy,
} from "./pki.ts";
import type { ClientTlsOptions, KeyPairPem } from "./pki.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const opensslMissing = !hasOpenssl();

function withTempDir<T>(body: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), "slipway-pki-"));
  try {
    return body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("a CA is self-signed, marked CA with the kubeadm key usages, and valid from 5 minutes ago", async () => {
  const before = Date.now();
  const ca = await createCertificateAuthority({ commonName: "kubernetes", organization: "slipway", validityDays: 30 });
  const info = certificateInfo(ca.certPem);
  assert.equal(info.commonName, "kubernetes");
  assert.deepEqual(info.organizations, ["slipway"]);
  assert.equal(info.issuer, info.subject);
  assert.equal(info.isCA, true);
  assert.match(info.serialNumber, /^[0-9a-f]{32}$/);
  // Certificates carry whole seconds.
  assert.ok(Math.abs(info.notBefore.getTime() - (before - 5 * 60 * 1000)) < 5000);
  assert.ok(Math.abs(info.notAfter.getTime() - (before + 30 * DAY_MS)) < 5000);
  assert.match(ca.keyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  assert.equal(keyMatchesCertificate(ca), true);

  const cert = new x509.X509Certificate(ca.certPem);
  const basic = cert.getExtension(x509.BasicConstraintsExtension);
  assert.equal(basic?.critical, true);
  const usages = cert.getExtension(x509.KeyUsagesExtension);
  assert.equal(usages?.critical, true);
  assert.equal(
    usages?.usages,
    x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
  );
  assert.ok(cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId);
  assert.equal(await verifyIssuedBy(ca.certPem, ca.certPem), true);
});

test("two CAs get different serial numbers and keys", async () => {
  const [a, b] = await Promise.all([
    createCertificateAuthority({ commonName: "etcd-ca" }),
    createCertificateAuthority({ commonName: "etcd-ca" }),
  ]);
  assert.notEqual(certificateInfo(a.certPem).serialNumber, certificateInfo(b.certPem).serialNumber);
  assert.notEqual(caCertHash(a.certPem), caCertHash(b.certPem));
  assert.equal(keyMatchesCertificate({ certPem: a.certPem, keyPem: b.keyPem }), false);
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }) as string;
  assert.equal(keyMatchesCertificate({ certPem: a.certPem, keyPem: rsa }), false, "a key of another type");
  assert.throws(() => keyMatchesCertificate({ certPem: a.certPem, keyPem: "not a key" }), PkiError);
  assert.throws(() => keyMatchesCertificate({ certPem: "not a certificate", keyPem: a.keyPem }), PkiError);
});

test("an issued certificate carries its names, groups and usages and chains to its CA", async () => {
  const ca = await createCertificateAuthority({ commonName: "kubernetes" });
  const leaf = await issueCertificate(ca, {
    commonName: "kube-apiserver",
    organizations: ["system:masters", "ops team"],
    dnsNames: ["localhost", "kubernetes.default.svc.cluster.local"],
    ipAddresses: ["127.0.0.1", "10.96.0.1", "::1"],
    usages: ["server", "client"],
    validityDays: 10,
  });
  const info = certificateInfo(leaf.certPem);
  assert.equal(info.commonName, "kube-apiserver");
  assert.deepEqual(info.organizations, ["system:masters", "ops team"]);
  assert.deepEqual(info.dnsNames, ["localhost", "kubernetes.default.svc.cluster.local"]);
  assert.deepEqual(info.ipAddresses, ["127.0.0.1", "10.96.0.1", "::1"]);
  assert.equal(info.isCA, false);
  assert.equal(info.issuer, certificateInfo(ca.certPem).subject);
  assert.ok(Math.abs(info.notAfter.getTime() - Date.now() - 10 * DAY_MS) < 5000);
  assert.equal(keyMatchesCertificate(leaf), true);

  const cert = new x509.X509Certificate(leaf.certPem);
  assert.deepEqual([...(cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? [])], [
    x509.ExtendedKeyUsage.serverAuth,
    x509.ExtendedKeyUsage.clientAuth,
  ]);
  const caKeyId = new x509.X509Certificate(ca.certPem).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
  assert.equal(cert.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId, caKeyId);

  // Node's own X.509 parser (OpenSSL) agrees.
  const native = new X509Certificate(leaf.certPem);
  assert.equal(native.checkIssued(new X509Certificate(ca.certPem)), true);
  assert.equal(native.checkHost("kubernetes.default.svc.cluster.local"), "kubernetes.default.svc.cluster.local");
  assert.equal(native.checkIP("10.96.0.1"), "10.96.0.1");
  assert.equal(native.checkHost("example.com"), undefined);

  assert.equal(await verifyIssuedBy(leaf.certPem, ca.certPem), true);
});

test("verification fails for another CA, outside the validity period, and for a non-CA issuer", async () => {
  const ca = await createCertificateAuthority({ commonName: "kubernetes", validityDays: 100 });
  const otherWithSameName = await createCertificateAuthority({ commonName: "kubernetes" });
  const leaf = await issueCertificate(ca, { commonName: "admin", usages: ["client"], validityDays: 5 });
  assert.equal(await verifyIssuedBy(leaf.certPem, otherWithSameName.certPem), false);
  assert.equal(await verifyIssuedBy(leaf.certPem, ca.certPem, new Date(Date.now() + 6 * DAY_MS)), false);
  assert.equal(await verifyIssuedBy(leaf.certPem, ca.certPem, new Date(Date.now() - DAY_MS)), false);
  assert.equal(await verifyIssuedBy(leaf.certPem, ca.certPem, new Date(Date.now() + 4 * DAY_MS)), true);

  // A leaf asked to outlive its CA ends with the CA.
  const long = await issueCertificate(ca, { commonName: "long", usages: ["client"], validityDays: 1000 });
  assert.equal(certificateInfo(long.certPem).notAfter.getTime(), certificateInfo(ca.certPem).notAfter.getTime());

  // A leaf's key cannot act as a CA: what it signs is refused.
  const server = await issueCertificate(ca, { commonName: "server", usages: ["server"] });
  const forged = await issueCertificate(server, { commonName: "forged", usages: ["client"] });
  assert.equal(await verifyIssuedBy(forged.certPem, server.certPem), false);
});

test("malformed input is refused with PkiError", async () => {
  const ca = await createCertificateAuthority({ commonName: "kubernetes" });
  assert.throws(() => certificateInfo("not a certificate"), PkiError);
  assert.throws(() => caCertHash(""), PkiError);
  await assert.rejects(verifyIssuedBy("garbage", ca.certPem), PkiError);
  await assert.rejects(createCertificateAuthority({ commonName: " " }), PkiError);
  await assert.rejects(createCertificateAuthority({ commonName: "x", validityDays: 0 }), PkiError);
  await assert.rejects(issueCertificate(ca, { commonName: "x", usages: [] }), /at least one usage/);
  await assert.rejects(issueCertificate(ca, { commonName: "x", usages: ["server"], ipAddresses: ["300.1.1.1"] }), /not an IP address/);
  await assert.rejects(issueCertificate(ca, { commonName: "x", usages: ["server"], dnsNames: ["bad name"] }), /not a DNS name/);
  await assert.rejects(issueCertificate({ certPem: ca.certPem, keyPem: "nope" }, { commonName: "x", usages: ["server"] }), PkiError);
});

test("CAs signing in turn, their keys kept once imported, each sign with their own; a bad key is refused every time", async () => {
  const cas = await Promise.all([1, 2, 3].map((i) => createCertificateAuthority({ commonName: `ca-${i}` })));
  for (let round = 0; round < 3; round++) {
    const leaves = await Promise.all(cas.map((ca, i) => issueCertificate(ca, { commonName: `leaf-${i}-${round}`, usages: ["client"] })));
    for (const [i, leaf] of leaves.entries()) {
      for (const [j, ca] of cas.entries()) assert.equal(await verifyIssuedBy(leaf.certPem, ca.certPem), i === j, `round ${round}: leaf of CA ${i} against CA ${j}`);
    }
  }
  const broken = { certPem: cas[0]!.certPem, keyPem: "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n" };
  for (let i = 0; i < 2; i++) await assert.rejects(issueCertificate(broken, { commonName: "x", usages: ["client"] }), /the CA private key is not valid PEM/);
});

test("caCertHash is kubeadm's sha256 of the CA's SubjectPublicKeyInfo", async () => {
  const ca = await createCertificateAuthority({ commonName: "kubernetes" });
  const spki = new X509Certificate(ca.certPem).publicKey.export({ type: "spki", format: "der" });
  const expected = "sha256:" + createHash("sha256").update(spki).digest("hex");
  assert.equal(caCertHash(ca.certPem), expected);
  assert.match(caCertHash(ca.certPem), /^sha256:[0-9a-f]{64}$/);
});

test("caCertHash matches the openssl pipeline kubeadm documents", { skip: opensslMissing }, async () => {
  const ca = await createCertificateAuthority({ commonName: "kubernetes" });
  const pubkey = execFileSync("openssl", ["x509", "-pubkey", "-noout"], { input: ca.certPem });
  const der = execFileSync("openssl", ["pkey", "-pubin", "-outform", "der"], { input: pubkey });
  assert.equal(caCertHash(ca.certPem), "sha256:" + createHash("sha256").update(der).digest("hex"));
});

test("openssl accepts the chain for TLS server and client purposes", { skip: opensslMissing }, async () => {
  const ca = await createCertificateAuthority({ commonName: "kubernetes" });
  const server = await issueCertificate(ca, { commonName: "apiserver", ipAddresses: ["127.0.0.1"], usages: ["server"] });
  const client = await issueCertificate(ca, { commonName: "admin", organizations: ["system:masters"], usages: ["client"] });
  withTempDir((dir) => {
    writeFileSync(join(dir, "ca.crt"), ca.certPem);
    writeFileSync(join(dir, "server.crt"), server.certPem);
    writeFileSync(join(dir, "client.crt"), client.certPem);
    const verify = (purpose: string, file: string) =>
      execFileSync("openssl", ["verify", "-purpose", purpose, "-CAfile", join(dir, "ca.crt"), join(dir, file)], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
    assert.match(verify("sslserver", "server.crt"), /OK/);
    assert.match(verify("sslclient", "client.crt"), /OK/);
    assert.throws(() => verify("sslserver", "client.crt"), /unsuitable certificate purpose|error/);
  });
});

test("a CA made by openssl with an RSA key (as kubeadm makes them) can issue certificates", { skip: opensslMissing }, async () => {
  const ca = withTempDir((dir): KeyPairPem => {
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "ca.key"), "-out", join(dir, "ca.crt"),
        "-days", "2", "-subj", "/CN=kubernetes", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"],
      { stdio: "ignore" },
    );
    // kubeadm writes PKCS#1 ("RSA PRIVATE KEY").
    const pkcs1 = createPrivateKey(readFileSync(join(dir, "ca.key"))).export({ type: "pkcs1", format: "pem" }).toString();
    return { certPem: readFileSync(join(dir, "ca.crt"), "utf8"), keyPem: pkcs1 };
  });
  const leaf = await issueCertificate(ca, { commonName: "worker-1", usages: ["client"] });
  assert.equal(await verifyIssuedBy(leaf.certPem, ca.certPem), true);
  assert.equal(new X509Certificate(leaf.certPem).checkIssued(new X509Certificate(ca.certPem)), true);
  assert.equal(keyMatchesCertificate(ca), true);
});

test("the service-account key pair is ECDSA P-256 and signs tokens (ES256) the public key verifies", async () => {
  const { publicKeyPem, privateKeyPem } = await createServiceAccountKeyPair();
  assert.match(publicKeyPem, /^-----BEGIN PUBLIC KEY-----\n/);
  assert.match(privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  const key = createPrivateKey(privateKeyPem);
  assert.equal(key.asymmetricKeyType, "ec");
  assert.equal(key.asymmetricKeyDetails?.namedCurve, "prime256v1");
  const payload = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZGVmYXVsdDpkZWZhdWx0In0";
  const signature = createSign("SHA256").update(payload).sign({ key: privateKeyPem, dsaEncoding: "ieee-p1363" });
  assert.equal(createVerify("SHA256").update(payload).verify({ key: publicKeyPem, dsaEncoding: "ieee-p1363" }, signature), true);
});

/** A reproducible byte source (xorshift32) for bootstrap tokens. */
function seededBytes(seed: number): (size: number) => Buffer {
  let state = seed >>> 0 || 1;
  return (size) => {
    const out = Buffer.alloc(size);
    for (let i = 0; i < size; i++) {
      state ^= state << 13;
      state >>>= 0;
      state ^= state >>> 17;
      state ^= state << 5;
      state >>>= 0;
      out[i] = state & 0xff;
    }
    return out;
  };
}

test("bootstrap tokens have kubeadm's format and are reproducible from a seeded source", () => {
  const token = createBootstrapToken();
  assert.match(token.token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
  assert.equal(token.token, `${token.id}.${token.secret}`);
  assert.equal(isValidBootstrapToken(token.token), true);
  assert.notEqual(createBootstrapToken().token, token.token);

  assert.deepEqual(createBootstrapToken(seededBytes(42)), createBootstrapToken(seededBytes(42)));
  assert.notEqual(createBootstrapToken(seededBytes(42)).token, createBootstrapToken(seededBytes(43)).token);

  // Bytes that would bias the alphabet are skipped, not folded onto it.
  let call = 0;
  const skewed = (): Buffer => (call++ === 0 ? Buffer.from([252, 253, 254, 255, 0, 1]) : Buffer.alloc(22, 35));
  assert.equal(createBootstrapToken(skewed).token, "ab9999.9999999999999999");

  assert.throws(() => createBootstrapToken(() => Buffer.alloc(0)), PkiError);
});

test("isValidBootstrapToken refuses anything but [a-z0-9]{6}.[a-z0-9]{16}", () => {
  assert.equal(isValidBootstrapToken("abcdef.0123456789abcdef"), true);
  for (const bad of ["", "abcdef0123456789abcdef", "ABCDEF.0123456789abcdef", "abcde.0123456789abcdef", "abcdef.0123456789abcdef0", "abcdef.0123456789abcde_", " abcdef.0123456789abcdef"]) {
    assert.equal(isValidBootstrapToken(bad), false, bad);
  }
});

// --- Node TLS ---------------------------------------------------------------------------------

interface Reply {
  status: number;
  body: string;
}

function get(port: number, options: ClientTlsOptions & { servername?: string }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/", method: "GET", agent: false, ...options }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

test("an https server with an issued certificate is trusted through the CA, by IP and by DNS name", async (t) => {
  const ca = await createCertificateAuthority({ commonName: "slipway-ca" });
  const stranger = await createCertificateAuthority({ commonName: "slipway-ca" });
  const serving = await issueCertificate(ca, {
    commonName: "slipway-apiserver",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
    usages: ["server"],
  });
  const server = createServer(serverTlsOptions(serving), (_req, res) => res.end("hello"));
  const port = await listen(server);
  t.after(() => close(server));

  assert.deepEqual(await get(port, clientTlsOptions(ca.certPem)), { status: 200, body: "hello" });
  assert.deepEqual(await get(port, { ...clientTlsOptions(ca.certPem), servername: "localhost" }), { status: 200, body: "hello" });
  await assert.rejects(get(port, { ...clientTlsOptions(ca.certPem), servername: "example.com" }), {
    code: "ERR_TLS_CERT_ALTNAME_INVALID",
  });
  await assert.rejects(get(port, clientTlsOptions(stranger.certPem)), (error: NodeJS.ErrnoException) => {
    assert.match(error.code ?? "", /UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_SIGNATURE_FAILURE/);
    return true;
  });
});

test("a server asking for client certificates reads the CN and O of one its CA issued", async (t) => {
  const ca = await createCertificateAuthority({ commonName: "slipway-ca" });
  const stranger = await createCertificateAuthority({ commonName: "slipway-ca" });
  const serving = await issueCertificate(ca, { commonName: "apiserver", ipAddresses: ["127.0.0.1"], usages: ["server"] });
  const admin = await issueCertificate(ca, { commonName: "kubernetes-admin", organizations: ["system:masters", "ops"], usages: ["client"] });
  const impostor = await issueCertificate(stranger, { commonName: "kubernetes-admin", organizations: ["system:masters"], usages: ["client"] });

  const server = createServer(serverTlsOptions(serving, { clientCaPem: ca.certPem }), (req, res) => {
    const socket = req.socket as TLSSocket;
    const peer = socket.getPeerCertificate();
    res.end(
      JSON.stringify({
        identity: clientCertificateIdentity(socket) ?? null,
        peerCN: socket.authorized ? peer.subject.CN : null,
      }),
    );
  });
  const port = await listen(server);
  t.after(() => close(server));

  const asAdmin = await get(port, clientTlsOptions(ca.certPem, admin));
  assert.deepEqual(JSON.parse(asAdmin.body), {
    identity: { commonName: "kubernetes-admin", organizations: ["system:masters", "ops"] },
    peerCN: "kubernetes-admin",
  });
  // Without a certificate, or with one from another CA, the request goes through unauthenticated.
  assert.deepEqual(JSON.parse((await get(port, clientTlsOptions(ca.certPem))).body), { identity: null, peerCN: null });
  assert.deepEqual(JSON.parse((await get(port, clientTlsOptions(ca.certPem, impostor))).body), { identity: null, peerCN: null });

  const strict = createServer(serverTlsOptions(serving, { clientCaPem: ca.certPem, requireClientCert: true }), (req, res) =>
    res.end(clientCertificateIdentity(req.socket as TLSSocket)?.commonName ?? "none"),
  );
  const strictPort = await listen(strict);
  t.after(() => close(strict));
  assert.equal((await get(strictPort, clientTlsOptions(ca.certPem, admin))).body, "kubernetes-admin");
  await assert.rejects(get(strictPort, clientTlsOptions(ca.certPem)));
  await assert.rejects(get(strictPort, clientTlsOptions(ca.certPem, impostor)));
});

describe("certificate signing requests and intermediate CAs", () => {
  it("signs a request for the subject and key it asks for, and refuses one that is not a request", async () => {
    const ca = await createCertificateAuthority({ commonName: "cluster-ca" });
    const { csrPem, keyPem } = await createCertificateRequest({ commonName: "alice", organizations: ["team-a"] });
    assert.deepEqual(await certificateRequestSubject(csrPem), { commonName: "alice", organizations: ["team-a"] });
    const certPem = await signCertificateRequest(ca, csrPem, { usages: ["client"], validityDays: 30 });
    const info = certificateInfo(certPem);
    assert.deepEqual([info.commonName, info.organizations, info.isCA], ["alice", ["team-a"], false]);
    assert.equal(await verifyIssuedBy(certPem, ca.certPem), true);
    assert.equal(keyMatchesCertificate({ certPem, keyPem }), true);
    await assert.rejects(signCertificateRequest(ca, ca.certPem, { usages: ["client"] }), PkiError);
  });

  it("makes an intermediate CA that its parent signed and that signs certificates in turn", async () => {
    const root = await createCertificateAuthority({ commonName: "slipway-root" });
    const intermediate = await createIntermediateCertificateAuthority(root, { commonName: "team-a-mesh" });
    assert.equal(certificateInfo(intermediate.certPem).isCA, true);
    assert.equal(await verifyIssuedBy(intermediate.certPem, root.certPem), true);
    const leaf = await issueCertificate(intermediate, { commonName: "workload", usages: ["server", "client"] });
    assert.equal(await verifyIssuedBy(leaf.certPem, intermediate.certPem), true);
  });
});

test("the server speaks TLS 1.3, or TLS 1.2 with AEAD ciphers only", async (t) => {
  const ca = await createCertificateAuthority({ commonName: "slipway-ca" });
  const serving = await issueCertificate(ca, { commonName: "apiserver", ipAddresses: ["127.0.0.1"], usages: ["server"] });
  const server = createServer(serverTlsOptions(serving), (_req, res) => res.end("hello"));
  const port = await listen(server);
  t.after(() => close(server));
  const handshake = (options: ConnectionOptions) =>
    new Promise<{ protocol: string | null; cipher: string }>((resolve, reject) => {
      const socket = tlsConnect({ host: "127.0.0.1", port, ca: ca.certPem, ...options }, () => {
        resolve({ protocol: socket.getProtocol(), cipher: socket.getCipher().name });
        socket.end();
      });
      socket.on("error", reject);
    });
  assert.equal((await handshake({})).protocol, "TLSv1.3");
  assert.match((await handshake({ maxVersion: "TLSv1.2" })).cipher, /GCM|CHACHA20/);
  await assert.rejects(handshake({ maxVersion: "TLSv1.2", ciphers: "ECDHE-RSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA256:AES128-SHA" }));
  await assert.rejects(handshake({ minVersion: "TLSv1.1", maxVersion: "TLSv1.1", ciphers: "DEFAULT@SECLEVEL=0" }));
});
