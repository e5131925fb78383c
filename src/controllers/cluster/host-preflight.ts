// Dynamic validation of the parts of a cluster built on hosts (an `ssh` Connection) before any host is
// touched: the machine type is `host`, the Connection has enough hosts that Slipway can log in to (with
// the pinned host key) and that no other cluster uses, and enough of them meet kubeadm's control-plane
// minimums. Each host that cannot serve is named with its reason, so the message says what to fix.
import type { ClusterSpec } from "../../api/slipway/cluster.ts";
import { HOST_MACHINE_TYPE } from "../../providers/ssh/index.ts";
import type { HostRecord } from "../../providers/ssh/hosts.ts";
import { CONTROL_PLANE_MIN_MEMORY_MIB, CONTROL_PLANE_MIN_VCPUS, type PreflightProblem } from "./preflight.ts";

interface HostGroup {
  field: string;
  replicas: number;
  controlPlane: boolean;
  /** Undefined while a template or lease has not filled it in. */
  machineType: string | undefined;
}

function groupsIn(spec: ClusterSpec, connection: string): HostGroup[] {
  const cp = spec.controlPlane;
  const all: (HostGroup & { connection: string })[] = [
    { field: "spec.controlPlane", connection: cp.connection, replicas: cp.replicas ?? 1, controlPlane: true, machineType: cp.machineType },
    ...(spec.workers ?? []).map((w, i) => ({ field: `spec.workers[${i}]`, connection: w.connection, replicas: w.replicas ?? 1, controlPlane: false, machineType: w.machineType })),
  ];
  return all.filter((g) => g.connection === connection);
}

/** Why a host cannot take a machine of `cluster`, or undefined when it can. */
export function hostUnusable(host: HostRecord, cluster: string): string | undefined {
  const holder = host.claim?.tags["slipway.dev/cluster"];
  if (host.claim && holder !== cluster) return `used by cluster ${holder ?? "?"}`;
  if (host.heldAs) return `the same machine (${host.target.address}:${host.target.port}) is used as ${host.heldAs}`;
  if (host.keyProblem) return host.keyProblem;
  if (!host.reachable) return host.unreachableReason ? `${host.unreachableReason}: ${host.unreachableMessage ?? ""}`.trim() : "not checked yet (Reachable is not True)";
  if (!host.target.hostKeyFingerprint) return "no pinned host key yet";
  return undefined;
}

function meetsControlPlaneMinimum(host: HostRecord): boolean {
  return (host.facts?.cpus ?? 0) >= CONTROL_PLANE_MIN_VCPUS && (host.facts?.memoryMiB ?? 0) >= CONTROL_PLANE_MIN_MEMORY_MIB;
}

/** The problems of building `cluster`'s machines in connection `connection` on `hosts`; none when it can be done. */
export function hostPreflight(spec: ClusterSpec, cluster: string, connection: string, hosts: HostRecord[]): PreflightProblem[] {
  const problems: PreflightProblem[] = [];
  const invalid = (field: string, message: string) => problems.push({ field, reason: "ValidationFailed", message });
  const groups = groupsIn(spec, connection);
  for (const g of groups.filter((g) => g.machineType !== HOST_MACHINE_TYPE)) {
    invalid(`${g.field}.machineType`, `machine type "${g.machineType}" is not offered in connection "${connection}" (offered: ${HOST_MACHINE_TYPE}: a whole host)`);
  }
  const needed = groups.reduce((sum, g) => sum + g.replicas, 0);
  if (hosts.length === 0) {
    invalid(`connection "${connection}"`, `no Host is labelled slipway.dev/connection=${connection}`);
    return problems;
  }
  const usable = hosts.filter((h) => hostUnusable(h, cluster) === undefined);
  if (usable.length < needed) {
    const why = hosts
      .map((h) => [h, hostUnusable(h, cluster)] as const)
      .filter(([, reason]) => reason !== undefined)
      .map(([h, reason]) => `host ${h.name} (${h.target.address}): ${reason}`);
    invalid(`connection "${connection}"`, `the cluster needs ${needed} hosts in connection "${connection}", ${usable.length} can be used; ${why.join("; ")}`);
  }
  const controlPlane = groups.find((g) => g.controlPlane);
  if (controlPlane) {
    const strong = usable.filter(meetsControlPlaneMinimum);
    if (strong.length < controlPlane.replicas) {
      const weak = usable.filter((h) => !meetsControlPlaneMinimum(h)).map((h) => `host ${h.name} has ${h.facts?.cpus ?? "?"} CPUs, ${h.facts?.memoryMiB ?? "?"} MiB`);
      invalid(
        controlPlane.field,
        `${controlPlane.replicas} control-plane hosts need kubeadm's minimum of ${CONTROL_PLANE_MIN_VCPUS} CPUs and ${CONTROL_PLANE_MIN_MEMORY_MIB} MiB, ${strong.length} of the usable hosts meet it${weak.length ? `: ${weak.join("; ")}` : ""}`,
      );
    }
  }
  return problems;
}
