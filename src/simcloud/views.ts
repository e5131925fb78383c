// Views: what callers see of a record. Internal fields are dropped, derived fields (free addresses of a
// subnet, target health of a load balancer) are computed, and the result is a copy callers may keep.
import type { CloudCore } from "./core.ts";
import { parseCidr, usableAddresses } from "./ipam.ts";
import type { InstanceRecord, LoadBalancerRecord, RegisteredTarget, SubnetRecord } from "./records.ts";
import type { ResourceView, StoredResource } from "./resource-kinds.ts";
import type { Instance, LoadBalancer, LoadBalancerTarget, Subnet } from "./types.ts";

/** The view of a record that keeps nothing but its pending transition from callers. */
export function plainView<R extends StoredResource>(record: R): Omit<R, "transition"> {
  const { transition: _transition, ...view } = record;
  return structuredClone(view);
}

export function instanceView(record: InstanceRecord): Instance {
  const {
    transition: _transition,
    userData: _userData,
    bootCount: _bootCount,
    runningSince: _runningSince,
    slowFactor: _slowFactor,
    dieAfterMs: _dieAfterMs,
    ephemeralPublicIp: _ephemeralPublicIp,
    ...view
  } = record;
  return structuredClone(view);
}

export function subnetView(core: CloudCore, record: SubnetRecord): Subnet {
  const { transition: _transition, ...view } = record;
  const used = core.instancesBySubnet.count(record.id);
  return { ...structuredClone(view), availableIpCount: usableAddresses(parseCidr(record.cidr)) - used };
}

function targetHealth(core: CloudCore, lb: LoadBalancerRecord, target: RegisteredTarget): LoadBalancerTarget {
  const base = { instanceId: target.instanceId, registeredAt: target.registeredAt };
  const instance = core.state.get("instance", target.instanceId);
  if (!instance || instance.state === "terminated") return { ...base, health: "unused", reason: "Target.InvalidState" };
  if (lb.state === "provisioning") return { ...base, health: "initial", reason: "Elb.RegistrationInProgress" };
  if (instance.state !== "running" || instance.runningSince === undefined) {
    return { ...base, health: "unhealthy", reason: "Target.NotRunning" };
  }
  const checkingSince = Math.max(Date.parse(target.registeredAt), instance.runningSince);
  if (core.now() < checkingSince + target.healthCheckMs) {
    return { ...base, health: "initial", reason: "Elb.InitialHealthChecking" };
  }
  const view = instanceView(instance);
  const serving = lb.listeners.every((listener) =>
    core.hooks.every((hooks) => hooks.isTargetServing?.(view, listener.targetPort) ?? true),
  );
  return serving ? { ...base, health: "healthy" } : { ...base, health: "unhealthy", reason: "Target.FailedHealthChecks" };
}

export function loadBalancerView(core: CloudCore, record: LoadBalancerRecord): LoadBalancer {
  const { transition: _transition, targets, ...view } = record;
  return { ...structuredClone(view), targets: targets.map((t) => targetHealth(core, record, t)) };
}

/** The view of any record, as its kind's descriptor makes it. */
export function viewOf(core: CloudCore, record: StoredResource): ResourceView {
  return core.registry.view(core, record);
}
