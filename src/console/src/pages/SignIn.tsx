// Signing in: with the one-time link `slipway up` and `slipway console` print (handled before this page
// shows), or with a bearer token pasted here. A realm's login will be offered beside these.
import { useState } from "preact/hooks";
import { ErrorNotice } from "../components/ErrorNotice.tsx";
import { SIGN_IN_METHODS, signInWithToken, type Session } from "../session.ts";

export function SignInPage({ onSignedIn, error: initialError }: { onSignedIn: (session: Session) => void; error?: unknown }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<unknown>(initialError);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await signInWithToken(token.trim()));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in" id="main">
      <h1>Sign in to Slipway</h1>
      <p>
        Open the one-time link that <code>slipway up</code> printed, or get a new one with <code>npx slipway console</code>. Or paste a bearer token (the admin kubeconfig's
        <code> token</code>).
      </p>
      <ErrorNotice error={error} title="Could not sign in" />
      {SIGN_IN_METHODS.map((method) => (
        <form key={method.id} onSubmit={submit} aria-label={`Sign in with a ${method.label.toLowerCase()}`}>
          <label>
            {method.label}
            <input type="password" name="token" autoComplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
          </label>
          <button type="submit" class="primary" disabled={busy || token.trim() === ""}>
            Sign in
          </button>
        </form>
      ))}
    </main>
  );
}
