// What the sim cloud's resources look like through the provider contract: states in the common
// vocabulary (the cloud's own word kept in `cloudState`), instance ids as Kubernetes nodes carry them, and
// the address clients use to reach what a load balancer fronts.
import type * as Sim from "../../simcloud/types.ts";
import type { InstanceInfo, LoadBalancerInfo, ResourceBase, ResourceKind, ResourceState } from "../provider.ts";

type PlainResource = Sim.Network | Sim.Subnet | Sim.SecurityGroup | Sim.KeyPair;

/** Networks, subnets, security groups and key pairs: pending → available, "deleted" once a token outlives them. */
export function plainState(state: PlainResource["state"]): ResourceState {
  switch (state) {
    case "pending":
      return "pending";
    case "available":
      return "ready";
    case "deleted":
      return "gone";
  }
}

/**
 * Instances. The provider never stops an instance, so `stopping` is a termination on its way (the end
 * state tells if it was a stop after all), and `stopped` means something else stopped it: it no longer
 * serves, so it has failed.
 */
export function instanceState(state: Sim.InstanceState): ResourceState {
  switch (state) {
    case "pending":
      return "pending";
    case "running":
      return "ready";
    case "stopping":
      return "deleting";
    case "stopped":
      return "failed";
    case "terminated":
      return "gone";
  }
}

export function loadBalancerState(state: Sim.LoadBalancer["state"]): ResourceState {
  switch (state) {
    case "provisioning":
      return "pending";
    case "active":
      return "ready";
    case "deleting":
      return "deleting";
    case "deleted":
      return "gone";
  }
}

function base(kind: ResourceKind, resource: Sim.CloudResource, state: ResourceState): ResourceBase {
  return { id: resource.id, kind, state, cloudState: resource.state, tags: { ...resource.tags }, createdAt: resource.createdAt };
}

export function plainInfo(kind: "network" | "subnet" | "securityGroup" | "keyPair", resource: PlainResource): ResourceBase {
  return base(kind, resource, plainState(resource.state));
}

/** The id Kubernetes nodes carry for an instance (`spec.providerID`). */
export function simProviderId(region: string, instanceId: string): string {
  return `sim://${region}/${instanceId}`;
}

export function instanceInfo(instance: Sim.Instance): InstanceInfo {
  const state = instanceState(instance.state);
  const info: InstanceInfo = {
    ...base("instance", instance, state),
    kind: "instance",
    zone: instance.zone,
    providerId: simProviderId(instance.region, instance.id),
  };
  // A view kept by an idempotency token after its instance vanished lacks the live fields.
  if (instance.privateIp) info.privateIp = instance.privateIp;
  if (instance.publicIp) info.publicIp = instance.publicIp;
  if ((state === "failed" || state === "gone") && instance.stateReason) {
    info.reason = { code: instance.stateReason.code, message: instance.stateReason.message };
  }
  return info;
}

/** Where clients reach what the load balancer fronts: the endpoint it publishes, with its path if any. */
export function loadBalancerUrl(lb: Sim.LoadBalancer): string {
  // `path` is published by workload emulators that serve several clusters behind one port.
  return `https://${lb.host}:${lb.port}${lb.path ?? ""}`;
}

export function loadBalancerInfo(lb: Sim.LoadBalancer): LoadBalancerInfo {
  return {
    ...base("loadBalancer", lb, loadBalancerState(lb.state)),
    kind: "loadBalancer",
    dnsName: lb.dnsName,
    port: lb.listeners[0]?.port ?? lb.port,
    url: loadBalancerUrl(lb),
    targets: (lb.targets ?? []).map((t) => ({ instanceId: t.instanceId, health: t.health, ...(t.reason ? { reason: t.reason } : {}) })),
  };
}
