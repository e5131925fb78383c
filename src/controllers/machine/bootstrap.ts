// A machine's bootstrap data: the cloud-init user data that runs `kubeadm init` on the first
// control-plane machine and `kubeadm join` on every other one, rendered from the Cluster, the
// control-plane endpoint, the cluster's PKI and bootstrap token, and (for pool machines) the pool.
import type { ClusterObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { DEFAULT_KUBERNETES_VERSION, LABEL_CLUSTER } from "../../api/slipway/cluster.ts";
import { LOCAL_IPV4, PUBLIC_IPV4, fillingAddresses, initBootstrap, joinBootstrap, renderUserData, type NodeBootstrap } from "../../bootstrap/cloudinit.ts";
import type { ClusterPki, NodeRegistration, OidcIssuer } from "../../bootstrap/kubeadm.ts";
import { caCertHash } from "../../bootstrap/pki.ts";
import { LABEL_POOL } from "../../api/slipway/machinepool.ts";
import { isControlPlane, isInitMachine } from "./status.ts";

/**
 * Lifetime of the bootstrap token `kubeadm init` creates: kubeadm's own 24 hours. A machine joining
 * later has the token made valid again first (jointoken.ts), so no token lives on unused.
 */
export const BOOTSTRAP_TOKEN_TTL = "24h0m0s";

/** The cluster's network settings, with the API's defaults for those an older object lacks. */
const NETWORK_DEFAULTS = { podCIDR: "10.244.0.0/16", serviceCIDR: "10.96.0.0/12", serviceDomain: "cluster.local" };

export interface BootstrapInput {
  machine: MachineObject;
  cluster: ClusterObject;
  /**
   * The control-plane endpoint: its name and port, and the name machines inside the cloud use (api-int),
   * which the API server's certificate holds too and joining machines discover the cluster through.
   */
  endpoint: { host: string; port: number; internalHost?: string };
  pki: ClusterPki;
  token: string;
  /** The OpenID Connect issuer the cluster's API server trusts (a cluster naming a realm). */
  oidc?: OidcIssuer;
  /** The pool of a pool machine, for its node labels and taints. */
  pool?: MachinePoolObject;
  /**
   * A joining control-plane machine waits for its turn on the host (JOIN_TURN_COMMAND): where its
   * machines are instances booted with this user data, which the cluster makes all at once.
   */
  takeTurn?: boolean;
  /**
   * The machine gets a public address at launch (its cluster spans clouds): the kubelet reports its
   * private address as InternalIP (`node-ip`), a control-plane machine advertises its private address
   * and its API server's certificate holds the public one too; the machine fills both in from its
   * instance metadata at boot (NODE_ADDRESSES_COMMAND), as they are not known before the instance is.
   */
  publicAddress?: boolean;
}

/** Labels the node registers with: its cluster, and for pool machines the pool and the pool's labels. */
export function nodeLabels(machine: MachineObject, pool: MachinePoolObject | undefined): Record<string, string> {
  return {
    ...(pool?.spec.labels ?? {}),
    [LABEL_CLUSTER]: machine.spec.clusterName,
    ...(machine.spec.pool ? { [LABEL_POOL]: machine.spec.pool } : {}),
  };
}

export function nodeRegistration(machine: MachineObject, pool: MachinePoolObject | undefined): NodeRegistration {
  const taints = pool?.spec.taints ?? [];
  return {
    name: machine.metadata.name!,
    labels: nodeLabels(machine, pool),
    ...(taints.length > 0 ? { taints: taints.map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect })) } : {}),
  };
}

/** The Kubernetes version a machine installs: its own, else its cluster's. */
export function machineVersion(machine: MachineObject, cluster: ClusterObject): string {
  return machine.spec.version ?? cluster.spec.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION;
}

/** The user data of the machine, its secret files inline (for providers that keep no secrets). */
export function renderBootstrapData(input: BootstrapInput): string {
  return renderUserData(machineBootstrap(input));
}

/** The bootstrap of the machine: init for the machine annotated for it, join for every other one. */
export function machineBootstrap(input: BootstrapInput): NodeBootstrap {
  const bootstrap = kubeadmBootstrap(input);
  return input.publicAddress ? fillingAddresses(bootstrap) : bootstrap;
}

function kubeadmBootstrap(input: BootstrapInput): NodeBootstrap {
  const { machine, cluster, pki, token } = input;
  const controlPlaneEndpoint = `${input.endpoint.host}:${input.endpoint.port}`;
  const node = { ...nodeRegistration(machine, input.pool), ...(input.publicAddress ? { nodeIp: LOCAL_IPV4 } : {}) };
  const advertise = input.publicAddress ? { advertiseAddress: LOCAL_IPV4 } : {};
  if (isInitMachine(machine)) {
    const network = { ...NETWORK_DEFAULTS, ...cluster.spec.network };
    const certSANs = [...(input.endpoint.internalHost ? [input.endpoint.internalHost] : []), ...(input.publicAddress ? [PUBLIC_IPV4] : [])];
    return initBootstrap(
      {
        clusterName: cluster.metadata.name!,
        kubernetesVersion: machineVersion(machine, cluster),
        controlPlaneEndpoint,
        ...(certSANs.length > 0 ? { certSANs } : {}),
        ...advertise,
        podSubnet: network.podCIDR,
        serviceSubnet: network.serviceCIDR,
        dnsDomain: network.serviceDomain,
        bootstrapToken: token,
        tokenTtl: BOOTSTRAP_TOKEN_TTL,
        node,
        ...(input.oidc ? { oidc: input.oidc } : {}),
      },
      pki,
    );
  }
  const controlPlane = isControlPlane(machine);
  const kubernetesVersion = machineVersion(machine, cluster);
  // Joining control-plane machines carry the shared PKI; workers never do.
  return joinBootstrap(
    { kubernetesVersion, controlPlaneEndpoint: `${input.endpoint.internalHost ?? input.endpoint.host}:${input.endpoint.port}`, bootstrapToken: token, caCertHashes: [caCertHash(pki.ca.certPem)], node, ...(controlPlane ? { controlPlane: advertise } : {}) },
    controlPlane ? pki : undefined,
    input.takeTurn === true,
  );
}
