// The bootstrap token machines join with. It lives in the workload cluster as the Secret
// kube-system/bootstrap-token-<id>, made by `kubeadm init` with kubeadm's own lifetime of 24 hours
// (BOOTSTRAP_TOKEN_TTL in bootstrap.ts), and stays in Slipway as the cluster's `<cluster>-bootstrap-token`
// Secret. Before a machine that joins an initialised cluster is created, the token is made valid again
// for as long as that machine may take to boot and join: its expiration is moved on, or its Secret is
// made again when the cluster's token cleaner has removed it. A cluster whose machines do not change
// holds no valid join token a day later; whoever reads a machine's user data then cannot join a node.
import { ifPresent } from "../../api/presence.ts";
import type { KubeClient, KubeObject } from "../../kubeclient/index.ts";

/** How long a refreshed token stays valid: kubeadm's default token lifetime. */
export const JOIN_TOKEN_TTL_MS = 24 * 3_600_000;

interface TokenSecret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

function tokenPath(tokenId: string): string {
  return `/api/v1/namespaces/kube-system/secrets/bootstrap-token-${encodeURIComponent(tokenId)}`;
}

/** RFC 3339 to the second, as kubeadm writes a token's expiration. */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

const base64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** The bootstrap token Secret as `kubeadm init` and `kubeadm token create` make it. */
function tokenSecret(token: string, expiresAtMs: number): TokenSecret {
  const [id, secret] = token.split(".") as [string, string];
  const data: Record<string, string> = {
    description: "Bootstrap token for joining machines, made again by Slipway.",
    "token-id": id,
    "token-secret": secret,
    expiration: rfc3339(expiresAtMs),
    "usage-bootstrap-authentication": "true",
    "usage-bootstrap-signing": "true",
    "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
  };
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system" },
    type: "bootstrap.kubernetes.io/token",
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, base64(v)])),
  };
}

export type JoinTokenOutcome = "valid" | "extended" | "recreated";

/**
 * Makes the cluster's join token valid until at least `nowMs + neededMs`: left alone when it already is
 * (or never expires), else given a new expiration `JOIN_TOKEN_TTL_MS` from now, or made again when it is
 * gone. Errors of the cluster's API are the caller's to handle.
 */
export async function ensureJoinToken(kube: KubeClient, token: string, nowMs: number, neededMs: number): Promise<JoinTokenOutcome> {
  const [id] = token.split(".") as [string];
  const current = await ifPresent(() => kube.get<TokenSecret>(tokenPath(id)));
  const expiresAtMs = nowMs + JOIN_TOKEN_TTL_MS;
  if (!current) {
    await kube.create(`/api/v1/namespaces/kube-system/secrets`, tokenSecret(token, expiresAtMs));
    return "recreated";
  }
  const expiration = current.data?.expiration;
  if (expiration === undefined) return "valid";
  const until = Date.parse(Buffer.from(expiration, "base64").toString("utf8"));
  if (Number.isFinite(until) && until >= nowMs + neededMs) return "valid";
  await kube.patch(tokenPath(id), { data: { expiration: base64(rfc3339(expiresAtMs)) } }, "merge");
  return "extended";
}
