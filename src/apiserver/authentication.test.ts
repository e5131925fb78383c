import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from "../bootstrap/pki.ts";
import type { FastifyRequest } from "fastify";
import { AuthenticatorChain, bearerToken, ClientCertificates, credentialsOf, StaticTokenAuthenticator, type Credentials } from "./authentication.ts";

function withToken(authorization?: string): Credentials {
  return { authorization, clientCertificate: () => undefined };
}

function withCertificate(pem: string): Credentials {
  const cert = new X509Certificate(pem);
  return { clientCertificate: () => ({ raw: cert.raw, fingerprint256: cert.fingerprint256 }) };
}

describe("authentication", () => {
  let ca: KeyPairPem;
  let otherCa: KeyPairPem;
  let alice: KeyPairPem;

  before(async () => {
    ca = await createCertificateAuthority({ commonName: "cluster-a" });
    otherCa = await createCertificateAuthority({ commonName: "cluster-b" });
    alice = await issueCertificate(ca, { commonName: "alice", organizations: ["team-a", "viewers"], usages: ["client"] });
  });

  it("reads the token of an Authorization: Bearer header, and nothing else", () => {
    assert.equal(bearerToken("Bearer abc"), "abc");
    assert.equal(bearerToken("bearer  abc "), "abc");
    for (const header of [undefined, "", "Bearer", "Basic abc", "Bearer abc def"]) assert.equal(bearerToken(header), undefined, String(header));
  });

  it("knows a static token's identity, and adds system:authenticated to every identity it names", async () => {
    const chain = new AuthenticatorChain([new StaticTokenAuthenticator([["s3cret-token", { user: "admin", groups: ["system:masters"] }]])]);
    assert.deepEqual(await chain.authenticate(withToken("Bearer s3cret-token")), { user: "admin", groups: ["system:masters", "system:authenticated"] });
    for (const header of [undefined, "Bearer s3cret-tokem", "Bearer s3cret", "Basic s3cret-token"]) {
      assert.equal(await chain.authenticate(withToken(header)), undefined, String(header));
    }
  });

  it("takes a client certificate's CN as the user and its O entries as groups, when the CA issued it", async () => {
    const certificates = new ClientCertificates();
    const chain = new AuthenticatorChain([new StaticTokenAuthenticator([["t", { user: "admin", groups: [] }]]), certificates.issuedBy("a", ca.certPem)]);
    assert.deepEqual(await chain.authenticate(withCertificate(alice.certPem)), { user: "alice", groups: ["team-a", "viewers", "system:authenticated"] });
    assert.equal(await chain.authenticate(withToken()), undefined, "no certificate, no token");
    const elsewhere = new AuthenticatorChain([certificates.issuedBy("b", otherCa.certPem)]);
    assert.equal(await elsewhere.authenticate(withCertificate(alice.certPem)), undefined, "another cluster's CA did not issue it");
    const stranger = await issueCertificate(otherCa, { commonName: "mallory", organizations: ["system:masters"], usages: ["client"] });
    assert.equal(await chain.authenticate(withCertificate(stranger.certPem)), undefined);
    assert.equal(await chain.authenticate(withCertificate(ca.certPem)), undefined, "the CA is not a client");
    const serving = await issueCertificate(ca, { commonName: "kube-apiserver", dnsNames: ["localhost"], usages: ["server"] });
    assert.equal(await chain.authenticate(withCertificate(serving.certPem)), undefined, "a serving certificate is not a client's");
  });

  it("forgets what it verified against a CA that is gone", async () => {
    const certificates = new ClientCertificates();
    const first = await certificates.issuedBy("a", ca.certPem).authenticate(withCertificate(alice.certPem));
    assert.equal(first?.user, "alice");
    certificates.forget("a");
    // The id now names another CA: the certificate is checked again, against it.
    assert.equal(await certificates.issuedBy("a", otherCa.certPem).authenticate(withCertificate(alice.certPem)), undefined);
  });

  it("verifies a certificate once per CA however many CAs it serves, and again when an id names another CA", async () => {
    const thirdCa = await createCertificateAuthority({ commonName: "cluster-c" });
    const bob = await issueCertificate(otherCa, { commonName: "bob", usages: ["client"] });
    const carol = await issueCertificate(thirdCa, { commonName: "carol", usages: ["client"] });
    // One certificate kept per CA: with one cache across CAs, each would push out the one before.
    const certificates = new ClientCertificates({ certificatesPerAuthority: 1 });
    const clients: [string, KeyPairPem, KeyPairPem, string][] = [["a", ca, alice, "alice"], ["b", otherCa, bob, "bob"], ["c", thirdCa, carol, "carol"]];
    for (let round = 0; round < 3; round++) {
      for (const [id, authority, client, user] of clients) {
        const identity = await certificates.issuedBy(id, authority.certPem).authenticate(withCertificate(client.certPem));
        assert.equal(identity?.user, user);
      }
    }
    assert.equal(certificates.verifications, 3);
    assert.equal(await certificates.issuedBy("a", otherCa.certPem).authenticate(withCertificate(alice.certPem)), undefined, "a was re-created with another CA");
    assert.equal(certificates.verifications, 4);
  });

  it("reads the client certificate of a TLS 1.3 connection once, and of an older one on every request", () => {
    const raw = new X509Certificate(alice.certPem).raw;
    const reads = { "TLSv1.3": 0, "TLSv1.2": 0 };
    const connection = (protocol: keyof typeof reads) => ({
      getProtocol: () => protocol,
      getPeerCertificate: () => {
        reads[protocol]++;
        return { raw, fingerprint256: "AA:BB" };
      },
    });
    const request = (socket: object) => ({ headers: {}, raw: { socket } }) as unknown as FastifyRequest;
    for (const protocol of ["TLSv1.3", "TLSv1.2"] as const) {
      const socket = connection(protocol);
      for (let i = 0; i < 3; i++) assert.equal(credentialsOf(request(socket)).clientCertificate()?.fingerprint256, "AA:BB");
    }
    assert.deepEqual(reads, { "TLSv1.3": 1, "TLSv1.2": 3 });
    const anonymous = { getProtocol: () => "TLSv1.3", getPeerCertificate: () => ({}) };
    assert.equal(credentialsOf(request(anonymous)).clientCertificate(), undefined);
    assert.equal(credentialsOf(request(anonymous)).clientCertificate(), undefined);
  });
});
