// Pages by address: the part after `#`, so the server serves one page and the API keeps every path.
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "clusters" }
  | { page: "cluster"; namespace: string; name: string }
  | { page: "create" };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "clusters" && parts.length === 3) return { page: "cluster", namespace: parts[1]!, name: parts[2]! };
  if (parts[0] === "create") return { page: "create" };
  return { page: "clusters" };
}

export function href(route: Route): string {
  switch (route.page) {
    case "clusters":
      return "#/";
    case "cluster":
      return `#/clusters/${encodeURIComponent(route.namespace)}/${encodeURIComponent(route.name)}`;
    case "create":
      return "#/create";
  }
}

export function navigate(route: Route): void {
  location.hash = href(route);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}
