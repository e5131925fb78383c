// What kubeadm on a booting machine would do, read from its user data after cloud-init ran it (see
// cloud-init.ts): a plan to initialise a cluster or to join one, checked as kubeadm's preflight checks
// would check it on that machine — its CPUs and memory, the ports in use, swap, IP forwarding, the
// container runtime and kubelet installed and their versions, the configuration (read strictly, see
// kubeadm-config.ts) and the PKI it carries — or the errors that stop it.
import { createHash, createHmac, createPrivateKey, createPublicKey } from "node:crypto";
import { isIP } from "node:net";
import { InvalidCidrError, cidrsOverlap, parseCidr } from "../../api/cidr.ts";
import { PkiError, isValidBootstrapToken, keyMatchesCertificate } from "../../bootstrap/pki.ts";
import type { Image } from "../types.ts";
import { UserDataError, readCloudConfig, runCloudInit, type InstanceMetadata, type MachineSetup, type SecretReader } from "./cloud-init.ts";
import { KubeadmConfigError, readKubeadmConfig, type KubeadmConfig, type NodeRegistration } from "./kubeadm-config.ts";
import type { OidcIssuerSettings } from "../../apiserver/oidc-authentication.ts";

export const PKI_DIR = "/etc/kubernetes/pki";
const REQUIRED_PKI = ["ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "etcd/ca.crt", "etcd/ca.key", "sa.key", "sa.pub"];
const VERSION = /^v?(1)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const CA_HASH = /^sha256:[0-9a-f]{64}$/;
/** kubeadm's minimums for a control-plane machine (constants.ControlPlaneNumCPU, ControlPlaneMem). */
export const CONTROL_PLANE_CPUS = 2;
export const CONTROL_PLANE_MEMORY_MB = 1700;
/** Ports a control-plane machine needs free besides the API server's: scheduler, controller manager, etcd. */
const CONTROL_PLANE_PORTS = [10259, 10257, 2379, 2380];
const KUBELET_PORT = 10250;
/** kubeadm v1beta4's default timeouts. */
const DEFAULT_TIMEOUTS = { kubernetesAPICall: 60_000, kubeletHealthCheck: 4 * 60_000, discovery: 5 * 60_000 };

/** What kubeadm finds on the machine besides its user data. */
export interface MachineFacts {
  vcpus: number;
  memoryMiB: number;
  image: Image;
  /**
   * The machine's hostname, kubeadm's node name when nodeRegistration.name is not given (as machines a
   * scale set launches from one template join: each under its own name).
   */
  hostname?: string;
  /** Reads a cloud secret with the machine's own identity (its bootstrap fetch). */
  readSecret?: SecretReader;
  /** What the instance metadata service answers the machine (its addresses). */
  metadata?: InstanceMetadata;
}

/** What the node will report of itself: versions of what the machine installed. */
export interface NodeSoftware {
  kubeletVersion: string;
  containerRuntime: string;
}

interface CommonPlan {
  endpoint: string;
  node: NodeRegistration & { name: string };
  /** The files under /etc/kubernetes/pki, by path relative to it (ca.crt, etcd/ca.key, …). */
  pki: Record<string, string>;
  software: NodeSoftware;
  /** Preflight warnings kubeadm prints (and errors the configuration told it to ignore). */
  warnings: string[];
  /** The kubelet will not start: what it logs (kubeadm waits `kubeletHealthTimeoutMs` for it, then fails). */
  kubeletFailure?: string;
  kubeletHealthTimeoutMs: number;
}

export interface InitPlan extends CommonPlan {
  command: "init";
  clusterName: string;
  /** Always with the leading "v", e.g. v1.31.2. */
  kubernetesVersion: string;
  podSubnet: string;
  serviceSubnet: string;
  dnsDomain: string;
  token: string;
  /** Token lifetime in milliseconds; 0 means it never expires. */
  tokenTtlMs: number;
  /** Further names and addresses of the API server's certificate (apiServer.certSANs). */
  certSANs?: string[];
  /** The OpenID Connect issuer the API server trusts (apiServer.extraArgs oidc-*). */
  oidc?: OidcSettings;
  /** kube-apiserver's extra arguments as the configuration gave them (kept in the kubeadm-config ConfigMap). */
  apiServerExtraArgs?: { name: string; value: string }[];
  /** The port the API server binds (localAPIEndpoint.bindPort). */
  bindPort: number;
  /** The address the API server advertises (localAPIEndpoint.advertiseAddress); none: the machine's own. */
  advertiseAddress?: string;
  /** How long kubeadm retries an API call through the control-plane endpoint (timeouts.kubernetesAPICall). */
  apiCallTimeoutMs: number;
}

export interface JoinPlan extends CommonPlan {
  command: "join";
  token: string;
  caCertHashes: string[];
  unsafeSkipCAVerification: boolean;
  controlPlane: boolean;
  bindPort: number;
  /** How long discovery keeps trying the endpoint (timeouts.discovery). */
  discoveryTimeoutMs: number;
}

export type KubeadmPlan = InitPlan | JoinPlan;

/** kube-apiserver's --oidc-* flags, with the issuer's CA read from --oidc-ca-file: what its OIDC authenticator takes. */
export type OidcSettings = OidcIssuerSettings;

/** The OIDC settings of the API server's extra arguments, when they name an issuer (kube-apiserver's defaults otherwise). */
function oidcOf(args: readonly { name: string; value: string }[] | undefined, pki: Record<string, string>): { oidc?: OidcSettings } {
  const arg = (name: string) => args?.find((a) => a.name === name)?.value;
  const issuerUrl = arg("oidc-issuer-url");
  const clientId = arg("oidc-client-id");
  if (!issuerUrl || !clientId) return {};
  const usernameClaim = arg("oidc-username-claim") ?? "sub";
  const caFile = arg("oidc-ca-file");
  const caPem = caFile?.startsWith(`${PKI_DIR}/`) ? pki[caFile.slice(PKI_DIR.length + 1)] : undefined;
  const groupsClaim = arg("oidc-groups-claim");
  return {
    oidc: {
      issuerUrl,
      clientId,
      usernameClaim,
      // kube-apiserver prefixes usernames of claims other than email with the issuer URL unless told otherwise.
      usernamePrefix: arg("oidc-username-prefix") ?? (usernameClaim === "email" ? "" : `${issuerUrl}#`),
      ...(groupsClaim ? { groupsClaim } : {}),
      groupsPrefix: arg("oidc-groups-prefix") ?? "",
      ...(caPem ? { caPem } : {}),
    },
  };
}

/** A machine's kubeadm step that cannot run: what the machine prints, the first line being the gist. */
export class KubeadmFailure extends Error {
  override readonly name = "KubeadmFailure";
  constructor(
    readonly phase: string,
    readonly problems: string[],
    readonly before: string[] = [],
  ) {
    super(`error execution phase ${phase}: ${problems.join("; ")}`);
  }

  /** The lines kubeadm prints when it gives up. */
  get lines(): string[] {
    const head =
      this.problems.length === 1
        ? [`error execution phase ${this.phase}: ${this.problems[0]}`]
        : [`error execution phase ${this.phase}: [preflight] Some fatal errors occurred:`, ...this.problems.map((p) => `\t${p}`)];
    return [...this.before, ...head, "To see the stack trace of this error execute with --v=5 or higher"];
  }
}

/** What booting the machine comes to: cloud-init's output, and kubeadm's plan or failure (none when kubeadm never ran). */
export interface BootOutcome {
  setup?: MachineSetup;
  command?: "init" | "join";
  plan?: KubeadmPlan;
  failure?: KubeadmFailure;
  /** Lines cloud-init printed (package errors, a command not found). */
  output: string[];
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

/** [major, minor, patch] of v1.31.2 / 1.31.2. */
function semver(version: string): [number, number, number] | undefined {
  const match = VERSION.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
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

/** The address the kubelet reports as the node's InternalIP (its --node-ip), when given. */
export function nodeIpOf(node: Pick<NodeRegistration, "kubeletExtraArgs">): string | undefined {
  return node.kubeletExtraArgs?.find((a) => a.name === "node-ip")?.value;
}

function advertiseErrors(field: string, address: string | undefined): string[] {
  return address === undefined || isIP(address)
    ? []
    : [`[ERROR Config]: ${field}: Invalid value: "${address}": couldn't use "${address}" as "apiserver-advertise-address", must be ipv4 or ipv6 address`];
}

/** The kubelet refuses a --node-ip no interface of the machine holds (a public address behind the cloud's NAT included). */
function nodeIpFailure(node: NodeRegistration | undefined, facts: MachineFacts): string | undefined {
  const nodeIp = node ? nodeIpOf(node) : undefined;
  if (nodeIp === undefined) return undefined;
  const held = isIP(nodeIp) !== 0 && (facts.metadata === undefined || nodeIp === facts.metadata.localIpv4);
  return held ? undefined : `"command failed" err="failed to run Kubelet: failed to validate nodeIP: node IP: \\"${nodeIp}\\" not found in the host's network interfaces"`;
}

function pkiFilesOf(files: Map<string, string>): Record<string, string> {
  const pki: Record<string, string> = {};
  for (const [path, content] of files) if (path.startsWith(`${PKI_DIR}/`)) pki[path.slice(PKI_DIR.length + 1)] = content;
  return pki;
}

function keyMatches(certPem: string, keyPem: string): boolean {
  try {
    return keyMatchesCertificate({ certPem, keyPem });
  } catch (error) {
    if (error instanceof PkiError || error instanceof TypeError) return false;
    throw error;
  }
}

/** The SHA-256 of a PEM public key (or of the public half of a private key); undefined when unreadable. */
export function publicKeyDigest(pem: string, isPrivate = false): string | undefined {
  try {
    const key = isPrivate ? createPublicKey(createPrivateKey(pem)) : createPublicKey(pem);
    return createHash("sha256").update(key.export({ type: "spki", format: "der" })).digest("hex");
  } catch {
    return undefined;
  }
}

const SHARED_CAS: [string, string][] = [
  ["ca", "ca certificate authority"],
  ["front-proxy-ca", "front-proxy-ca certificate authority"],
  ["etcd/ca", "etcd/ca certificate authority"],
];

/** Problems with the PKI a control-plane machine carries: missing files, or keys of other certificates. */
export function pkiFileErrors(pki: Record<string, string>, required: readonly string[] = REQUIRED_PKI): string[] {
  const missing = required.filter((file) => !pki[file]);
  const errors = missing.map((file) => `[ERROR FileAvailable]: couldn't load ${PKI_DIR}/${file}: open ${PKI_DIR}/${file}: no such file or directory`);
  for (const [base, what] of SHARED_CAS) {
    const cert = pki[`${base}.crt`];
    const key = pki[`${base}.key`];
    if (cert && key && !keyMatches(cert, key)) {
      errors.push(`[ERROR CertificateAuthority]: failure loading ${what}: the private key ${PKI_DIR}/${base}.key does not match the certificate ${PKI_DIR}/${base}.crt`);
    }
  }
  if (pki["sa.key"] && pki["sa.pub"] && publicKeyDigest(pki["sa.key"], true) !== publicKeyDigest(pki["sa.pub"])) {
    errors.push(`[ERROR ServiceAccountKey]: the private key ${PKI_DIR}/sa.key does not match the public key ${PKI_DIR}/sa.pub`);
  }
  return errors;
}

function problem(check: string, message: string): Problem {
  return { check, message };
}

/** Checks of the machine itself: CPUs, memory, ports, IP forwarding, container runtime, kubelet. */
function machineProblems(facts: MachineFacts, setup: MachineSetup, controlPlane: boolean, bindPort: number, controlPlaneVersion?: string): Problem[] {
  const problems: Problem[] = [];
  if (controlPlane && facts.vcpus < CONTROL_PLANE_CPUS) {
    problems.push(problem("NumCPU", `the number of available CPUs ${facts.vcpus} is less than the required ${CONTROL_PLANE_CPUS}`));
  }
  if (controlPlane && facts.memoryMiB < CONTROL_PLANE_MEMORY_MB) {
    problems.push(problem("Mem", `the system RAM (${facts.memoryMiB} MB) is less than the minimum ${CONTROL_PLANE_MEMORY_MB} MB`));
  }
  const ports = controlPlane ? [bindPort, ...CONTROL_PLANE_PORTS.slice(0, 2), KUBELET_PORT, ...CONTROL_PLANE_PORTS.slice(2)] : [KUBELET_PORT];
  for (const port of ports) if (setup.listening.includes(port)) problems.push(problem(`Port-${port}`, `Port ${port} is in use`));
  if (!setup.ipForward) problems.push(problem("FileContent--proc-sys-net-ipv4-ip_forward", "/proc/sys/net/ipv4/ip_forward contents are not set to 1"));
  if (!setup.containerRuntime) {
    problems.push(
      problem(
        "CRI",
        'container runtime is not running: output: time="" level=fatal msg="validate service connection: validate CRI v1 runtime API for endpoint \\"unix:///var/run/containerd/containerd.sock\\": rpc error: code = Unavailable desc = connection error: desc = \\"transport: Error while dialing: dial unix /var/run/containerd/containerd.sock: connect: no such file or directory\\"", error: exit status 1',
      ),
    );
  }
  problems.push(...kubeletVersionProblems(setup.kubeletVersion, setup.kubeadmVersion, controlPlaneVersion));
  return problems;
}

/** A preflight check's failure, by the name --ignore-preflight-errors knows it by. */
export interface Problem {
  check: string;
  message: string;
}

/** kubeadm's KubeletVersionCheck: a kubelet is there, not older than kubeadm supports, not newer than the control plane. */
export function kubeletVersionProblems(kubeletVersion: string | undefined, kubeadmVersion: string | undefined, controlPlaneVersion: string | undefined): Problem[] {
  if (!kubeletVersion) {
    return [problem("KubeletVersion", "couldn't get kubelet version: cannot execute 'kubelet --version': executable file not found in $PATH")];
  }
  const kubelet = semver(kubeletVersion)!;
  const kubeadm = semver(kubeadmVersion ?? kubeletVersion)!;
  const plain = kubeletVersion.replace(/^v/, "");
  if (kubelet[1] < kubeadm[1] - 3) return [problem("KubeletVersion", `Kubelet version "${plain}" is lower than kubeadm can support. Please upgrade kubelet`)];
  const control = controlPlaneVersion === undefined ? undefined : semver(controlPlaneVersion);
  if (control && kubelet[1] > control[1]) {
    return [
      problem(
        "KubeletVersion",
        `the kubelet version is higher than the control plane version. This is not a supported version skew and may lead to a malfunctional cluster. Kubelet version: "${plain}" Control plane version: "${controlPlaneVersion!.replace(/^v/, "")}"`,
      ),
    ];
  }
  return [];
}

/** kubeadm's KubernetesVersion check: kubeadm deploys its own minor and the one before. */
function kubernetesVersionProblems(kubeadmVersion: string, version: string): Problem[] {
  const kubeadm = semver(kubeadmVersion)!;
  const wanted = semver(version)!;
  if (wanted[1] > kubeadm[1]) {
    return [problem("KubernetesVersion", `Kubernetes version is greater than kubeadm version. Please consider to upgrade kubeadm. Kubernetes version: ${version.replace(/^v/, "")}. Kubeadm version: ${kubeadm[0]}.${kubeadm[1]}.x`)];
  }
  if (wanted[1] < kubeadm[1] - 1) {
    return [problem("KubernetesVersion", `this version of kubeadm only supports deploying clusters with the control plane version >= ${kubeadm[0]}.${kubeadm[1] - 1}.0. Current version: v${version.replace(/^v/, "")}`)];
  }
  return [];
}

/** Splits problems into errors and the warnings --ignore-preflight-errors turns some into. */
function applyIgnores(problems: Problem[], ignored: ReadonlySet<string>): { errors: string[]; warnings: string[] } {
  const all = ignored.has("all");
  const errors: string[] = [];
  const warnings: string[] = [];
  for (const p of problems) {
    if (all || ignored.has(p.check.toLowerCase())) warnings.push(`[WARNING ${p.check}]: ${p.message}`);
    else errors.push(`[ERROR ${p.check}]: ${p.message}`);
  }
  return { errors, warnings };
}

/** Swap is a warning for kubeadm; the kubelet then refuses to start unless failSwapOn is false. */
function swapOutcome(setup: MachineSetup, config: KubeadmConfig): { warnings: string[]; kubeletFailure?: string } {
  if (!setup.swapOn) return { warnings: [] };
  const warnings = ["[WARNING Swap]: swap is enabled; production deployments should disable swap unless testing the NodeSwap feature gate of the kubelet"];
  if (!config.failSwapOn) return { warnings };
  return { warnings, kubeletFailure: '"command failed" err="failed to run Kubelet: running with swap on is not supported, please disable swap or set --fail-swap-on flag to false"' };
}

/** Why the kubelet does not start: swap, else a --node-ip the machine does not hold. */
function kubeletFailureOf(swap: string | undefined, node: NodeRegistration | undefined, facts: MachineFacts): { kubeletFailure?: string } {
  const failure = swap ?? nodeIpFailure(node, facts);
  return failure ? { kubeletFailure: failure } : {};
}

function timeoutOf(text: string | undefined, fallback: number): number {
  return text === undefined ? fallback : (parseDuration(text) ?? fallback);
}

interface Command {
  verb: "init" | "join";
  configPath?: string;
  ignored: Set<string>;
}

function parseCommand(line: string): Command {
  const words = line.split(/\s+/).slice(1);
  const verb = words[0] === "init" ? "init" : "join";
  let configPath: string | undefined;
  const ignored = new Set<string>();
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    const [flag, inline] = word.split("=", 2) as [string, string | undefined];
    const value = inline ?? words[i + 1];
    if (flag === "--config") configPath = value;
    if (flag === "--ignore-preflight-errors") for (const name of (value ?? "").split(",")) ignored.add(name.trim().toLowerCase());
    if (inline === undefined && (flag === "--config" || flag === "--ignore-preflight-errors")) i++;
  }
  return { verb, ...(configPath ? { configPath } : {}), ignored };
}

function softwareOf(setup: MachineSetup): NodeSoftware {
  return { kubeletVersion: setup.kubeletVersion ?? "", containerRuntime: setup.containerRuntime ?? "" };
}

function planInit(config: KubeadmConfig, setup: MachineSetup, facts: MachineFacts, command: Command): InitPlan {
  const { init = { apiVersion: "", kind: "InitConfiguration" }, cluster } = config;
  if (!cluster) throw new KubeadmFailure("preflight", ["[ERROR Config]: kubeadm init needs a ClusterConfiguration (the control-plane endpoint, version and networking)"]);
  const pki = pkiFilesOf(setup.files);
  const version = String(cluster.kubernetesVersion ?? "");
  const networking = { podSubnet: "", serviceSubnet: "10.96.0.0/12", dnsDomain: "cluster.local", ...cluster.networking };
  const token = init.bootstrapTokens?.[0];
  const ttl = token?.ttl === undefined ? 24 * 3_600_000 : parseDuration(token.ttl);
  const bindPort = init.localAPIEndpoint?.bindPort ?? 6443;
  const configProblems = [
    ...(semver(version) ? [] : [`[ERROR KubernetesVersion]: couldn't parse Kubernetes version "${version}": expected v1.MINOR.PATCH`]),
    ...endpointErrors("controlPlaneEndpoint", cluster.controlPlaneEndpoint),
    ...subnetErrors("networking.podSubnet", networking.podSubnet),
    ...subnetErrors("networking.serviceSubnet", networking.serviceSubnet),
    ...(networking.dnsDomain ? [] : ["[ERROR Config]: networking.dnsDomain: Required value"]),
    ...(token && isValidBootstrapToken(token.token) ? [] : [`[ERROR Config]: bootstrapTokens[0].token: Invalid value: the bootstrap token is invalid`]),
    ...(ttl === undefined ? [`[ERROR Config]: bootstrapTokens[0].ttl: Invalid value: "${token?.ttl}": not a duration`] : []),
    ...nodeErrors(init.nodeRegistration),
    ...advertiseErrors("localAPIEndpoint.advertiseAddress", init.localAPIEndpoint?.advertiseAddress),
    ...pkiFileErrors(pki),
  ];
  if (configProblems.length === 0) {
    const pods = parseCidr(networking.podSubnet);
    if (pods.prefix > 24) configProblems.push(`[ERROR Config]: networking.podSubnet: Invalid value: "${networking.podSubnet}": the pod subnet must be /24 or larger to give every node a /24`);
    if (cidrsOverlap(pods, networking.serviceSubnet)) configProblems.push(`[ERROR Config]: networking.podSubnet: Invalid value: "${networking.podSubnet}": overlaps the service subnet ${networking.serviceSubnet}`);
  }
  const ignored = new Set([...command.ignored, ...(init.nodeRegistration?.ignorePreflightErrors ?? []).map((n) => n.toLowerCase())]);
  const machine = [
    ...machineProblems(facts, setup, true, bindPort, semver(version) ? version : undefined),
    ...(semver(version) ? kubernetesVersionProblems(setup.kubeadmVersion!, version) : []),
  ];
  const { errors, warnings } = applyIgnores(machine, ignored);
  const swap = swapOutcome(setup, config);
  const problems = [...configProblems, ...errors];
  if (problems.length > 0) throw new KubeadmFailure("preflight", problems, [...warnings, ...swap.warnings]);
  const timeouts = init.timeouts ?? {};
  return {
    command: "init",
    clusterName: cluster.clusterName || "kubernetes",
    kubernetesVersion: version.startsWith("v") ? version : `v${version}`,
    endpoint: cluster.controlPlaneEndpoint!,
    certSANs: cluster.apiServer?.certSANs ?? [],
    ...oidcOf(cluster.apiServer?.extraArgs, pki),
    ...(cluster.apiServer?.extraArgs?.length ? { apiServerExtraArgs: cluster.apiServer.extraArgs.map(({ name, value }) => ({ name, value })) } : {}),
    podSubnet: networking.podSubnet,
    serviceSubnet: networking.serviceSubnet,
    dnsDomain: networking.dnsDomain,
    token: token!.token,
    tokenTtlMs: ttl!,
    node: { ...init.nodeRegistration, name: init.nodeRegistration!.name! },
    pki,
    software: softwareOf(setup),
    warnings: [...warnings, ...swap.warnings],
    ...(init.localAPIEndpoint?.advertiseAddress ? { advertiseAddress: init.localAPIEndpoint.advertiseAddress } : {}),
    ...kubeletFailureOf(swap.kubeletFailure, init.nodeRegistration, facts),
    kubeletHealthTimeoutMs: timeoutOf(timeouts.kubeletHealthCheck, DEFAULT_TIMEOUTS.kubeletHealthCheck),
    bindPort,
    apiCallTimeoutMs: timeoutOf(timeouts.kubernetesAPICall, DEFAULT_TIMEOUTS.kubernetesAPICall),
  };
}

function planJoin(config: KubeadmConfig, setup: MachineSetup, facts: MachineFacts, command: Command): JoinPlan {
  const join = config.join;
  // kubeadm names the node after the host when its configuration names none.
  if (join && !join.nodeRegistration?.name && facts.hostname) join.nodeRegistration = { ...join.nodeRegistration, name: facts.hostname };
  const discovery = join?.discovery.bootstrapToken;
  if (!join || !discovery) throw new KubeadmFailure("preflight", ["[ERROR Config]: kubeadm join needs a JoinConfiguration with discovery.bootstrapToken"]);
  const hashes = discovery.caCertHashes ?? [];
  const unsafe = discovery.unsafeSkipCAVerification === true;
  const controlPlane = join.controlPlane !== undefined;
  const bindPort = join.controlPlane?.localAPIEndpoint?.bindPort ?? 6443;
  const pki = pkiFilesOf(setup.files);
  const caCertPath = join.caCertPath ?? `${PKI_DIR}/ca.crt`;
  const configProblems = [
    ...endpointErrors("discovery.bootstrapToken.apiServerEndpoint", discovery.apiServerEndpoint),
    ...(isValidBootstrapToken(discovery.token) ? [] : ["[ERROR Config]: discovery.bootstrapToken.token: Invalid value: the bootstrap token is invalid"]),
    ...(hashes.length === 0 && !unsafe
      ? ["[ERROR Config]: discovery.bootstrapToken.caCertHashes: Invalid value: using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue"]
      : []),
    ...hashes.filter((h) => !CA_HASH.test(h)).map((h) => `[ERROR Config]: discovery.bootstrapToken.caCertHashes: Invalid value: "${h}": expected sha256:<64 hexadecimal digits>`),
    ...nodeErrors(join.nodeRegistration),
    ...advertiseErrors("controlPlane.localAPIEndpoint.advertiseAddress", join.controlPlane?.localAPIEndpoint?.advertiseAddress),
  ];
  const machine = machineProblems(facts, setup, controlPlane, bindPort);
  // A worker's kubelet gets its CA through the TLS bootstrap: a CA file already there is a leftover.
  if (!controlPlane && setup.files.has(caCertPath)) machine.push(problem(`FileAvailable-${caCertPath.replaceAll("/", "-")}`, `${caCertPath} already exists`));
  const ignored = new Set([...command.ignored, ...(join.nodeRegistration?.ignorePreflightErrors ?? []).map((n) => n.toLowerCase())]);
  const { errors, warnings } = applyIgnores(machine, ignored);
  const swap = swapOutcome(setup, config);
  const problems = [...configProblems, ...errors];
  if (problems.length > 0) throw new KubeadmFailure("preflight", problems, [...warnings, ...swap.warnings]);
  const timeouts = join.timeouts ?? {};
  return {
    command: "join",
    endpoint: discovery.apiServerEndpoint!,
    token: discovery.token,
    caCertHashes: hashes,
    unsafeSkipCAVerification: unsafe,
    controlPlane,
    bindPort,
    node: { ...join.nodeRegistration, name: join.nodeRegistration!.name! },
    pki,
    software: softwareOf(setup),
    warnings: [...warnings, ...swap.warnings],
    ...kubeletFailureOf(swap.kubeletFailure, join.nodeRegistration, facts),
    kubeletHealthTimeoutMs: timeoutOf(timeouts.kubeletHealthCheck, DEFAULT_TIMEOUTS.kubeletHealthCheck),
    discoveryTimeoutMs: timeoutOf(timeouts.discovery, DEFAULT_TIMEOUTS.discovery),
  };
}

/**
 * What booting a machine with this user data comes to: nothing (no cloud-config), cloud-init's output
 * alone (kubeadm never ran), or kubeadm's plan or the failure that stops it at once.
 */
export function bootOutcome(userData: string, facts: MachineFacts): BootOutcome {
  let config;
  try {
    config = readCloudConfig(userData);
  } catch (error) {
    if (!(error instanceof UserDataError)) throw error;
    return { output: [`util.py[WARNING]: ${error.message}`, "cloud-init: the user data was not run"] };
  }
  if (!config) return { output: [] };
  const setup = runCloudInit(config, facts.image, facts.readSecret, facts.metadata);
  if (!setup.kubeadmCommand) return { setup, output: setup.output };
  const command = parseCommand(setup.kubeadmCommand);
  const outcome = { setup, command: command.verb, output: setup.output };
  try {
    if (!command.configPath) throw new KubeadmFailure("preflight", [`[ERROR Config]: kubeadm ${command.verb} runs without --config; this machine's kubeadm reads its configuration from a file`]);
    const text = setup.files.get(command.configPath);
    if (text === undefined) throw new KubeadmFailure("preflight", [`[ERROR Config]: unable to read config from "${command.configPath}" : open ${command.configPath}: no such file or directory`]);
    let kubeadmConfig: KubeadmConfig;
    try {
      kubeadmConfig = readKubeadmConfig(text);
    } catch (error) {
      if (error instanceof KubeadmConfigError) throw new KubeadmFailure("preflight", [`[ERROR Config]: ${error.message}`]);
      throw error;
    }
    const plan = command.verb === "init" ? planInit(kubeadmConfig, setup, facts, command) : planJoin(kubeadmConfig, setup, facts, command);
    return { ...outcome, plan };
  } catch (error) {
    if (error instanceof KubeadmFailure) return { ...outcome, failure: error };
    throw error;
  }
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
