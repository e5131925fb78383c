// Signing in to the web console without putting a credential in a URL that anything logs.
//
// `slipway up` (and `slipway console`) prints a link whose fragment carries a one-time code:
// https://127.0.0.1:6443/#login=CODE. A fragment never leaves the browser, so no server or proxy log
// sees it; the console posts the code to /login/session and gets a session token back in the body.
// A code is single use and expires after a few minutes. A session token is signed (HMAC-SHA256 under a
// key derived from the admin token), names its user and expiry, and is accepted by every replica that
// shares the control plane's credentials; it is sent as a bearer token, like any other.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export interface SignedInIdentity {
  user: string;
  groups: string[];
}

export const LOGIN_CODE_TTL_MS = 10 * 60_000;
export const SESSION_TTL_MS = 12 * 60 * 60_000;
/** Codes waiting to be used, at most; the oldest goes first. */
const MAX_PENDING_CODES = 1024;
const SESSION_PREFIX = "sws1";

/** One-time codes, kept in this process only: a code is redeemed on the replica that printed it. */
export class LoginCodes {
  /** By the code's hash: a lookup reveals nothing through its timing, and a dump holds no usable code. */
  private readonly pending = new Map<string, { identity: SignedInIdentity; expiresAt: number }>();

  constructor(
    private readonly clock: () => number = Date.now,
    private readonly ttlMs = LOGIN_CODE_TTL_MS,
  ) {}

  issue(identity: SignedInIdentity): { code: string; expiresAt: number } {
    this.sweep();
    const code = randomBytes(24).toString("base64url");
    const expiresAt = this.clock() + this.ttlMs;
    this.pending.set(hash(code), { identity, expiresAt });
    while (this.pending.size > MAX_PENDING_CODES) this.pending.delete(this.pending.keys().next().value!);
    return { code, expiresAt };
  }

  /** The identity the code was issued for, once; undefined for a code unknown, used or expired. */
  redeem(code: string): SignedInIdentity | undefined {
    const key = hash(code);
    const entry = this.pending.get(key);
    this.pending.delete(key);
    if (!entry || entry.expiresAt <= this.clock()) return undefined;
    return entry.identity;
  }

  private sweep(): void {
    const now = this.clock();
    for (const [key, entry] of this.pending) if (entry.expiresAt <= now) this.pending.delete(key);
  }
}

function hash(code: string): string {
  return createHash("sha256").update(code).digest("base64url");
}

/** Signed, expiring session tokens for the console's users. */
export class SessionTokens {
  private readonly key: Buffer;

  constructor(
    secret: string,
    private readonly clock: () => number = Date.now,
    private readonly ttlMs = SESSION_TTL_MS,
  ) {
    this.key = createHmac("sha256", secret).update("slipway console session v1").digest();
  }

  issue(identity: SignedInIdentity): { token: string; expiresAt: number } {
    const expiresAt = this.clock() + this.ttlMs;
    const payload = Buffer.from(JSON.stringify({ u: identity.user, g: identity.groups, e: expiresAt })).toString("base64url");
    return { token: `${SESSION_PREFIX}.${payload}.${this.sign(payload)}`, expiresAt };
  }

  /** The identity of a valid, unexpired token; undefined for anything else. */
  verify(token: string): SignedInIdentity | undefined {
    const [prefix, payload, signature, extra] = token.split(".");
    if (prefix !== SESSION_PREFIX || !payload || !signature || extra !== undefined) return undefined;
    const expected = Buffer.from(this.sign(payload));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let claims: { u?: unknown; g?: unknown; e?: unknown };
    try {
      claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as typeof claims;
    } catch {
      return undefined;
    }
    if (typeof claims.u !== "string" || typeof claims.e !== "number" || claims.e <= this.clock()) return undefined;
    const groups = Array.isArray(claims.g) ? claims.g.filter((g): g is string => typeof g === "string") : [];
    return { user: claims.u, groups };
  }

  private sign(payload: string): string {
    return createHmac("sha256", this.key).update(payload).digest("base64url");
  }
}

/** The link a person opens to sign in: the code rides in the fragment, which browsers never send. */
export function loginLink(consoleUrl: string, code: string): string {
  return `${consoleUrl.replace(/\/*$/, "/")}#login=${code}`;
}
