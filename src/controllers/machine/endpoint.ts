// Control-plane machines in a connection of hosts: there is no cloud load balancer to register with, the
// control-plane endpoint is served by one of the hosts (the ssh provider's haproxy, reserved by the
// Infrastructure). A control-plane machine joins the endpoint's members as soon as its host is known —
// before its bootstrap ends, since `kubeadm init` finishes only once its API answers through the endpoint
// — and leaves it when it goes (unless the whole cluster goes). Each change sends the endpoint the
// control-plane machines as they are then, so the last writer always has every member.
import type { MachineObject } from "../../api/kinds.ts";
import { machineKind } from "../../api/slipway/machine.ts";
import { nowTimestamp } from "../../apiserver/objects.ts";
import type { ControlPlaneEndpoints, EndpointMember } from "../../providers/provider.ts";
import { setCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { Phase } from "../../runtime/reconciler.ts";
import { API_SERVER_PORT } from "../infrastructure/phases.ts";
import type { MachineScope } from "./phases.ts";
import { LOAD_BALANCER_TARGET, isControlPlane } from "./status.ts";

export const REASON_ENDPOINT_MEMBER = "EndpointMember";
const REASON_LEFT_ENDPOINT = "LeftEndpoint";

/** The endpoints of the machine's connection when its provider serves them on its hosts (no cluster infrastructure). */
export async function hostEndpointsOf(scope: MachineScope): Promise<ControlPlaneEndpoints | undefined> {
  if (!scope.connection) return undefined;
  const provider = await scope.deps.providers.open(scope.connection);
  return provider.capabilities.clusterInfrastructure ? undefined : provider.endpoints;
}

function memberOf(machine: MachineObject): EndpointMember | undefined {
  const address = machine.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
  const id = machine.status?.instanceId;
  return id && address ? { name: id, address, port: API_SERVER_PORT } : undefined;
}

/** The cluster's control-plane machines that have a host and are not going, besides `leaving`. */
async function members(ctx: ReconcileContext, machine: MachineObject, leaving?: string): Promise<EndpointMember[]> {
  const list = await ctx.client.of<MachineObject>(machineKind).list(machine.metadata.namespace);
  const current = list.items.filter((m) => m.spec.clusterName === machine.spec.clusterName && isControlPlane(m) && !m.metadata.deletionTimestamp && m.metadata.uid !== machine.metadata.uid);
  const all = leaving ? current : [...current, machine];
  return all.flatMap((m) => (m.status?.instanceId === leaving ? [] : (memberOf(m) ?? [])));
}

function note(ctx: ReconcileContext, machine: MachineObject, reason: string, message: string, status: "True" | "False"): void {
  setCondition((machine.status ??= {}), { type: LOAD_BALANCER_TARGET, status, reason, message }, nowTimestamp(new Date(ctx.clock.now())));
}

/** A control-plane machine on a host joins the endpoint's members once its host is known. */
export const serveHostEndpoint: Phase<MachineScope> = async (ctx, scope) => {
  const machine = scope.object;
  if (!isControlPlane(machine) || !machine.status?.instanceId) return;
  const endpoints = await hostEndpointsOf(scope);
  if (!endpoints) return;
  const lb = scope.controlPlaneInfrastructure?.status?.loadBalancer;
  if (!lb) return;
  const condition = machine.status.conditions?.find((c) => c.type === LOAD_BALANCER_TARGET);
  if (condition?.status === "True" && condition.reason === REASON_ENDPOINT_MEMBER) return;
  await endpoints.setMembers(lb.id, await members(ctx, machine));
  note(ctx, machine, REASON_ENDPOINT_MEMBER, `instance ${machine.status.instanceId} is behind the control-plane endpoint ${lb.host}:${lb.port} served by host ${lb.id}`, "True");
  await ctx.event(machine, "Normal", "EndpointMemberAdded", `instance ${machine.status.instanceId} added to the control-plane endpoint on host ${lb.id}`);
};

/** A control-plane machine on a host leaves the endpoint before its host is cleaned (not when the cluster goes). */
export async function leaveHostEndpoint(ctx: ReconcileContext, scope: MachineScope, endpoints: ControlPlaneEndpoints): Promise<void> {
  const machine = scope.object;
  const id = machine.status?.instanceId;
  const lb = scope.controlPlaneInfrastructure?.status?.loadBalancer;
  const condition = machine.status?.conditions?.find((c) => c.type === LOAD_BALANCER_TARGET);
  if (!id || condition?.reason !== REASON_ENDPOINT_MEMBER) return;
  const clusterGoing = !scope.cluster || scope.cluster.metadata.deletionTimestamp !== undefined;
  // The endpoint's own host goes with its cluster; haproxy stops with the cleanup of that host.
  if (lb && !clusterGoing && lb.id !== id) await endpoints.setMembers(lb.id, await members(ctx, machine, id));
  note(ctx, machine, REASON_LEFT_ENDPOINT, `instance ${id} left the control-plane endpoint`, "False");
}
