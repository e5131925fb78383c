// A cluster across clouds: machines of one cloud reach another cloud's machines only through their public
// addresses, and only where the target's security group admits them. Where a cluster spans clouds, its
// machines get public addresses, and each cloud's security group admits exactly the Kubernetes ports from
// exactly the other clouds' node addresses: the API (where the control plane runs), the kubelet, etcd
// between control-plane machines, and the network plugin's overlay.
import type { ClusterObject, ConnectionObject, InfrastructureObject, MachineObject } from "../../api/kinds.ts";
import type { MachineRole } from "../../api/slipway/machine.ts";
import type { FirewallRule } from "../../providers/provider.ts";

export const KUBELET_PORT = 10250;
export const ETCD_PORTS = { from: 2379, to: 2380 } as const;
const API_PORT = 6443;

/** The ports each network plugin's overlay uses between nodes. */
export const OVERLAY_RULES: Readonly<Record<string, readonly Pick<FirewallRule, "protocol" | "fromPort" | "toPort">[]>> = {
  // Calico peers over BGP; its IP-in-IP packets (IP protocol 4) have no port a rule could name.
  calico: [{ protocol: "tcp", fromPort: 179, toPort: 179 }],
  flannel: [{ protocol: "udp", fromPort: 8472, toPort: 8472 }],
  cilium: [{ protocol: "udp", fromPort: 8472, toPort: 8472 }],
};

/**
 * Which cloud a connection builds in: its provider and the endpoint it talks to. Two connections of one
 * cloud (two regions of the same endpoint) are one cloud; two endpoints are two clouds, as two providers are.
 */
export function cloudOf(connection: Pick<ConnectionObject, "spec">): string {
  return `${connection.spec.provider} ${connection.spec.endpoint ?? "(default endpoint)"}`;
}

/** A machine of the cluster, as the rules of the other clouds see it. */
export interface CrossCloudNode {
  cloud: string;
  role: MachineRole;
  /** Its public address; a machine without one yet gets no rule yet. */
  publicAddress?: string;
}

export interface CrossCloudInput {
  /** The cloud of the security group the rules are for. */
  cloud: string;
  /** Whether this cloud holds the control plane (its API and etcd). */
  controlPlane: boolean;
  cni: string;
  nodes: readonly CrossCloudNode[];
}

/** Whether machines of more than one cloud are in the cluster's connections. */
export function spansClouds(clouds: Iterable<string>): boolean {
  return new Set(clouds).size > 1;
}

/**
 * The ingress rules this cloud's security group needs for the other clouds' nodes, one address at a time
 * (each a /32), in a stable order: the API and etcd (from control-plane machines only) where this cloud
 * holds the control plane, the kubelet, and the overlay.
 */
export function crossCloudRules(input: CrossCloudInput): FirewallRule[] {
  const rules: FirewallRule[] = [];
  const addresses = new Map<string, MachineRole>();
  for (const node of input.nodes) {
    if (node.cloud === input.cloud || !node.publicAddress) continue;
    // An address seen as control plane once keeps etcd open to it.
    if (addresses.get(node.publicAddress) !== "control-plane") addresses.set(node.publicAddress, node.role);
  }
  const overlay = OVERLAY_RULES[input.cni] ?? [];
  for (const [address, role] of [...addresses].sort(([a], [b]) => compareAddresses(a, b))) {
    const cidr = `${address}/32`;
    const tcp = (fromPort: number, toPort = fromPort): FirewallRule => ({ direction: "ingress", protocol: "tcp", fromPort, toPort, cidr });
    if (input.controlPlane) rules.push(tcp(API_PORT));
    if (input.controlPlane && role === "control-plane") rules.push(tcp(ETCD_PORTS.from, ETCD_PORTS.to));
    rules.push(tcp(KUBELET_PORT));
    for (const rule of overlay) rules.push({ direction: "ingress", ...rule, cidr });
  }
  return rules;
}

function compareAddresses(a: string, b: string): number {
  const value = (address: string) => address.split(".").reduce((sum, octet) => sum * 256 + Number(octet), 0);
  return value(a) - value(b);
}

/** Two rule lists hold the same rules (in any order); a rule without ports means every port. */
export function sameRules(a: readonly FirewallRule[], b: readonly FirewallRule[]): boolean {
  const key = (r: FirewallRule) => `${r.direction} ${r.protocol} ${r.fromPort ?? 0}-${r.toPort ?? r.fromPort ?? 65535} ${r.cidr}`;
  const left = a.map(key).sort();
  const right = b.map(key).sort();
  return left.length === right.length && left.every((k, i) => k === right[i]);
}

/** What the rules of one Infrastructure are computed from, as its controller's caches hold them. */
export interface CrossCloudSources {
  connectionOf: (name: string) => Pick<ConnectionObject, "spec"> | undefined;
  /** Every Infrastructure of the cluster (one per connection). */
  infrastructures: readonly Pick<InfrastructureObject, "spec">[];
  machines: readonly Pick<MachineObject, "spec" | "status">[];
  cluster: Pick<ClusterObject, "spec"> | undefined;
}

/** Whether the cluster spans clouds, and what this Infrastructure's cross-cloud rules are made from. */
export interface CrossCloudView {
  spans: boolean;
  input: CrossCloudInput;
}

/** The view of one Infrastructure; undefined while a connection of the cluster is not known yet. */
export function crossCloudView(infra: Pick<InfrastructureObject, "spec">, sources: CrossCloudSources): CrossCloudView | undefined {
  const own = sources.connectionOf(infra.spec.connection);
  if (!own) return undefined;
  const spec = sources.cluster?.spec;
  const names = new Set([
    ...sources.infrastructures.map((i) => i.spec.connection),
    ...(spec ? [spec.controlPlane.connection, ...(spec.workers ?? []).map((pool) => pool.connection)] : []),
  ]);
  const clouds: string[] = [];
  for (const name of names) {
    const connection = sources.connectionOf(name);
    if (!connection) return undefined;
    clouds.push(cloudOf(connection));
  }
  const nodes = sources.machines.flatMap((machine): CrossCloudNode[] => {
    const connection = sources.connectionOf(machine.spec.connection);
    if (!connection) return [];
    const publicAddress = externalAddressOf(machine);
    return [{ cloud: cloudOf(connection), role: machine.spec.role, ...(publicAddress ? { publicAddress } : {}) }];
  });
  return {
    spans: spansClouds(clouds),
    input: { cloud: cloudOf(own), controlPlane: infra.spec.controlPlane === true, cni: spec?.network?.cni ?? "calico", nodes },
  };
}

function externalAddressOf(machine: Pick<MachineObject, "status">): string | undefined {
  return machine.status?.addresses?.find((a) => a.type === "ExternalIP")?.address;
}

/** A change of a machine that changes the rules between clouds: its public address, role or connection. */
export function machineAddressesChanged(previous: MachineObject, machine: MachineObject): boolean {
  return (
    externalAddressOf(previous) !== externalAddressOf(machine) ||
    previous.spec.role !== machine.spec.role ||
    previous.spec.connection !== machine.spec.connection
  );
}
