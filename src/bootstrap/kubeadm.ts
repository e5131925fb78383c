// kubeadm configuration (kubeadm.k8s.io/v1beta4) for the first control-plane machine, the others, and
// the workers. Only written here: what reads it is kubeadm on the machine (in the sim cloud, its own
// strict reader of the v1beta4 schema).
import { stringify } from "yaml";
import type { KeyPairPem } from "./pki.ts";

export const KUBEADM_API_VERSION = "kubeadm.k8s.io/v1beta4";

export interface NodeRegistration {
  /** The node's name; none: kubeadm takes the host's name (machines a scale set launches from one template). */
  name?: string;
  labels?: Record<string, string>;
  taints?: { key: string; value?: string; effect: string }[];
  /** The kubelet's --node-ip: the address the node reports as its InternalIP. */
  nodeIp?: string;
}

/** The cluster-wide PKI every control-plane machine carries (kubeadm reads it from /etc/kubernetes/pki). */
export interface ClusterPki {
  ca: KeyPairPem;
  frontProxyCa: KeyPairPem;
  etcdCa: KeyPairPem;
  serviceAccount: { publicKeyPem: string; privateKeyPem: string };
  /** PEM of the CA an OpenID Connect issuer the API server trusts is served with (oidc-ca.crt). */
  oidcCaPem?: string;
}

/** An OpenID Connect issuer the API server accepts ID tokens of (kube-apiserver's --oidc-* flags). */
export interface OidcIssuer {
  issuerUrl: string;
  clientId: string;
  usernameClaim: string;
  usernamePrefix: string;
  groupsClaim: string;
  groupsPrefix: string;
}

/** Where the issuer's CA is written on control-plane machines. */
export const OIDC_CA_FILE = "/etc/kubernetes/pki/oidc-ca.crt";

export interface ClusterConfigurationInput {
  clusterName: string;
  kubernetesVersion: string;
  /** host:port of the load balancer in front of the API servers. */
  controlPlaneEndpoint: string;
  /** Further names (or addresses) the API server's certificate holds (apiServer.certSANs). */
  certSANs?: string[];
  podSubnet: string;
  serviceSubnet: string;
  dnsDomain: string;
  /** An issuer whose ID tokens the API server accepts (its CA comes with the PKI: ClusterPki.oidcCaPem). */
  oidc?: OidcIssuer;
}

export interface InitInput extends ClusterConfigurationInput {
  bootstrapToken: string;
  /** Bootstrap token lifetime; kubeadm's default is 24 h. */
  tokenTtl?: string;
  node: NodeRegistration;
  advertiseAddress?: string;
}

export interface JoinInput {
  /** The cluster's version: the kubelet and kubeadm installed on the machine match it. */
  kubernetesVersion: string;
  controlPlaneEndpoint: string;
  bootstrapToken: string;
  caCertHashes: string[];
  node: NodeRegistration;
  /** Set for control-plane machines that join. */
  controlPlane?: { advertiseAddress?: string };
}

/** nodeRegistration as v1beta4 has it: labels reach the kubelet through its --node-labels flag. */
export interface NodeRegistrationOptions {
  name?: string;
  taints?: { key: string; value?: string; effect: string }[];
  kubeletExtraArgs?: { name: string; value: string }[];
}

export interface InitConfiguration {
  apiVersion: string;
  kind: "InitConfiguration";
  bootstrapTokens: { token: string; ttl?: string; usages?: string[]; groups?: string[] }[];
  nodeRegistration: NodeRegistrationOptions;
  localAPIEndpoint?: { advertiseAddress?: string; bindPort?: number };
}

export interface ClusterConfiguration {
  apiVersion: string;
  kind: "ClusterConfiguration";
  clusterName: string;
  kubernetesVersion: string;
  controlPlaneEndpoint: string;
  apiServer?: { certSANs?: string[]; extraArgs?: { name: string; value: string }[] };
  networking: { podSubnet: string; serviceSubnet: string; dnsDomain: string };
  certificatesDir?: string;
  /** The key algorithm of the PKI (v1beta4): the keys Slipway hands over are ECDSA P-256. */
  encryptionAlgorithm?: "RSA-2048" | "RSA-3072" | "RSA-4096" | "ECDSA-P256" | "ECDSA-P384";
}

export interface JoinConfiguration {
  apiVersion: string;
  kind: "JoinConfiguration";
  discovery: { bootstrapToken: { apiServerEndpoint: string; token: string; caCertHashes: string[]; unsafeSkipCAVerification?: boolean } };
  nodeRegistration: NodeRegistrationOptions;
  controlPlane?: { localAPIEndpoint?: { advertiseAddress?: string; bindPort?: number } };
}

function clusterConfiguration(input: ClusterConfigurationInput): ClusterConfiguration {
  return {
    apiVersion: KUBEADM_API_VERSION,
    kind: "ClusterConfiguration",
    clusterName: input.clusterName,
    kubernetesVersion: input.kubernetesVersion,
    controlPlaneEndpoint: input.controlPlaneEndpoint,
    ...apiServer(input),
    networking: { podSubnet: input.podSubnet, serviceSubnet: input.serviceSubnet, dnsDomain: input.dnsDomain },
    certificatesDir: "/etc/kubernetes/pki",
    encryptionAlgorithm: "ECDSA-P256",
  };
}

function apiServer(input: ClusterConfigurationInput): Pick<ClusterConfiguration, "apiServer"> {
  const sans = input.certSANs && input.certSANs.length > 0 ? { certSANs: [...input.certSANs] } : {};
  const oidc = input.oidc;
  const extraArgs = oidc
    ? [
        { name: "oidc-issuer-url", value: oidc.issuerUrl },
        { name: "oidc-client-id", value: oidc.clientId },
        { name: "oidc-username-claim", value: oidc.usernameClaim },
        { name: "oidc-username-prefix", value: oidc.usernamePrefix },
        { name: "oidc-groups-claim", value: oidc.groupsClaim },
        { name: "oidc-groups-prefix", value: oidc.groupsPrefix },
        { name: "oidc-ca-file", value: OIDC_CA_FILE },
      ]
    : [];
  return Object.keys(sans).length > 0 || extraArgs.length > 0 ? { apiServer: { ...sans, ...(extraArgs.length > 0 ? { extraArgs } : {}) } } : {};
}

function registration(node: NodeRegistration): NodeRegistrationOptions {
  const labels = Object.entries(node.labels ?? {}).map(([key, value]) => `${key}=${value}`);
  return {
    ...(node.name ? { name: node.name } : {}),
    ...(node.taints ? { taints: node.taints } : {}),
    ...(labels.length > 0 || node.nodeIp ? { kubeletExtraArgs: [...(labels.length > 0 ? [{ name: "node-labels", value: labels.join(",") }] : []), ...(node.nodeIp ? [{ name: "node-ip", value: node.nodeIp }] : [])] } : {}),
  };
}

/** The configuration `kubeadm init --config` reads on the first control-plane machine. */
export function renderInitConfiguration(input: InitInput): string {
  const init: InitConfiguration = {
    apiVersion: KUBEADM_API_VERSION,
    kind: "InitConfiguration",
    bootstrapTokens: [{ token: input.bootstrapToken, ttl: input.tokenTtl ?? "24h0m0s", usages: ["signing", "authentication"], groups: ["system:bootstrappers:kubeadm:default-node-token"] }],
    nodeRegistration: registration(input.node),
    ...(input.advertiseAddress ? { localAPIEndpoint: { advertiseAddress: input.advertiseAddress, bindPort: 6443 } } : {}),
  };
  return [stringify(init), stringify(clusterConfiguration(input))].join("---\n");
}

/** The configuration `kubeadm join --config` reads on every other machine. */
export function renderJoinConfiguration(input: JoinInput): string {
  const join: JoinConfiguration = {
    apiVersion: KUBEADM_API_VERSION,
    kind: "JoinConfiguration",
    discovery: { bootstrapToken: { apiServerEndpoint: input.controlPlaneEndpoint, token: input.bootstrapToken, caCertHashes: input.caCertHashes } },
    nodeRegistration: registration(input.node),
    ...(input.controlPlane ? { controlPlane: { localAPIEndpoint: { advertiseAddress: input.controlPlane.advertiseAddress, bindPort: 6443 } } } : {}),
  };
  return stringify(join);
}

/** Where kubeadm expects each file of the cluster PKI. */
export function pkiFiles(pki: ClusterPki): { path: string; content: string; permissions: string }[] {
  const dir = "/etc/kubernetes/pki";
  return [
    { path: `${dir}/ca.crt`, content: pki.ca.certPem, permissions: "0644" },
    { path: `${dir}/ca.key`, content: pki.ca.keyPem, permissions: "0600" },
    { path: `${dir}/front-proxy-ca.crt`, content: pki.frontProxyCa.certPem, permissions: "0644" },
    { path: `${dir}/front-proxy-ca.key`, content: pki.frontProxyCa.keyPem, permissions: "0600" },
    { path: `${dir}/etcd/ca.crt`, content: pki.etcdCa.certPem, permissions: "0644" },
    { path: `${dir}/etcd/ca.key`, content: pki.etcdCa.keyPem, permissions: "0600" },
    { path: `${dir}/sa.pub`, content: pki.serviceAccount.publicKeyPem, permissions: "0644" },
    { path: `${dir}/sa.key`, content: pki.serviceAccount.privateKeyPem, permissions: "0600" },
    ...(pki.oidcCaPem ? [{ path: OIDC_CA_FILE, content: pki.oidcCaPem, permissions: "0644" }] : []),
  ];
}
