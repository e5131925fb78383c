// Authentication, as kube-apiserver does it: a chain of authenticators, the first to recognise the
// request's credentials names its identity (every authenticated identity is in system:authenticated);
// none does, and the request gets 401. Bearer tokens and client certificates verified against a CA
// (CN = user, O = groups) are here; the control plane and the emulated workload APIs both use them.
import { timingSafeEqual, X509Certificate } from "node:crypto";
import type { TLSSocket } from "node:tls";
import type { FastifyRequest } from "fastify";
import { certificateInfo, derToPem } from "../bootstrap/pki.ts";
import { BoundedCache } from "./bounded-cache.ts";
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

/** The credentials of an HTTP(S) request. */
export function credentialsOf(request: FastifyRequest): Credentials {
  return {
    authorization: request.headers.authorization,
    clientCertificate: () => {
      const socket = request.raw.socket as Partial<TLSSocket>;
      const peer = typeof socket.getPeerCertificate === "function" ? socket.getPeerCertificate() : undefined;
      return peer && Buffer.isBuffer(peer.raw) ? { raw: peer.raw, fingerprint256: peer.fingerprint256 } : undefined;
    },
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

/** Identities of client certificates, by the CA that must have issued them (one per cluster in the sim cloud). */
/** The extended key usage of client certificates (id-kp-clientAuth). */
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

interface Verified {
  identity: Identity | undefined;
  /** When the certificate expires (ms since the epoch); a refused one is never tried again. */
  until: number;
}

export class ClientCertificates {
  private readonly verified: BoundedCache<Verified>;
  private readonly authorities: BoundedCache<X509Certificate>;

  constructor(options: { cacheLimit?: number } = {}) {
    this.verified = new BoundedCache(options.cacheLimit ?? 4096);
    this.authorities = new BoundedCache(options.cacheLimit ?? 4096);
  }

  /** An authenticator of certificates issued by the CA `caCertPem`, known as `caId`; results are cached per certificate. */
  issuedBy(caId: string, caCertPem: string): Authenticator {
    return {
      authenticate: (credentials) => {
        const certificate = credentials.clientCertificate();
        if (!certificate) return undefined;
        const key = `${caId}/${certificate.fingerprint256}`;
        let verified = this.verified.get(key);
        if (!verified) this.verified.set(key, (verified = this.verify(certificate.raw, caId, caCertPem)));
        return verified.identity && Date.now() <= verified.until ? verified.identity : undefined;
      },
    };
  }

  /** Forgets what was verified against a CA (its cluster is gone). */
  forget(caId: string): void {
    this.authorities.delete(caId);
    for (const key of [...this.verified.keys()]) if (key.startsWith(`${caId}/`)) this.verified.delete(key);
  }

  private verify(der: Buffer, caId: string, caCertPem: string): Verified {
    const refused: Verified = { identity: undefined, until: Infinity };
    let ca = this.authorities.get(caId);
    if (!ca) this.authorities.set(caId, (ca = new X509Certificate(caCertPem)));
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
