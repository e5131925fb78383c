// The public network between sim clouds. Each cloud is its own process with its own public addresses
// (SimCloudOptions.publicRange); a machine of one cloud reaches another cloud's machines and load
// balancers only through their public addresses or names, and only where the target's security groups
// admit the source's public address on the port (a load balancer hands the source address on to its
// targets, whose groups decide). A connection that is not admitted is dropped: the client times out.
import type { CloudCore } from "./core.ts";
import { contains, parseCidr } from "./ipam.ts";
import type { InstanceRecord } from "./records.ts";
import type { LoadBalancerRoute } from "./loadbalancer-service.ts";
import type { SecurityGroupRule } from "./schemas.ts";

/** Where a connection from the public network lands: targets (instances) and their port, an error, or not in this cloud. */
export type PublicRoute = { targets: string[]; targetPort: number } | { error: string } | { unknown: true };

/** Whether ingress rules admit TCP from `from` on `port`. */
export function admits(rules: readonly SecurityGroupRule[], from: string, port: number): boolean {
  const source = parseCidr(`${from}/32`);
  return rules.some(
    (rule) =>
      rule.direction === "ingress" &&
      (rule.protocol === "tcp" || rule.protocol === "all") &&
      rule.fromPort <= port &&
      port <= rule.toPort &&
      contains(parseCidr(rule.cidr), source),
  );
}

function admitted(core: CloudCore, instance: InstanceRecord, from: string, port: number): boolean {
  return instance.securityGroupIds.some((id) => {
    const group = core.state.get("securityGroup", id);
    return group !== undefined && admits(group.rules, from, port);
  });
}

/** The load balancer a public name leads to: its own DNS name, or a name of a DNS zone aliasing it. */
function loadBalancerNamed(core: CloudCore, host: string): string | undefined {
  const name = host.toLowerCase();
  if (core.loadBalancersByDnsName.get(name)[0]) return name;
  const record = core.state.all("dnsRecord").find((r) => r.type === "A" && r.name.toLowerCase() === name && r.aliasTarget);
  return record ? core.state.get("loadBalancer", record.aliasTarget!.loadBalancerId)?.dnsName : undefined;
}

/**
 * Where a connection from public address `from` (undefined: a machine without one, which has no way
 * out) to `host:port` lands in this cloud; `route` is the cloud's routing through a load balancer from
 * outside its networks.
 */
export function publicRoute(
  core: CloudCore,
  route: (dnsName: string, port: number) => LoadBalancerRoute,
  from: string | undefined,
  host: string,
  port: number,
): PublicRoute {
  const timeout = { error: `dial tcp ${host}:${port}: i/o timeout` };
  const instance = core.state.all("instance").find((i) => i.publicIp === host && i.state !== "terminated");
  if (instance) return from && instance.state === "running" && admitted(core, instance, from, port) ? { targets: [instance.id], targetPort: port } : timeout;
  const dnsName = loadBalancerNamed(core, host);
  if (!dnsName) return { unknown: true };
  if (!from) return timeout;
  const routed = route(dnsName, port);
  if ("error" in routed) return { error: routed.error.replaceAll(dnsName, host) };
  const targets = routed.targets.filter((id) => {
    const target = core.state.get("instance", id);
    return target !== undefined && admitted(core, target, from, routed.targetPort);
  });
  return targets.length > 0 ? { targets, targetPort: routed.targetPort } : timeout;
}
