// The console's frame: signing in, the header with navigation, theme and user, and the page the address
// names.
import { useEffect, useMemo, useState } from "preact/hooks";
import { ApiClient } from "./api/client.ts";
import { ClusterPage } from "./pages/Cluster.tsx";
import { ClustersPage } from "./pages/Clusters.tsx";
import { CreatePage } from "./pages/Create.tsx";
import { SignInPage } from "./pages/SignIn.tsx";
import { href, useRoute } from "./router.ts";
import { forgetSession, keepSession, signInWithCode, storedSession, takeLoginCode, type Session } from "./session.ts";
import { useTheme, type Theme } from "./theme.ts";

export function App() {
  const [session, setSession] = useState<Session | undefined>(storedSession);
  const [signInError, setSignInError] = useState<unknown>();
  const [redeeming, setRedeeming] = useState(false);
  const [theme, setTheme] = useTheme();
  const route = useRoute();

  useEffect(() => {
    const code = takeLoginCode();
    if (!code) return;
    setRedeeming(true);
    signInWithCode(code)
      .then((s) => {
        keepSession(s);
        setSession(s);
      })
      .catch(setSignInError)
      .finally(() => setRedeeming(false));
  }, []);

  const signOut = () => {
    forgetSession();
    setSession(undefined);
  };
  const client = useMemo(() => (session ? new ApiClient(session.token, signOut) : undefined), [session?.token]);

  if (redeeming) return <p class="sign-in">Signing in…</p>;
  if (!session || !client) {
    return (
      <SignInPage
        error={signInError}
        onSignedIn={(s) => {
          keepSession(s);
          setSession(s);
        }}
      />
    );
  }
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href({ page: "clusters" })}>
          <img src="/favicon.svg" alt="" width={22} height={22} /> Slipway
        </a>
        <nav aria-label="Main">
          <a href={href({ page: "clusters" })} aria-current={route.page !== "create" ? "page" : undefined}>
            Clusters
          </a>
          <a href={href({ page: "create" })} aria-current={route.page === "create" ? "page" : undefined}>
            Create
          </a>
        </nav>
        <div class="user">
          <label class="theme">
            <span class="visually-hidden">Theme</span>
            <select value={theme} onChange={(e) => setTheme(e.currentTarget.value as Theme)} name="theme">
              <option value="system">System theme</option>
              <option value="light">Light</option>
              <option value="dark">Dark</option>
            </select>
          </label>
          <span class="who" title="Signed in as">
            {session.user}
          </span>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {route.page === "clusters" && <ClustersPage client={client} />}
        {route.page === "cluster" && <ClusterPage key={`${route.namespace}/${route.name}`} client={client} namespace={route.namespace} name={route.name} />}
        {route.page === "create" && <CreatePage client={client} />}
      </main>
    </>
  );
}
