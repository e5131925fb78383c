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
import { registeredNode, type HostFacts } from "./standalone.ts";

/** kubeadm join stopped: the lines it prints. */
export class JoinFailedError extends Error {
  override readonly name = "JoinFailedError";
}

/** How often the kubelet posts its node's status over a conflicting write before it gives up (kubelet's nodeStatusUpdateRetry). */
const STATUS_ATTEMPTS = 5;

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

/** What a join over the network needs: the JoinConfiguration's discovery and node, and what the node reports. */
export interface NetworkJoin {
  endpoint: string;
  token: string;
  caCertHashes: readonly string[];
  unsafeSkipCAVerification?: boolean;
  controlPlane: boolean;
  /** The node's registration: its name, labels and taints. */
  node: { name: string; labels: Record<string, string>; taints?: HostFacts["taints"] };
  /** The joining machine's address, and what its cloud says of it when it is a cloud's. */
  address: string;
  cloudMachine?: HostFacts["cloudMachine"];
  /** The kubelet's version when the API server's is not to be taken. */
  kubeletVersion?: string;
}

/**
 * One `kubeadm join` attempt over the network: discovery (cluster-info through the endpoint, its JWS
 * signature with the token, the CA pin), then the node registers with the token. Answers the node's name,
 * the connection's error (kubeadm retries it), or kubeadm's failure (it stops).
 */
export async function joinOverNetwork(request: NetworkJoin): Promise<{ joined: string } | { error: string } | { failure: string }> {
  const { endpoint, token } = request;
  const [tokenId = "", tokenSecret = ""] = token.split(".");
  let info: Answer;
  try {
    info = await call(`https://${endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info`, { token });
  } catch (error) {
    return { error: (error as Error).message };
  }
  if (info.status !== 200) return { error: `the server answered ${info.status}` };
  const data = (JSON.parse(info.body) as { data?: Record<string, string> }).data ?? {};
  const kubeconfig = data.kubeconfig ?? "";
  if (data[`jws-kubeconfig-${tokenId}`] !== signClusterInfo(kubeconfig, tokenId, tokenSecret)) {
    return { failure: `error execution phase preflight: couldn't validate the identity of the API Server: failed to verify JWS signature of received cluster info object, can't trust this API Server` };
  }
  const parsed = parse(kubeconfig) as { clusters?: { cluster?: { "certificate-authority-data"?: string } }[] };
  const caPem = Buffer.from(parsed.clusters?.[0]?.cluster?.["certificate-authority-data"] ?? "", "base64").toString("utf8");
  const hash = caCertHash(caPem);
  if (!request.unsafeSkipCAVerification && !request.caCertHashes.includes(hash)) {
    return { failure: `error execution phase preflight: couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${hash}" are pinned` };
  }
  try {
    const { name } = request.node;
    const version = request.kubeletVersion ?? (JSON.parse((await call(`https://${endpoint}/version`, { token, ca: caPem })).body) as { gitVersion?: string }).gitVersion ?? "v1.31.2";
    const registration = registeredNode(
      {
        name,
        address: request.address,
        controlPlane: request.controlPlane,
        kubernetesVersion: version,
        labels: request.node.labels,
        ...(request.node.taints ? { taints: request.node.taints } : {}),
        ...(request.cloudMachine ? { cloudMachine: request.cloudMachine } : {}),
      },
      new Date().toISOString(),
    );
    const created = await call(`https://${endpoint}/api/v1/nodes`, { method: "POST", token, ca: caPem, body: registration.node });
    if (created.status !== 201 && created.status !== 409) return { failure: `error execution phase kubelet-start: registering node ${name}: ${created.status} ${created.body}` };
    // The status goes over the node as read; the controller manager may write it meanwhile (its pod
    // range), and the kubelet then reads it again, as its status updates do.
    let posted: Answer = { status: 0, body: "" };
    for (let attempt = 0; attempt < STATUS_ATTEMPTS && posted.status !== 200; attempt++) {
      const current = JSON.parse((await call(`https://${endpoint}/api/v1/nodes/${name}`, { token, ca: caPem })).body) as Record<string, unknown>;
      posted = await call(`https://${endpoint}/api/v1/nodes/${name}/status`, { method: "PUT", token, ca: caPem, body: { ...current, status: registration.status } });
      if (posted.status !== 409) break;
    }
    if (posted.status !== 200) return { failure: `error execution phase kubelet-start: posting the status of node ${name}: ${posted.status} ${posted.body}` };
    return { joined: name };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** Joins the node; `address` is the host's. Throws JoinFailedError with kubeadm's words when it cannot. */
export async function joinStandaloneCluster(options: { configPath: string; address: string; discoveryTimeoutMs?: number }): Promise<string> {
  const config = readKubeadmConfig(await readFile(options.configPath, "utf8"));
  const join = config.join;
  const discovery = join?.discovery?.bootstrapToken;
  if (!join || !discovery?.apiServerEndpoint || !discovery.token) throw new JoinFailedError(`${options.configPath} has no JoinConfiguration with a bootstrap token discovery`);
  const name = join.nodeRegistration?.name ?? hostname();
  const labels = nodeLabelsOf({ node: { ...join.nodeRegistration, name } } as Parameters<typeof nodeLabelsOf>[0]);
  if ("error" in labels) throw new JoinFailedError(labels.error);
  const request: NetworkJoin = {
    endpoint: discovery.apiServerEndpoint,
    token: discovery.token,
    caCertHashes: discovery.caCertHashes ?? [],
    unsafeSkipCAVerification: discovery.unsafeSkipCAVerification === true,
    controlPlane: join.controlPlane !== undefined,
    node: { name, labels: labels.labels, ...(join.nodeRegistration?.taints ? { taints: join.nodeRegistration.taints } : {}) },
    address: options.address,
  };
  const deadline = Date.now() + (options.discoveryTimeoutMs ?? 5 * 60_000);
  for (;;) {
    const answer = await joinOverNetwork(request);
    if ("joined" in answer) return answer.joined;
    if ("failure" in answer) throw new JoinFailedError(answer.failure);
    if (Date.now() > deadline) throw new JoinFailedError(`error execution phase preflight: couldn't validate the identity of the API Server: ${answer.error}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
