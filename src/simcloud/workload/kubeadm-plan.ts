// What kubeadm on a booting machine would do, read from its user data and checked as kubeadm's preflight
// checks would: a plan to initialise a cluster or to join one, or the errors that stop it.
import { createHmac } from "node:crypto";
import { InvalidCidrError, cidrsOverlap, parseCidr } from "../../api/cidr.ts";
import { CloudInitError, readKubeadmBootstrap } from "../../bootstrap/cloudinit.ts";
import { KubeadmConfigError, type NodeRegistration } from "../../bootstrap/kubeadm.ts";
import { PkiError, isValidBootstrapToken, keyMatchesCertificate } from "../../bootstrap/pki.ts";

export const PKI_DIR = "/etc/kubernetes/pki";
const REQUIRED_PKI = ["ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "etcd/ca.crt", "etcd/ca.key", "sa.key", "sa.pub"];
const VERSION = /^v?1\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const CA_HASH = /^sha256:[0-9a-f]{64}$/;

export interface InitPlan {
  command: "init";
  clusterName: string;
  /** Always with the leading "v", e.g. v1.31.2. */
  kubernetesVersion: string;
  endpoint: string;
  podSubnet: string;
  serviceSubnet: string;
  dnsDomain: string;
  token: string;
  /** Token lifetime in milliseconds; 0 means it never expires. */
  tokenTtlMs: number;
  node: NodeRegistration;
  /** The files under /etc/kubernetes/pki, by path relative to it (ca.crt, etcd/ca.key, …). */
  pki: Record<string, string>;
}

export interface JoinPlan {
  command: "join";
  endpoint: string;
  token: string;
  caCertHashes: string[];
  unsafeSkipCAVerification: boolean;
  controlPlane: boolean;
  node: NodeRegistration;
  pki: Record<string, string>;
}

export type KubeadmPlan = InitPlan | JoinPlan;

/** A machine's kubeadm step that cannot run: what the machine prints, the first line being the gist. */
export class KubeadmFailure extends Error {
  override readonly name = "KubeadmFailure";
  constructor(
    readonly phase: string,
    readonly problems: string[],
  ) {
    super(`error execution phase ${phase}: ${problems.join("; ")}`);
  }

  /** The lines kubeadm prints when it gives up. */
  get lines(): string[] {
    const head =
      this.problems.length === 1
        ? [`error execution phase ${this.phase}: ${this.problems[0]}`]
        : [`error execution phase ${this.phase}: [preflight] Some fatal errors occurred:`, ...this.problems.map((p) => `\t${p}`)];
    return [...head, "To see the stack trace of this error execute with --v=5 or higher"];
  }
}

/** Go-style duration ("24h0m0s", "90m", "0") in milliseconds. */
export function parseDuration(text: string): number | undefined {
  if (text === "0") return 0;
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  let total = 0;
  let rest = text;
  while (rest.length > 0) {
    const match = /^(\d+(?:\.\d+)?)(ms|h|m|s)/.exec(rest);
    if (!match) return undefined;
    total += Number(match[1]) * units[match[2]!]!;
    rest = rest.slice(match[0].length);
  }
  return text.length > 0 ? total : undefined;
}

function endpointErrors(field: string, endpoint: string | undefined): string[] {
  if (!endpoint) return [`[ERROR Config]: ${field}: Required value: a control-plane endpoint (host:port) is needed`];
  const port = endpoint.slice(endpoint.lastIndexOf(":") + 1);
  if (!endpoint.includes(":") || !/^\d{1,5}$/.test(port) || Number(port) === 0 || Number(port) > 65535) {
    return [`[ERROR Config]: ${field}: Invalid value: "${endpoint}": expected host:port`];
  }
  return [];
}

function subnetErrors(field: string, value: string | undefined): string[] {
  if (!value) return [`[ERROR Config]: ${field}: Required value`];
  try {
    parseCidr(value);
    return [];
  } catch (error) {
    if (error instanceof InvalidCidrError) return [`[ERROR Config]: ${field}: Invalid value: "${value}": couldn't parse subnet (${error.detail})`];
    throw error;
  }
}

function nodeErrors(node: NodeRegistration | undefined): string[] {
  const name = node?.name;
  if (!name) return ["[ERROR Config]: nodeRegistration.name: Required value"];
  return name.length > 253 || !SUBDOMAIN.test(name) ? [`[ERROR Config]: nodeRegistration.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`] : [];
}

function pkiFilesOf(files: Map<string, string>): Record<string, string> {
  const pki: Record<string, string> = {};
  for (const [path, content] of files) if (path.startsWith(`${PKI_DIR}/`)) pki[path.slice(PKI_DIR.length + 1)] = content;
  return pki;
}

/** Problems with the cluster CA a control-plane machine carries: missing files, or a key of another certificate. */
export function caFileErrors(pki: Record<string, string>, required: readonly string[] = REQUIRED_PKI): string[] {
  const missing = required.filter((file) => !pki[file]);
  const errors = missing.map((file) => `[ERROR FileAvailable]: couldn't load ${PKI_DIR}/${file}: open ${PKI_DIR}/${file}: no such file or directory`);
  if (pki["ca.crt"] && pki["ca.key"]) {
    let matches = false;
    try {
      matches = keyMatchesCertificate({ certPem: pki["ca.crt"], keyPem: pki["ca.key"] });
    } catch (error) {
      if (!(error instanceof PkiError)) throw error;
    }
    if (!matches) errors.push(`[ERROR CertificateAuthority]: failure loading ca certificate authority: the private key ${PKI_DIR}/ca.key does not match the certificate ${PKI_DIR}/ca.crt`);
  }
  return errors;
}

function planInit(config: ReturnType<typeof readKubeadmBootstrap> & object): InitPlan {
  const { init, cluster } = config.config;
  if (!init || !cluster) throw new KubeadmFailure("preflight", ["[ERROR Config]: kubeadm init needs an InitConfiguration and a ClusterConfiguration"]);
  const pki = pkiFilesOf(config.files);
  const version = String(cluster.kubernetesVersion ?? "");
  const networking = cluster.networking ?? { podSubnet: "", serviceSubnet: "", dnsDomain: "" };
  const token = init.bootstrapTokens?.[0];
  const ttl = token?.ttl === undefined ? 24 * 3_600_000 : parseDuration(token.ttl);
  const problems = [
    ...(VERSION.test(version) ? [] : [`[ERROR KubernetesVersion]: couldn't parse Kubernetes version "${version}": expected v1.MINOR.PATCH`]),
    ...endpointErrors("controlPlaneEndpoint", cluster.controlPlaneEndpoint),
    ...subnetErrors("networking.podSubnet", networking.podSubnet),
    ...subnetErrors("networking.serviceSubnet", networking.serviceSubnet),
    ...(networking.dnsDomain ? [] : ["[ERROR Config]: networking.dnsDomain: Required value"]),
    ...(token && isValidBootstrapToken(token.token) ? [] : [`[ERROR Config]: bootstrapTokens[0].token: Invalid value: the bootstrap token is invalid`]),
    ...(ttl === undefined ? [`[ERROR Config]: bootstrapTokens[0].ttl: Invalid value: "${token?.ttl}": not a duration`] : []),
    ...nodeErrors(init.nodeRegistration),
    ...caFileErrors(pki),
  ];
  if (problems.length === 0) {
    const pods = parseCidr(networking.podSubnet);
    if (pods.prefix > 24) problems.push(`[ERROR Config]: networking.podSubnet: Invalid value: "${networking.podSubnet}": the pod subnet must be /24 or larger to give every node a /24`);
    if (cidrsOverlap(pods, networking.serviceSubnet)) problems.push(`[ERROR Config]: networking.podSubnet: Invalid value: "${networking.podSubnet}": overlaps the service subnet ${networking.serviceSubnet}`);
  }
  if (problems.length > 0) throw new KubeadmFailure("preflight", problems);
  return {
    command: "init",
    clusterName: cluster.clusterName || "kubernetes",
    kubernetesVersion: version.startsWith("v") ? version : `v${version}`,
    endpoint: cluster.controlPlaneEndpoint,
    podSubnet: networking.podSubnet,
    serviceSubnet: networking.serviceSubnet,
    dnsDomain: networking.dnsDomain,
    token: token!.token,
    tokenTtlMs: ttl!,
    node: init.nodeRegistration,
    pki,
  };
}

function planJoin(config: ReturnType<typeof readKubeadmBootstrap> & object): JoinPlan {
  const join = config.config.join;
  const discovery = join?.discovery?.bootstrapToken;
  if (!join || !discovery) throw new KubeadmFailure("preflight", ["[ERROR Config]: kubeadm join needs a JoinConfiguration with discovery.bootstrapToken"]);
  const hashes = discovery.caCertHashes ?? [];
  const unsafe = discovery.unsafeSkipCAVerification === true;
  const problems = [
    ...endpointErrors("discovery.bootstrapToken.apiServerEndpoint", discovery.apiServerEndpoint),
    ...(isValidBootstrapToken(discovery.token ?? "") ? [] : ["[ERROR Config]: discovery.bootstrapToken.token: Invalid value: the bootstrap token is invalid"]),
    ...(hashes.length === 0 && !unsafe
      ? ["[ERROR Config]: discovery.bootstrapToken.caCertHashes: Invalid value: using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue"]
      : []),
    ...hashes.filter((h) => !CA_HASH.test(h)).map((h) => `[ERROR Config]: discovery.bootstrapToken.caCertHashes: Invalid value: "${h}": expected sha256:<64 hexadecimal digits>`),
    ...nodeErrors(join.nodeRegistration),
  ];
  if (problems.length > 0) throw new KubeadmFailure("preflight", problems);
  return {
    command: "join",
    endpoint: discovery.apiServerEndpoint,
    token: discovery.token,
    caCertHashes: hashes,
    unsafeSkipCAVerification: unsafe,
    controlPlane: join.controlPlane !== undefined,
    node: join.nodeRegistration,
    pki: pkiFilesOf(config.files),
  };
}

/**
 * The kubeadm plan of a machine's user data: undefined when it runs no kubeadm (not cloud-config, or no
 * `kubeadm init|join` command); a KubeadmFailure when the configuration would stop kubeadm.
 */
export function kubeadmPlan(userData: string): KubeadmPlan | undefined {
  if (!userData.startsWith("#cloud-config")) return undefined;
  let bootstrap;
  try {
    bootstrap = readKubeadmBootstrap(userData);
  } catch (error) {
    if (error instanceof CloudInitError || error instanceof KubeadmConfigError) throw new KubeadmFailure("preflight", [`[ERROR Config]: ${error.message}`]);
    throw error;
  }
  if (!bootstrap) return undefined;
  return bootstrap.command === "init" ? planInit(bootstrap) : planJoin(bootstrap);
}

/** A detached JWS (HS256) of the cluster-info kubeconfig, keyed by a bootstrap token, as kubeadm signs it. */
export function signClusterInfo(kubeconfig: string, tokenId: string, tokenSecret: string): string {
  const header = Buffer.from(JSON.stringify({ alg: "HS256", kid: tokenId })).toString("base64url");
  const payload = Buffer.from(kubeconfig).toString("base64url");
  const signature = createHmac("sha256", tokenSecret).update(`${header}.${payload}`).digest("base64url");
  return `${header}..${signature}`;
}

/** The discovery URL kubeadm reads the cluster-info ConfigMap from. */
export function clusterInfoUrl(endpoint: string): string {
  return `https://${endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s`;
}
