// Authentication, as kube-apiserver does it: a chain of authenticators, the first to recognise the
// request's credentials names its identity (every authenticated identity is in system:authenticated);
// none does, and the request gets 401. Bearer tokens and client certificates verified against a CA
// (CN = user, O = groups) are here; the control plane and the emulated workload APIs both use them.
import { timingSafeEqual, X509Certificate } from "node:crypto";
import type { TLSSocket } from "node:tls";
import type { FastifyRequest } from "fastify";
import { certificateInfo, derToPem } from "../bootstrap/pki.ts";
import { BoundedCache } from "../api/bounded-cache.ts";
import { GROUP_AUTHENTICATED } from "./authorization/types.ts";
import type { Identity } from "./request-context.ts";

/** A client's TLS certificate. */
export interface ClientCertificate {
  /** DER bytes. */
  raw: Buffer;
  fingerprint256: string;
}

/** What a request presents to prove who it comes from. */
export interface Credentials {
  /** The Authorization header. */
  authorization?: string;
  /** The client's TLS certificate, when it sent one (read only when an authenticator asks). */
  clientCertificate(): ClientCertificate | undefined;
}

export interface Authenticator {
  /** The identity the credentials prove, or undefined when they prove nothing to this authenticator. */
  authenticate(credentials: Credentials): Identity | undefined | Promise<Identity | undefined>;
}

/**
 * The client certificate of each TLS 1.3 connection, read once: TLS 1.3 has no renegotiation, so it
 * cannot change on the connection, and `getPeerCertificate` builds a new object (subject, issuer,
 * extensions, fingerprints) on every call. Connections of older versions are read on every request.
 */
const certificateOfConnection = new WeakMap<object, ClientCertificate | null>();

function clientCertificateOf(socket: Partial<TLSSocket>): ClientCertificate | undefined {
  if (typeof socket.getPeerCertificate !== "function") return undefined;
  const settled = socket.getProtocol?.() === "TLSv1.3";
  const known = settled ? certificateOfConnection.get(socket) : undefined;
  if (known !== undefined) return known ?? undefined;
  const peer = socket.getPeerCertificate();
  const certificate = peer && Buffer.isBuffer(peer.raw) ? { raw: peer.raw, fingerprint256: peer.fingerprint256 } : undefined;
  if (settled) certificateOfConnection.set(socket, certificate ?? null);
  return certificate;
}

/** The credentials of an HTTP(S) request. */
export function credentialsOf(request: FastifyRequest): Credentials {
  return {
    authorization: request.headers.authorization,
    clientCertificate: () => clientCertificateOf(request.raw.socket as Partial<TLSSocket>),
  };
}

function withAuthenticatedGroup(identity: Identity): Identity {
  return identity.groups.includes(GROUP_AUTHENTICATED) ? identity : { ...identity, groups: [...identity.groups, GROUP_AUTHENTICATED] };
}

/** Tries authenticators in order; the first identity found wins. */
export class AuthenticatorChain implements Authenticator {
  constructor(private readonly authenticators: readonly Authenticator[]) {}

  async authenticate(credentials: Credentials): Promise<Identity | undefined> {
    for (const authenticator of this.authenticators) {
      const found = authenticator.authenticate(credentials);
      const identity = found instanceof Promise ? await found : found;
      if (identity) return withAuthenticatedGroup(identity);
    }
    return undefined;
  }
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const [scheme, token, ...rest] = authorization.trim().split(/\s+/);
  return scheme?.toLowerCase() === "bearer" && token && rest.length === 0 ? token : undefined;
}

/** Fixed bearer tokens, each standing for one identity (the control plane's admin token). */
export class StaticTokenAuthenticator implements Authenticator {
  private readonly tokens: { token: Buffer; identity: Identity }[];

  constructor(tokens: Iterable<[string, Identity]>) {
    this.tokens = [...tokens].map(([token, identity]) => ({ token: Buffer.from(token), identity }));
  }

  authenticate(credentials: Credentials): Identity | undefined {
    const given = bearerToken(credentials.authorization);
    if (!given) return undefined;
    const bytes = Buffer.from(given);
    // Compared in constant time, and with every token, so the time taken tells nothing about them.
    let found: Identity | undefined;
    for (const { token, identity } of this.tokens) {
      if (bytes.length === token.length && timingSafeEqual(bytes, token)) found = identity;
    }
    return found;
  }
}

/** The extended key usage of client certificates (id-kp-clientAuth). */
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

interface Verified {
  identity: Identity | undefined;
  /** When the certificate expires (ms since the epoch); a refused one is never tried again. */
  until: number;
}

/** A CA clients' certificates are checked against, and what was checked against it, by fingerprint. */
interface Authority {
  pem: string;
  certificate: X509Certificate;
  verified: BoundedCache<Verified>;
}

/**
 * Identities of client certificates, by the CA that must have issued them (one per cluster in the sim
 * cloud). What was verified is kept per CA: a server names its CAs and forgets them (a cluster that is
 * gone), so they are bounded by what the server holds, while the certificates presented to each CA,
 * which clients choose, are bounded per CA. One cache across all CAs would evict the certificates of a
 * fleet's clusters one another (and verify each again) once there are more clusters than its limit.
 */
export class ClientCertificates {
  private readonly authorities = new Map<string, Authority>();
  private readonly perAuthority: number;
  /** Certificates checked against their CA so far (not answered from what was verified before). */
  verifications = 0;

  constructor(options: { certificatesPerAuthority?: number } = {}) {
    this.perAuthority = options.certificatesPerAuthority ?? 256;
  }

  /** An authenticator of certificates issued by the CA `caCertPem`, known as `caId`; results are cached per certificate. */
  issuedBy(caId: string, caCertPem: string): Authenticator {
    return {
      authenticate: (credentials) => {
        const certificate = credentials.clientCertificate();
        if (!certificate) return undefined;
        const authority = this.authority(caId, caCertPem);
        let verified = authority.verified.get(certificate.fingerprint256);
        if (!verified) authority.verified.set(certificate.fingerprint256, (verified = this.verify(certificate.raw, authority.certificate)));
        return verified.identity && Date.now() <= verified.until ? verified.identity : undefined;
      },
    };
  }

  /** Forgets what was verified against a CA (its cluster is gone). */
  forget(caId: string): void {
    this.authorities.delete(caId);
  }

  /** The CA known as `caId`; an id that now names another CA starts over. */
  private authority(caId: string, pem: string): Authority {
    let authority = this.authorities.get(caId);
    if (!authority || authority.pem !== pem) {
      authority = { pem, certificate: new X509Certificate(pem), verified: new BoundedCache(this.perAuthority) };
      this.authorities.set(caId, authority);
    }
    return authority;
  }

  private verify(der: Buffer, ca: X509Certificate): Verified {
    this.verifications++;
    const refused: Verified = { identity: undefined, until: Infinity };
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(der);
    } catch {
      return refused;
    }
    const now = Date.now();
    const until = Date.parse(cert.validTo);
    if (!(Date.parse(cert.validFrom) <= now && now <= until) || !cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return refused;
    // A CA, or a certificate whose extended key usages leave out client authentication, is no client's.
    if (cert.ca || (cert.keyUsage !== undefined && !cert.keyUsage.includes(CLIENT_AUTH))) return refused;
    const info = certificateInfo(derToPem(der));
    if (!info.commonName) return refused;
    return { identity: { user: info.commonName, groups: [...info.organizations] }, until };
  }
}
