// `kubeadm join` across clouds. Each sim cloud is its own process; a machine of cloud B told to join an
// endpoint its own cloud does not know asks the clouds it is told of (`--peer`) over the public network.
// The cloud that owns the endpoint decides as its network would (public-network.ts: only from the
// machine's public address, only where the targets' security groups admit it) and, when the connection
// goes through, does what its API server does for kubeadm: discovery with the token and the CA pin, then
// the node registers in its cluster. An endpoint that does not answer leaves kubeadm retrying until its
// discovery timeout, then failing with the endpoint named, as kubeadm does.
import type { FastifyInstance } from "fastify";
import { InvalidParameterError } from "../errors.ts";
import type { JoinPlan } from "./kubeadm-plan.ts";
import type { MachineRecord } from "./records.ts";
import type { WorkloadEmulator } from "./emulator.ts";

export const PUBLIC_JOIN_PATH = "/public/v1/kubeadm-join";

/** What a joining machine says about itself: what its node reports, and its public address (the source of its connection). */
export interface GuestFacts {
  instanceId: string;
  region: string;
  zone: string;
  machineType: string;
  vcpus: number;
  memoryMiB: number;
  privateIp: string;
  publicIp?: string;
}

export interface PublicJoinRequest {
  machine: GuestFacts;
  plan: JoinPlan;
}

/** The owner's answer: joined, the connection's error (kubeadm retries), kubeadm's failure, or not an endpoint of this cloud. */
export type PublicJoinAnswer = { joined: true } | { error: string } | { failure: string[] } | { unknown: true };

/** How long a machine waits before trying an endpoint of another cloud again (simulated ms): kubeadm's discovery retry. */
export const PUBLIC_RETRY_MS = 5_000;

/** Asks each peer in turn; the first that owns the endpoint answers. Undefined when none does (or none answers). */
export async function joinThroughPeers(peers: readonly string[], request: PublicJoinRequest): Promise<Exclude<PublicJoinAnswer, { unknown: true }> | undefined> {
  for (const peer of peers) {
    let answer: PublicJoinAnswer;
    try {
      const response = await fetch(new URL(PUBLIC_JOIN_PATH, peer), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request),
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok) continue;
      answer = (await response.json()) as PublicJoinAnswer;
    } catch {
      continue;
    }
    if (!("unknown" in answer)) return answer;
  }
  return undefined;
}

function parseRequest(body: unknown): PublicJoinRequest {
  const request = body as Partial<PublicJoinRequest> | undefined;
  const machine = request?.machine;
  const plan = request?.plan;
  const text = (value: unknown) => typeof value === "string" && value.length > 0;
  if (!machine || !text(machine.instanceId) || !text(machine.region) || !text(machine.privateIp) || typeof machine.vcpus !== "number") {
    throw new InvalidParameterError("machine: instanceId, region, privateIp and vcpus are required", { details: { field: "machine" } });
  }
  if (!plan || plan.command !== "join" || !text(plan.endpoint) || !text(plan.token)) {
    throw new InvalidParameterError("plan: a join plan with an endpoint and a token is required", { details: { field: "plan" } });
  }
  return request as PublicJoinRequest;
}

/** The machine record a guest gets in the cloud it joined: its network is its public address, its instance is elsewhere. */
export function guestRecord(request: PublicJoinRequest): MachineRecord {
  const { machine, plan } = request;
  return {
    instanceId: machine.instanceId,
    account: "public",
    region: machine.region,
    zone: machine.zone,
    networkId: `public/${machine.publicIp ?? machine.instanceId}`,
    machineType: machine.machineType,
    vcpus: machine.vcpus,
    memoryMiB: machine.memoryMiB,
    privateIp: machine.privateIp,
    ...(machine.publicIp ? { publicIp: machine.publicIp } : {}),
    role: plan.controlPlane ? "control-plane" : "worker",
    nodeName: plan.node.name,
    endpoint: plan.endpoint,
    state: "waiting",
    guest: true,
  };
}

/** Serves the owner's side on the cloud's HTTP API; `emulator` is there once the workload emulation runs. */
export function registerPublicJoin(app: FastifyInstance, emulator: () => WorkloadEmulator | undefined): void {
  app.post(PUBLIC_JOIN_PATH, async (req) => {
    const request = parseRequest(req.body);
    // Without the workload emulation, no endpoint here answers kubeadm.
    return emulator()?.joinGuest(request) ?? { unknown: true };
  });
}
