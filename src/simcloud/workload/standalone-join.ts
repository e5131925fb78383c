// `kubeadm join` against a cluster served on its own (standalone.ts), done as kubeadm does it over the
// network: discovery reads the cluster-info ConfigMap through the control-plane endpoint, checks its
// signature with the bootstrap token (JWS) and pins the cluster CA in it against the CA hashes of the
// JoinConfiguration; then the kubelet, trusting that CA only, registers the node with the token.
import { readFile } from "node:fs/promises";
import { request } from "node:https";
import { hostname } from "node:os";
import { parse } from "yaml";
import { caCertHash } from "../../bootstrap/pki.ts";
import { readKubeadmConfig } from "./kubeadm-config.ts";
import { signClusterInfo } from "./kubeadm-plan.ts";
import { nodeLabelsOf } from "./kubeadm-steps.ts";
import { registeredNode } from "./standalone.ts";

/** kubeadm join stopped: the lines it prints. */
export class JoinFailedError extends Error {
  override readonly name = "JoinFailedError";
}

interface Answer {
  status: number;
  body: string;
}

function call(url: string, options: { method?: string; token: string; ca?: string; body?: unknown }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? "GET",
        headers: { authorization: `Bearer ${options.token}`, accept: "application/json", ...(options.body ? { "content-type": "application/json" } : {}) },
        ...(options.ca ? { ca: options.ca } : { rejectUnauthorized: false }),
        timeout: 10_000,
      },
      (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${url}: timed out`)));
    req.on("error", reject);
    if (options.body) req.write(JSON.stringify(options.body));
    req.end();
  });
}

/** Joins the node; `address` is the host's. Throws JoinFailedError with kubeadm's words when it cannot. */
export async function joinStandaloneCluster(options: { configPath: string; address: string; discoveryTimeoutMs?: number }): Promise<string> {
  const config = readKubeadmConfig(await readFile(options.configPath, "utf8"));
  const join = config.join;
  const discovery = join?.discovery?.bootstrapToken;
  if (!join || !discovery?.apiServerEndpoint || !discovery.token) throw new JoinFailedError(`${options.configPath} has no JoinConfiguration with a bootstrap token discovery`);
  const token = discovery.token;
  const [tokenId = "", tokenSecret = ""] = token.split(".");
  const endpoint = discovery.apiServerEndpoint;
  const deadline = Date.now() + (options.discoveryTimeoutMs ?? 5 * 60_000);
  let info: Answer | undefined;
  let lastError = "";
  while (!info) {
    try {
      const answer = await call(`https://${endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info`, { token });
      if (answer.status === 200) info = answer;
      else lastError = `the server answered ${answer.status}`;
    } catch (error) {
      lastError = (error as Error).message;
    }
    if (!info) {
      if (Date.now() > deadline) throw new JoinFailedError(`error execution phase preflight: couldn't validate the identity of the API Server: ${lastError}`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  const data = (JSON.parse(info.body) as { data?: Record<string, string> }).data ?? {};
  const kubeconfig = data.kubeconfig ?? "";
  if (data[`jws-kubeconfig-${tokenId}`] !== signClusterInfo(kubeconfig, tokenId, tokenSecret)) {
    throw new JoinFailedError(`error execution phase preflight: couldn't validate the identity of the API Server: failed to verify JWS signature of received cluster info object, can't trust this API Server`);
  }
  const parsed = parse(kubeconfig) as { clusters?: { cluster?: { "certificate-authority-data"?: string } }[] };
  const caPem = Buffer.from(parsed.clusters?.[0]?.cluster?.["certificate-authority-data"] ?? "", "base64").toString("utf8");
  const hash = caCertHash(caPem);
  const pinned = discovery.caCertHashes ?? [];
  if (!discovery.unsafeSkipCAVerification && !pinned.includes(hash)) {
    throw new JoinFailedError(`error execution phase preflight: couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${hash}" are pinned`);
  }
  const name = join.nodeRegistration?.name ?? hostname();
  const version = JSON.parse((await call(`https://${endpoint}/version`, { token, ca: caPem })).body) as { gitVersion?: string };
  const labels = nodeLabelsOf({ node: { ...join.nodeRegistration, name } } as Parameters<typeof nodeLabelsOf>[0]);
  if ("error" in labels) throw new JoinFailedError(labels.error);
  const at = new Date().toISOString();
  const registration = registeredNode(
    { name, address: options.address, controlPlane: join.controlPlane !== undefined, kubernetesVersion: version.gitVersion ?? "v1.31.2", labels: labels.labels, ...(join.nodeRegistration?.taints ? { taints: join.nodeRegistration.taints } : {}) },
    at,
  );
  const created = await call(`https://${endpoint}/api/v1/nodes`, { method: "POST", token, ca: caPem, body: registration.node });
  if (created.status !== 201 && created.status !== 409) throw new JoinFailedError(`error execution phase kubelet-start: registering node ${name}: ${created.status} ${created.body}`);
  const current = JSON.parse((await call(`https://${endpoint}/api/v1/nodes/${name}`, { token, ca: caPem })).body) as Record<string, unknown>;
  const posted = await call(`https://${endpoint}/api/v1/nodes/${name}/status`, { method: "PUT", token, ca: caPem, body: { ...current, status: registration.status } });
  if (posted.status !== 200) throw new JoinFailedError(`error execution phase kubelet-start: posting the status of node ${name}: ${posted.status} ${posted.body}`);
  return name;
}
