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

/** Since when the instance answers on `port`, as every hook says (the latest of them); undefined: it does not. */
function servingSince(core: CloudCore, instance: InstanceRecord, port: number): number | undefined {
  let since = instance.runningSince!;
  for (const hooks of core.hooks) {
    if (!hooks.targetServingSince) continue;
    const from = hooks.targetServingSince(instance.id, port);
    if (from === undefined) return undefined;
    since = Math.max(since, from);
  }
  return since;
}

/** A target's health on some target ports, and when it turns (or turned) healthy if it answers on them. */
export interface TargetCheck extends Omit<LoadBalancerTarget, "registeredAt"> {
  healthyAt?: number;
}

/**
 * Health checks run from when the target is registered and running; a target passes them once it has
 * answered on every port for the check time (`healthCheckMs`), so one that starts serving later (an API
 * server coming up during kubeadm init) turns healthy that long after it started answering.
 */
export function checkTarget(core: CloudCore, lb: LoadBalancerRecord, target: RegisteredTarget, ports: readonly number[]): TargetCheck {
  const base = { instanceId: target.instanceId };
  const instance = core.state.get("instance", target.instanceId);
  if (!instance || instance.state === "terminated") return { ...base, health: "unused", reason: "Target.InvalidState" };
  if (lb.state === "provisioning") return { ...base, health: "initial", reason: "Elb.RegistrationInProgress" };
  if (instance.state !== "running" || instance.runningSince === undefined) {
    return { ...base, health: "unhealthy", reason: "Target.NotRunning" };
  }
  const checkingSince = Math.max(Date.parse(target.registeredAt), instance.runningSince);
  let answering: number | undefined = checkingSince;
  for (const port of ports) {
    const since = servingSince(core, instance, port);
    answering = since === undefined || answering === undefined ? undefined : Math.max(answering, since);
  }
  const healthyAt = answering === undefined ? undefined : answering + target.healthCheckMs;
  const timing = healthyAt === undefined ? {} : { healthyAt };
  if (healthyAt !== undefined && core.now() >= healthyAt) return { ...base, health: "healthy", ...timing };
  if (core.now() < checkingSince + target.healthCheckMs) return { ...base, health: "initial", reason: "Elb.InitialHealthChecking", ...timing };
  return { ...base, health: "unhealthy", reason: "Target.FailedHealthChecks", ...timing };
}

function targetHealth(core: CloudCore, lb: LoadBalancerRecord, target: RegisteredTarget): LoadBalancerTarget {
  const { healthyAt: _healthyAt, ...check } = checkTarget(
    core,
    lb,
    target,
    lb.listeners.map((l) => l.targetPort),
  );
  return { ...check, registeredAt: target.registeredAt };
}

export function loadBalancerView(core: CloudCore, record: LoadBalancerRecord): LoadBalancer {
  const { transition: _transition, targets, ...view } = record;
  return { ...structuredClone(view), targets: targets.map((t) => targetHealth(core, record, t)) };
}

/** The view of any record, as its kind's descriptor makes it. */
export function viewOf(core: CloudCore, record: StoredResource): ResourceView {
  return core.registry.view(core, record);
}
