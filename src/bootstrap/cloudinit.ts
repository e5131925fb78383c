// cloud-init user data: what a machine installs at first boot (a container runtime, and kubelet, kubeadm
// and kubectl of the cluster's version from the Kubernetes package repository, held there), how it is
// prepared for kubeadm (swap off, IP forwarding on, containerd on the systemd cgroup driver), the files
// it needs, and the kubeadm command it runs — or, where the cloud keeps secrets, a reference to the secret
// holding those files, read once at boot. Only written here; a machine (or the sim cloud, as one) reads it.
import { stringify } from "yaml";
import { pkiFiles, renderInitConfiguration, renderJoinConfiguration, type ClusterPki, type InitInput, type JoinInput } from "./kubeadm.ts";

export const KUBEADM_CONFIG_PATH = "/run/kubeadm/kubeadm.yaml";
/** The signing key of pkgs.k8s.io (isv:kubernetes OBS Project), by fingerprint. */
export const KUBERNETES_APT_KEY = "DE15B14486CD377B9E876E1A234654DA9A296436";

export interface CloudInitFile {
  path: string;
  content: string;
  permissions?: string;
  owner?: string;
}

export interface AptSource {
  /** A sources.list line; cloud-init puts the key's file where it says $KEY_FILE. */
  source: string;
  keyid: string;
}

export interface CloudConfig {
  aptSources?: Record<string, AptSource>;
  /** Packages to install, "name" or "name=version" (apt's version globs allowed). */
  packages?: string[];
  files: CloudInitFile[];
  commands: string[];
}

export class CloudInitError extends Error {
  override readonly name = "CloudInitError";
}

export function renderCloudConfig(config: CloudConfig): string {
  const doc = {
    ...(config.aptSources ? { apt: { sources: config.aptSources } } : {}),
    ...(config.packages ? { package_update: true, packages: config.packages } : {}),
    write_files: config.files.map((f) => ({ path: f.path, owner: f.owner ?? "root:root", permissions: f.permissions ?? "0640", content: f.content })),
    runcmd: config.commands,
  };
  return `#cloud-config\n${stringify(doc, { lineWidth: 0 })}`;
}

/** "v1.31.2" → the minor's repository and the packages pinned to that release. */
function kubernetesPackages(version: string): { minor: string; pin: string } {
  const match = /^v?(1\.\d+)\.(\d+)$/.exec(version);
  if (!match) throw new CloudInitError(`kubernetesVersion "${version}" is not v1.MINOR.PATCH`);
  return { minor: match[1]!, pin: `${match[1]}.${match[2]}-*` };
}

/**
 * What every node needs before kubeadm runs, as the kubeadm installation guide has it: containerd from
 * the distribution, kubelet, kubeadm and kubectl of exactly the cluster's version (held, so an upgrade
 * of the system does not move them), the kernel modules and sysctls of a node, swap off, and containerd
 * on the systemd cgroup driver the kubelet uses.
 */
function nodeSoftware(kubernetesVersion: string): Required<Pick<CloudConfig, "aptSources" | "packages">> & CloudConfig {
  const { minor, pin } = kubernetesPackages(kubernetesVersion);
  return {
    aptSources: { "kubernetes.list": { source: `deb [signed-by=$KEY_FILE] https://pkgs.k8s.io/core:/stable:/v${minor}/deb/ /`, keyid: KUBERNETES_APT_KEY } },
    packages: ["containerd", `kubelet=${pin}`, `kubeadm=${pin}`, `kubectl=${pin}`],
    files: [
      { path: "/etc/modules-load.d/kubernetes.conf", content: "overlay\nbr_netfilter\n", permissions: "0644" },
      {
        path: "/etc/sysctl.d/99-kubernetes.conf",
        content: "net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\nnet.bridge.bridge-nf-call-ip6tables = 1\n",
        permissions: "0644",
      },
    ],
    commands: [
      "apt-mark hold kubelet kubeadm kubectl",
      "swapoff -a",
      "sed -ri '/\\sswap\\s/s/^#?/#/' /etc/fstab",
      "modprobe overlay",
      "modprobe br_netfilter",
      "sysctl --system",
      "mkdir -p /etc/containerd",
      "containerd config default | sed 's/SystemdCgroup = false/SystemdCgroup = true/' > /etc/containerd/config.toml",
      "systemctl restart containerd",
    ],
  };
}

/**
 * A machine's bootstrap: its Kubernetes version (for the software it installs), the files kubeadm reads —
 * the cluster's keys and the bootstrap token among them, so all of them are secret — and its command.
 */
export interface NodeBootstrap {
  kubernetesVersion: string;
  secretFiles: CloudInitFile[];
  /** What runs just before the command, once the files are there (a control-plane join's wait for its turn). */
  before?: string[];
  command: string;
}

/**
 * The command a joining control-plane machine runs before `kubeadm join`: it takes the Lease
 * kube-system/slipway-control-plane-join in the cluster (with a client certificate it signs with the
 * cluster CA it carries, as `kubeadm kubeconfig user` does), once no other machine holds it and etcd has
 * no learner pending, so that control-plane joins go one at a time whenever the machines were made.
 */
export const JOIN_TURN_COMMAND = "slipway-join-turn";

export function joinTurnCommand(): string {
  return `${JOIN_TURN_COMMAND} --config ${KUBEADM_CONFIG_PATH} --lease kube-system/slipway-control-plane-join`;
}

/**
 * A machine's own addresses, as cloud-init's instance data names them: kubeadm's configuration carries
 * these placeholders where the addresses are only known once the instance exists (its public address is
 * the cloud's, outside the machine: no interface holds it), and NODE_ADDRESSES_COMMAND fills them in at boot.
 */
export const LOCAL_IPV4 = "{{ ds.meta_data.local_ipv4 }}";
export const PUBLIC_IPV4 = "{{ ds.meta_data.public_ipv4 }}";

/** The command that fills the machine's addresses into kubeadm's configuration from the instance metadata, before kubeadm runs. */
export const NODE_ADDRESSES_COMMAND = "slipway-node-addresses";

export function nodeAddressesCommand(): string {
  return `${NODE_ADDRESSES_COMMAND} --config ${KUBEADM_CONFIG_PATH}`;
}

/** The bootstrap with the machine's addresses filled in first, before anything else reads kubeadm's configuration. */
export function fillingAddresses(bootstrap: NodeBootstrap): NodeBootstrap {
  return { ...bootstrap, before: [nodeAddressesCommand(), ...(bootstrap.before ?? [])] };
}

/** Where a booting machine reads its secret files from with its own identity (a secret of its cloud). */
export interface BootstrapSecretRef {
  id: string;
  region: string;
  endpoint?: string;
}

/** The command that reads the machine's bootstrap secret at boot and writes its files (before kubeadm runs). */
export const BOOTSTRAP_FETCH_COMMAND = "slipway-bootstrap-fetch";

export function fetchCommand(ref: BootstrapSecretRef): string {
  return [BOOTSTRAP_FETCH_COMMAND, "--secret-id", ref.id, "--region", ref.region, ...(ref.endpoint ? ["--endpoint", ref.endpoint] : [])].join(" ");
}

/**
 * The user data: the node's software and preparation, then its files and kubeadm command. With a secret
 * reference the files stay out of it: the machine reads them from the secret at boot, so the user data
 * (which the cloud keeps for the instance's whole life) holds no token and no key.
 */
export function renderUserData(bootstrap: NodeBootstrap, secret?: BootstrapSecretRef): string {
  const software = nodeSoftware(bootstrap.kubernetesVersion);
  return renderCloudConfig({
    aptSources: software.aptSources,
    packages: software.packages,
    files: secret ? software.files : [...software.files, ...bootstrap.secretFiles],
    commands: [...software.commands, ...(secret ? [fetchCommand(secret)] : []), ...(bootstrap.before ?? []), bootstrap.command],
  });
}

/** The value of the machine's bootstrap secret: its secret files, as cloud-config's write_files entries. */
export function bootstrapSecretValue(bootstrap: NodeBootstrap): string {
  return stringify(
    bootstrap.secretFiles.map((f) => ({ path: f.path, owner: f.owner ?? "root:root", permissions: f.permissions ?? "0640", content: f.content })),
    { lineWidth: 0 },
  );
}

/** The first control-plane machine: the cluster PKI, kubeadm's config, `kubeadm init`. */
export function initBootstrap(input: InitInput, pki: ClusterPki): NodeBootstrap {
  return {
    kubernetesVersion: input.kubernetesVersion,
    secretFiles: [...pkiFiles(pki), { path: KUBEADM_CONFIG_PATH, content: renderInitConfiguration(input), permissions: "0640" }],
    command: `kubeadm init --config ${KUBEADM_CONFIG_PATH}`,
  };
}

/**
 * A joining machine; control-plane machines also carry the cluster PKI and, with `takeTurn`, wait for
 * their turn to join (JOIN_TURN_COMMAND).
 */
export function joinBootstrap(input: JoinInput, pki?: ClusterPki, takeTurn = false): NodeBootstrap {
  return {
    kubernetesVersion: input.kubernetesVersion,
    secretFiles: [...(input.controlPlane && pki ? pkiFiles(pki) : []), { path: KUBEADM_CONFIG_PATH, content: renderJoinConfiguration(input), permissions: "0640" }],
    ...(takeTurn && input.controlPlane ? { before: [joinTurnCommand()] } : {}),
    command: `kubeadm join --config ${KUBEADM_CONFIG_PATH}`,
  };
}

/** User data of the first control-plane machine, its secret files inline. */
export function initUserData(input: InitInput, pki: ClusterPki): string {
  return renderUserData(initBootstrap(input, pki));
}

/** User data of a joining machine, its secret files inline. */
export function joinUserData(input: JoinInput, pki?: ClusterPki, takeTurn = false): string {
  return renderUserData(joinBootstrap(input, pki, takeTurn));
}
