// Who is signed in. The token lives in the tab's sessionStorage (gone when the tab closes) and goes out
// only as a bearer header. Ways to sign in are listed in SIGN_IN_METHODS: a one-time code from a link
// (its fragment never reaches a server log) and a pasted token today; a realm's login joins the list.
import { kubeApiError } from "../../kubeclient/errors.ts";

const STORAGE_KEY = "slipway.session";

export interface Session {
  token: string;
  user: string;
  /** ISO time the token stops working, when known. */
  expiresAt?: string;
}

export function storedSession(): Session | undefined {
  const text = sessionStorage.getItem(STORAGE_KEY);
  if (!text) return undefined;
  try {
    const session = JSON.parse(text) as Session;
    if (session.expiresAt && Date.parse(session.expiresAt) <= Date.now()) return undefined;
    return session;
  } catch {
    return undefined;
  }
}

export function keepSession(session: Session): void {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
}

export function forgetSession(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

async function failure(response: Response): Promise<Error> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text) as unknown;
  } catch {
    // the text is the message
  }
  return kubeApiError(response.status, response.statusText, body);
}

/** Exchanges the one-time code of a sign-in link for a session. */
export async function signInWithCode(code: string): Promise<Session> {
  const response = await fetch("/login/session", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code }), cache: "no-store" });
  if (!response.ok) throw await failure(response);
  const body = (await response.json()) as { token: string; user: string; expiresAt: string };
  return { token: body.token, user: body.user, expiresAt: body.expiresAt };
}

/** Checks a pasted bearer token against the API before keeping it. */
export async function signInWithToken(token: string): Promise<Session> {
  const response = await fetch("/apis/slipway.dev/v1alpha1", { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" });
  if (!response.ok) throw await failure(response);
  return { token, user: token.startsWith("sws1.") ? "session" : "token holder" };
}

/** The code of a sign-in link (`#login=CODE`), removed from the address bar and history at once. */
export function takeLoginCode(): string | undefined {
  const match = /^#login=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (!match) return undefined;
  history.replaceState(null, "", `${location.pathname}${location.search}#/`);
  return match[1];
}

export interface SignInMethod {
  id: string;
  label: string;
}

/** Ways to sign in the sign-in page offers; a realm login adds an entry here and a form for it. */
export const SIGN_IN_METHODS: SignInMethod[] = [{ id: "token", label: "Bearer token" }];
