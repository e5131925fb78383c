// `kubeadm join` to an endpoint outside every sim cloud — a control plane on one's own hosts. The sim
// cloud is told which address ranges lie outside it and are reachable (`--outside-network`: the networks
// of the machine it runs on, e.g. hosts in network namespaces), as a cloud's NAT gateway reaches the
// internet. For an endpoint there, the machine's kubeadm really goes over the network, from the sim cloud's
// process: discovery through the endpoint, the token and CA pin, then its node registers with the token,
// as a host's kubeadm does (standalone-join.ts). An endpoint elsewhere stays unreachable (a timeout).
import { isIP } from "node:net";
import { cidrContains } from "../../api/cidr.ts";
import type { JoinPlan } from "./kubeadm-plan.ts";
import { nodeLabelsOf } from "./kubeadm-steps.ts";
import { hostOf, type MachineRecord } from "./records.ts";
import { joinOverNetwork } from "./standalone-join.ts";

/** Whether the endpoint's host is an IPv4 address of one of the ranges outside the cloud that it reaches. */
export function outsideEndpoint(endpoint: string, ranges: readonly string[]): boolean {
  const host = hostOf(endpoint);
  return isIP(host) === 4 && ranges.some((range) => cidrContains(range, `${host}/32`));
}

/** One join attempt of a machine of this cloud to an endpoint outside it; a failure is kubeadm's lines. */
export async function joinOutside(machine: MachineRecord, plan: JoinPlan, providerID: string): Promise<{ joined: true } | { error: string } | { failure: string[] }> {
  if (plan.controlPlane) return { failure: ["error execution phase preflight: a control-plane machine joins only from the control plane's own network"] };
  const labels = nodeLabelsOf(plan);
  if ("error" in labels) return { failure: [labels.error] };
  const answer = await joinOverNetwork({
    endpoint: plan.endpoint,
    token: plan.token,
    caCertHashes: plan.caCertHashes,
    unsafeSkipCAVerification: plan.unsafeSkipCAVerification,
    controlPlane: false,
    node: { name: plan.node.name, labels: labels.labels, ...(plan.node.taints ? { taints: plan.node.taints } : {}) },
    address: machine.publicIp ?? machine.privateIp,
    kubeletVersion: plan.software.kubeletVersion,
    cloudMachine: { providerID, vcpus: machine.vcpus, memoryMiB: machine.memoryMiB, machineType: machine.machineType, region: machine.region, zone: machine.zone },
  });
  if ("joined" in answer) return { joined: true };
  if ("failure" in answer) return { failure: [answer.failure] };
  return answer;
}
