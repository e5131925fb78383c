// Certificates and keys for Slipway's own HTTPS and for every workload cluster's PKI
// (cluster CA, front-proxy CA, etcd CA, service-account keys, admin client certificates),
// plus the kubeadm join data derived from them (bootstrap tokens, CA certificate hashes).
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { createHash, createPrivateKey, generateKeyPair, randomBytes, webcrypto, X509Certificate, type KeyObject } from "node:crypto";
import { isIP } from "node:net";
import type { TLSSocket } from "node:tls";
import { BoundedCache } from "../api/bounded-cache.ts";

// The library finds no WebCrypto by itself on Node; every call below uses this one.
const subtleCrypto = webcrypto as unknown as Crypto;
x509.cryptoProvider.set(subtleCrypto);

const DAY_MS = 24 * 60 * 60 * 1000;
/** Tolerates clocks a little behind ours, as kubeadm does. */
const BACKDATE_MS = 5 * 60 * 1000;
const DEFAULT_CA_VALIDITY_DAYS = 3650;
const DEFAULT_LEAF_VALIDITY_DAYS = 365;
const EC_KEY_ALGORITHM: EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };

export class PkiError extends Error {
  override readonly name = "PkiError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A certificate and its private key, both PEM; the key is PKCS#8 ("PRIVATE KEY"). */
export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthorityOptions {
  commonName: string;
  validityDays?: number;
  organization?: string;
}

export type CertificateUsage = "server" | "client";

export interface CertificateOptions {
  commonName: string;
  /** Become the user's groups when the certificate authenticates a client. */
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usages: CertificateUsage[];
  validityDays?: number;
}

export interface CertificateInfo {
  subject: string;
  commonName: string;
  organizations: string[];
  issuer: string;
  notBefore: Date;
  notAfter: Date;
  dnsNames: string[];
  ipAddresses: string[];
  isCA: boolean;
  /** Lower-case hexadecimal. */
  serialNumber: string;
}

export async function createCertificateAuthority(options: CertificateAuthorityOptions): Promise<KeyPairPem> {
  requireCommonName(options.commonName);
  const validityDays = validity(options.validityDays, DEFAULT_CA_VALIDITY_DAYS);
  const keys = await generateEcKeyPair();
  const name: x509.JsonName = [{ CN: [options.commonName] }];
  if (options.organization !== undefined) name.push({ O: [options.organization] });
  const notBefore = new Date(Date.now() - BACKDATE_MS);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomSerialNumber(),
      name,
      notBefore,
      notAfter: new Date(notBefore.getTime() + BACKDATE_MS + validityDays * DAY_MS),
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, subtleCrypto),
      ],
    },
    subtleCrypto,
  );
  return { certPem: cert.toString("pem") + "\n", keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/** Issues a leaf certificate signed by `ca`; it never outlives the CA. */
export async function issueCertificate(ca: KeyPairPem, options: CertificateOptions): Promise<KeyPairPem> {
  requireCommonName(options.commonName);
  const keys = await generateEcKeyPair();
  const subject: x509.JsonName = [{ CN: [options.commonName] }];
  for (const organization of options.organizations ?? []) subject.push({ O: [organization] });
  const certPem = await signLeaf(ca, new x509.Name(subject), keys.publicKey, options);
  return { certPem, keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/** A leaf certificate for `publicKey` and `subject`, signed by `ca`, never outliving it. */
async function signLeaf(ca: KeyPairPem, subject: x509.Name, publicKey: CryptoKey | x509.PublicKey, options: Omit<CertificateOptions, "commonName" | "organizations">): Promise<string> {
  if (options.usages.length === 0) throw new PkiError("a certificate needs at least one usage (server or client)");
  for (const ip of options.ipAddresses ?? []) {
    if (isIP(ip) === 0) throw new PkiError(`"${ip}" is not an IP address`);
  }
  for (const dns of options.dnsNames ?? []) {
    if (!/^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(dns)) throw new PkiError(`"${dns}" is not a DNS name`);
  }
  const validityDays = validity(options.validityDays, DEFAULT_LEAF_VALIDITY_DAYS);
  const caCert = parseCertificate(ca.certPem);
  const caKey = await importSigningKey(ca.keyPem);
  const notBefore = new Date(Date.now() - BACKDATE_MS);
  const requestedEnd = notBefore.getTime() + BACKDATE_MS + validityDays * DAY_MS;
  const notAfter = new Date(Math.min(requestedEnd, caCert.notAfter.getTime()));

  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension(
      options.usages.map((usage) => (usage === "server" ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth)),
      false,
    ),
    await x509.SubjectKeyIdentifierExtension.create(publicKey, false, subtleCrypto),
    await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey, false, subtleCrypto),
  ];
  const altNames: x509.JsonGeneralNames = [
    ...(options.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  if (altNames.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(altNames, false));

  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: randomSerialNumber(),
      subject,
      issuer: caCert.subjectName,
      notBefore,
      notAfter,
      publicKey,
      signingKey: caKey.key,
      signingAlgorithm: caKey.signingAlgorithm,
      extensions,
    },
    subtleCrypto,
  );
  return cert.toString("pem") + "\n";
}

/** A PKCS#10 certificate signing request for a client identity (CN = user, O = groups) and its new key. */
export async function createCertificateRequest(options: { commonName: string; organizations?: string[] }): Promise<{ csrPem: string; keyPem: string }> {
  requireCommonName(options.commonName);
  const keys = await generateEcKeyPair();
  const name: x509.JsonName = [{ CN: [options.commonName] }];
  for (const organization of options.organizations ?? []) name.push({ O: [organization] });
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name, keys, signingAlgorithm: { name: "ECDSA", hash: "SHA-256" } }, subtleCrypto);
  return { csrPem: csr.toString("pem") + "\n", keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/** The subject a certificate signing request asks for, after checking its signature (PkiError if it is not a valid request). */
export async function certificateRequestSubject(csrPem: string): Promise<{ commonName: string; organizations: string[] }> {
  const csr = parseCertificateRequest(csrPem);
  if (!(await csr.verify(subtleCrypto))) throw new PkiError("the certificate signing request's signature does not verify");
  return { commonName: csr.subjectName.getField("CN")[0] ?? "", organizations: csr.subjectName.getField("O") };
}

/** Signs a certificate signing request with `ca`: the subject and key it asks for, the usages given here. */
export async function signCertificateRequest(ca: KeyPairPem, csrPem: string, options: { usages: CertificateUsage[]; validityDays?: number }): Promise<string> {
  const subject = await certificateRequestSubject(csrPem);
  requireCommonName(subject.commonName);
  const csr = parseCertificateRequest(csrPem);
  return signLeaf(ca, csr.subjectName, await csr.publicKey.export(subtleCrypto), options);
}

/** A CA whose certificate `parent` signs (an intermediate), e.g. one per logical cloud under Slipway's root. */
export async function createIntermediateCertificateAuthority(parent: KeyPairPem, options: CertificateAuthorityOptions): Promise<KeyPairPem> {
  requireCommonName(options.commonName);
  const validityDays = validity(options.validityDays, DEFAULT_CA_VALIDITY_DAYS);
  const parentCert = parseCertificate(parent.certPem);
  const parentKey = await importSigningKey(parent.keyPem);
  const keys = await generateEcKeyPair();
  const subject: x509.JsonName = [{ CN: [options.commonName] }];
  if (options.organization !== undefined) subject.push({ O: [options.organization] });
  const notBefore = new Date(Date.now() - BACKDATE_MS);
  const notAfter = new Date(Math.min(notBefore.getTime() + BACKDATE_MS + validityDays * DAY_MS, parentCert.notAfter.getTime()));
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: randomSerialNumber(),
      subject,
      issuer: parentCert.subjectName,
      notBefore,
      notAfter,
      publicKey: keys.publicKey,
      signingKey: parentKey.key,
      signingAlgorithm: parentKey.signingAlgorithm,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, subtleCrypto),
        await x509.AuthorityKeyIdentifierExtension.create(parentCert.publicKey, false, subtleCrypto),
      ],
    },
    subtleCrypto,
  );
  return { certPem: cert.toString("pem") + "\n", keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/**
 * The key pair the API server signs service-account tokens with: ECDSA P-256 (ES256 tokens), as kubeadm
 * makes it with `encryptionAlgorithm: ECDSA-P256`. An RSA 2048 key costs a few hundred milliseconds of CPU
 * to generate; a P-256 key well under one, which is what lets one control plane make thousands of clusters.
 */
export async function createServiceAccountKeyPair(): Promise<{ publicKeyPem: string; privateKeyPem: string }> {
  return new Promise((resolve, reject) => {
    generateKeyPair(
      "ec",
      { namedCurve: "P-256", publicKeyEncoding: { type: "spki", format: "pem" }, privateKeyEncoding: { type: "pkcs8", format: "pem" } },
      (error, publicKeyPem, privateKeyPem) => {
        if (error) reject(new PkiError("could not generate the service-account key pair", { cause: error }));
        else resolve({ publicKeyPem, privateKeyPem });
      },
    );
  });
}

/** The hashes of the CA certificates most recently hashed, by PEM (a cluster's machines share one CA). */
const recentCaHashes = new BoundedCache<string>(1024);

/** kubeadm's --discovery-token-ca-cert-hash: SHA-256 of the CA certificate's DER SubjectPublicKeyInfo. */
export function caCertHash(caCertPem: string): string {
  const known = recentCaHashes.get(caCertPem);
  if (known !== undefined) return known;
  // Node's own parser: a join is rendered for every machine, and this is several times cheaper than
  // the ASN.1 decoding of the x509 library.
  let spki: Buffer;
  try {
    spki = new X509Certificate(caCertPem).publicKey.export({ type: "spki", format: "der" });
  } catch (error) {
    throw new PkiError("not a valid PEM certificate", { cause: error });
  }
  const hash = "sha256:" + createHash("sha256").update(spki).digest("hex");
  recentCaHashes.set(caCertPem, hash);
  return hash;
}

export function certificateInfo(certPem: string): CertificateInfo {
  const cert = parseCertificate(certPem);
  const altNames = cert.getExtension(x509.SubjectAlternativeNameExtension)?.names.items ?? [];
  return {
    subject: cert.subject,
    commonName: cert.subjectName.getField("CN")[0] ?? "",
    organizations: cert.subjectName.getField("O"),
    issuer: cert.issuer,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    dnsNames: altNames.filter((name) => name.type === "dns").map((name) => name.value),
    ipAddresses: altNames.filter((name) => name.type === "ip").map((name) => name.value),
    isCA: cert.getExtension(x509.BasicConstraintsExtension)?.ca ?? false,
    serialNumber: cert.serialNumber.toLowerCase(),
  };
}

/**
 * True when `certPem` carries a valid signature of the CA in `caCertPem`, names that CA as its
 * issuer, and both certificates are within their validity period at `at` (default now).
 */
export async function verifyIssuedBy(certPem: string, caCertPem: string, at: Date = new Date()): Promise<boolean> {
  const cert = parseCertificate(certPem);
  const ca = parseCertificate(caCertPem);
  if (!(ca.getExtension(x509.BasicConstraintsExtension)?.ca ?? false)) return false;
  if (cert.issuer !== ca.subject) return false;
  for (const c of [cert, ca]) {
    if (at < c.notBefore || at > c.notAfter) return false;
  }
  return cert.verify({ publicKey: ca.publicKey, signatureOnly: true }, subtleCrypto);
}

/** True when the private key in `pair.keyPem` belongs to the certificate in `pair.certPem`. */
export function keyMatchesCertificate(pair: KeyPairPem): boolean {
  // Node's own parser and OpenSSL's check: the kubeadm emulator checks each CA of a cluster it initialises,
  // and the ASN.1 decoding of the x509 library cost more than the check itself.
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.certPem);
  } catch (error) {
    throw new PkiError("not a valid PEM certificate", { cause: error });
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(pair.keyPem);
  } catch (error) {
    throw new PkiError("the private key is not valid PEM", { cause: error });
  }
  return cert.checkPrivateKey(key);
}

// --- bootstrap tokens --------------------------------------------------------------------------

const TOKEN_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const BOOTSTRAP_TOKEN_PATTERN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;

export interface BootstrapToken {
  id: string;
  secret: string;
  /** `id.secret`, what `kubeadm join --token` takes. */
  token: string;
}

/**
 * A kubeadm bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`). `random` returns random bytes (it is
 * asked for `size` of them, but any non-empty buffer will do); pass a seeded one for reproducibility.
 */
export function createBootstrapToken(random: (size: number) => Buffer = randomBytes): BootstrapToken {
  const wanted = 6 + 16;
  // Bytes at or above the largest multiple of 36 are dropped so that every character is equally likely.
  const limit = 256 - (256 % TOKEN_ALPHABET.length);
  let chars = "";
  for (let draws = 0; chars.length < wanted; draws++) {
    if (draws > 1000) throw new PkiError("the random source for the bootstrap token returns no usable bytes");
    for (const byte of random(wanted)) {
      if (byte >= limit) continue;
      chars += TOKEN_ALPHABET[byte % TOKEN_ALPHABET.length];
      if (chars.length === wanted) break;
    }
  }
  const id = chars.slice(0, 6);
  const secret = chars.slice(6);
  return { id, secret, token: `${id}.${secret}` };
}

export function isValidBootstrapToken(token: string): boolean {
  return BOOTSTRAP_TOKEN_PATTERN.test(token);
}

// --- Node TLS -----------------------------------------------------------------------------------

export interface ServerTlsOptions {
  key: string;
  cert: string;
  ca?: string;
  requestCert: boolean;
  rejectUnauthorized: boolean;
  minVersion: "TLSv1.2";
  ciphers: string;
  honorCipherOrder: boolean;
}

/**
 * TLS 1.3 (preferred) and TLS 1.2 with AEAD ciphers and forward secrecy only: no CBC, no RSA key
 * exchange, nothing older — what Kubernetes' own hardening guides ask of an API server.
 */
export const SERVER_CIPHERS = [
  "TLS_AES_128_GCM_SHA256",
  "TLS_AES_256_GCM_SHA384",
  "TLS_CHACHA20_POLY1305_SHA256",
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-RSA-CHACHA20-POLY1305",
].join(":");
const HARDENED = { minVersion: "TLSv1.2", ciphers: SERVER_CIPHERS, honorCipherOrder: true } as const;

/**
 * Options for `https.createServer` / `tls.createServer`. With `clientCaPem`, clients may present a
 * certificate issued by that CA (read it with `clientCertificateIdentity`); with `requireClientCert`
 * a client without one is refused during the handshake.
 */
export function serverTlsOptions(
  serving: KeyPairPem,
  clientAuth?: { clientCaPem: string; requireClientCert?: boolean },
): ServerTlsOptions {
  if (clientAuth === undefined) {
    return { key: serving.keyPem, cert: serving.certPem, requestCert: false, rejectUnauthorized: false, ...HARDENED };
  }
  return {
    ...HARDENED,
    key: serving.keyPem,
    cert: serving.certPem,
    ca: clientAuth.clientCaPem,
    requestCert: true,
    rejectUnauthorized: clientAuth.requireClientCert ?? false,
  };
}

export interface ClientTlsOptions {
  ca: string;
  cert?: string;
  key?: string;
}

/** Options for `https.request` / `tls.connect`: trust `caCertPem` only, optionally present `client`. */
export function clientTlsOptions(caCertPem: string, client?: KeyPairPem): ClientTlsOptions {
  return client === undefined ? { ca: caCertPem } : { ca: caCertPem, cert: client.certPem, key: client.keyPem };
}

/**
 * The identity in the client certificate of a server-side TLS socket: its CN (user name) and O
 * entries (groups). Undefined when the client sent none, or one the server's `ca` did not verify.
 */
export function clientCertificateIdentity(socket: TLSSocket): { commonName: string; organizations: string[] } | undefined {
  if (!socket.authorized) return undefined;
  const peer = socket.getPeerCertificate();
  if (peer === null || typeof peer !== "object" || !Buffer.isBuffer(peer.raw)) return undefined;
  const info = certificateInfo(derToPem(peer.raw));
  return { commonName: info.commonName, organizations: info.organizations };
}

/** PEM text of a DER certificate (as Node's `getPeerCertificate().raw` gives it). */
export function derToPem(der: Uint8Array): string {
  return x509.PemConverter.encode(new Uint8Array(der), "CERTIFICATE") + "\n";
}

// --- internals ----------------------------------------------------------------------------------

function requireCommonName(commonName: string): void {
  if (commonName.trim() === "") throw new PkiError("a certificate needs a non-empty common name");
}

function validity(days: number | undefined, fallback: number): number {
  const value = days ?? fallback;
  if (!Number.isFinite(value) || value <= 0) throw new PkiError(`validityDays must be a positive number, got ${value}`);
  return value;
}

/** 16 random bytes, positive and without a leading zero byte so the DER INTEGER keeps all 16. */
function randomSerialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return bytes.toString("hex");
}

async function generateEcKeyPair(): Promise<CryptoKeyPair> {
  return subtleCrypto.subtle.generateKey(EC_KEY_ALGORITHM, true, ["sign", "verify"]);
}

async function exportPrivateKeyPem(key: CryptoKey): Promise<string> {
  const der = await subtleCrypto.subtle.exportKey("pkcs8", key);
  return x509.PemConverter.encode(der, "PRIVATE KEY") + "\n";
}

function parseCertificateRequest(pem: string): x509.Pkcs10CertificateRequest {
  try {
    return new x509.Pkcs10CertificateRequest(pem);
  } catch (error) {
    throw new PkiError("not a valid PEM certificate signing request", { cause: error });
  }
}

function parseCertificate(pem: string): x509.X509Certificate {
  try {
    return new x509.X509Certificate(pem);
  } catch (error) {
    throw new PkiError("not a valid PEM certificate", { cause: error });
  }
}

interface SigningKey {
  key: CryptoKey;
  signingAlgorithm: EcdsaParams | Algorithm;
}

/**
 * The CA keys most recently imported, by the SHA-256 of their PEM (not the PEM itself): a CA signs a
 * dozen certificates for a new cluster, and parsing its PEM is most of what a signature costs.
 */
const recentSigningKeys = new BoundedCache<Promise<SigningKey>>(256);

/**
 * Imports a CA private key for signing. Any PEM Node reads is accepted (PKCS#8, SEC1 "EC PRIVATE
 * KEY", PKCS#1 "RSA PRIVATE KEY"), so CAs made by kubeadm or openssl can sign too.
 */
function importSigningKey(pem: string): Promise<SigningKey> {
  const id = createHash("sha256").update(pem).digest("base64");
  const known = recentSigningKeys.get(id);
  if (known !== undefined) return known;
  const imported = importSigningKeyOnce(pem);
  recentSigningKeys.set(id, imported);
  imported.catch(() => recentSigningKeys.delete(id));
  return imported;
}

async function importSigningKeyOnce(pem: string): Promise<SigningKey> {
  let keyObject;
  try {
    keyObject = createPrivateKey(pem);
  } catch (error) {
    throw new PkiError("the CA private key is not valid PEM", { cause: error });
  }
  const pkcs8 = keyObject.export({ type: "pkcs8", format: "der" });
  const der = new Uint8Array(pkcs8);
  if (keyObject.asymmetricKeyType === "ec") {
    const curve = keyObject.asymmetricKeyDetails?.namedCurve;
    const namedCurve = curve === "prime256v1" ? "P-256" : curve === "secp384r1" ? "P-384" : undefined;
    if (namedCurve === undefined) throw new PkiError(`unsupported CA key curve ${curve ?? "(unknown)"}`);
    const key = await subtleCrypto.subtle.importKey("pkcs8", der, { name: "ECDSA", namedCurve }, false, ["sign"]);
    return { key, signingAlgorithm: { name: "ECDSA", hash: namedCurve === "P-256" ? "SHA-256" : "SHA-384" } };
  }
  if (keyObject.asymmetricKeyType === "rsa") {
    const algorithm = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
    const key = await subtleCrypto.subtle.importKey("pkcs8", der, algorithm, false, ["sign"]);
    return { key, signingAlgorithm: algorithm };
  }
  throw new PkiError(`unsupported CA key type ${keyObject.asymmetricKeyType ?? "(unknown)"}`);
}
