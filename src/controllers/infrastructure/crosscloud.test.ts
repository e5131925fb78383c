// Which ports a cloud's security group opens to which addresses of the other clouds' nodes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ConnectionObject, InfrastructureObject, MachineObject } from "../../api/kinds.ts";
import type { ClusterInfrastructure, FirewallRule } from "../../providers/provider.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import { cloudOf, crossCloudRules, crossCloudView, sameRules, spansClouds, type CrossCloudNode } from "./crosscloud.ts";
import { decidePublicAddresses, ensureCrossCloudRules, ensureNetwork, infrastructurePhases, nodeFirewallRules, type InfrastructureScope } from "./phases.ts";

const A = "sim http://a";
const B = "sim http://b";
const nodes: CrossCloudNode[] = [
  { cloud: A, role: "control-plane", publicAddress: "203.0.113.5" },
  { cloud: A, role: "control-plane", publicAddress: "203.0.113.6" },
  { cloud: B, role: "worker", publicAddress: "198.51.100.20" },
  { cloud: B, role: "worker", publicAddress: "198.51.100.3" },
  { cloud: B, role: "worker" },
];
const show = (rules: ReturnType<typeof crossCloudRules>) => rules.map((r) => `${r.protocol}/${r.fromPort}-${r.toPort} ${r.cidr}`);

describe("cross-cloud rules", () => {
  it("opens the API, the kubelet and the overlay of the control plane's cloud to each worker address of the other cloud, and nothing to its own", () => {
    assert.deepEqual(show(crossCloudRules({ cloud: A, controlPlane: true, cni: "flannel", nodes })), [
      "tcp/6443-6443 198.51.100.3/32",
      "tcp/10250-10250 198.51.100.3/32",
      "udp/8472-8472 198.51.100.3/32",
      "tcp/6443-6443 198.51.100.20/32",
      "tcp/10250-10250 198.51.100.20/32",
      "udp/8472-8472 198.51.100.20/32",
    ]);
  });

  it("opens the kubelet and the overlay of a workers' cloud to the control-plane addresses, and neither the API nor etcd", () => {
    assert.deepEqual(show(crossCloudRules({ cloud: B, controlPlane: false, cni: "calico", nodes })), [
      "tcp/10250-10250 203.0.113.5/32",
      "tcp/179-179 203.0.113.5/32",
      "tcp/10250-10250 203.0.113.6/32",
      "tcp/179-179 203.0.113.6/32",
    ]);
  });

  it("opens etcd only between control-plane machines of different clouds", () => {
    const rules = crossCloudRules({ cloud: A, controlPlane: true, cni: "cilium", nodes: [...nodes, { cloud: B, role: "control-plane", publicAddress: "198.51.100.9" }] });
    const etcd = rules.filter((r) => r.fromPort === 2379);
    assert.deepEqual(show(etcd), ["tcp/2379-2380 198.51.100.9/32"]);
  });

  it("has no rule while the cluster is in one cloud, or while no other node has a public address", () => {
    assert.deepEqual(crossCloudRules({ cloud: A, controlPlane: true, cni: "calico", nodes: nodes.filter((n) => n.cloud === A) }), []);
    assert.deepEqual(crossCloudRules({ cloud: A, controlPlane: true, cni: "calico", nodes: [{ cloud: B, role: "worker" }] }), []);
  });

  it("tells clouds apart by provider and endpoint, not by region", () => {
    const connection = (endpoint?: string) => ({ spec: { provider: "sim", region: "r", ...(endpoint ? { endpoint } : {}) } });
    assert.equal(cloudOf(connection("http://a")), cloudOf(connection("http://a")));
    assert.ok(spansClouds([cloudOf(connection("http://a")), cloudOf(connection("http://b"))]));
    assert.ok(!spansClouds([cloudOf(connection()), cloudOf(connection())]));
  });

  it("compares rule sets regardless of order, a rule without ports meaning every port", () => {
    const all = { direction: "ingress" as const, protocol: "all" as const, cidr: "10.0.0.0/16" };
    const api = { direction: "ingress" as const, protocol: "tcp" as const, fromPort: 6443, toPort: 6443, cidr: "0.0.0.0/0" };
    assert.ok(sameRules([all, api], [api, { ...all, fromPort: 0, toPort: 65535 }]));
    assert.ok(!sameRules([all, api], [all]));
    assert.ok(!sameRules([api], [{ ...api, cidr: "198.51.100.3/32" }]));
  });
});

describe("the cross-cloud rules of an Infrastructure", () => {
  const context = { clock: { now: () => Date.parse("2025-01-01T00:00:00Z") } } as unknown as ReconcileContext;
  const settings = { deadlineMs: 1, loadBalancerDeadlineMs: 1, pollMs: 1, failureRetryMs: 30_000, dependencyRetryMs: 1 };
  const connections: Record<string, Pick<ConnectionObject, "spec">> = {
    a: { spec: { provider: "sim", region: "sim-east-1", endpoint: "http://a" } },
    b: { spec: { provider: "sim", region: "sim-west-1", endpoint: "http://b" } },
    a2: { spec: { provider: "sim", region: "sim-west-1", endpoint: "http://a" } },
  };
  const infra = (connection: string, controlPlane: boolean): InfrastructureObject => ({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Infrastructure",
    metadata: { name: `c-${connection}`, namespace: "default", uid: `uid-${connection}` },
    spec: { clusterName: "c", connection, region: connections[connection]!.spec.region, nodeCIDR: "10.0.0.0/16", ...(controlPlane ? { controlPlane: true } : {}) },
    status: { securityGroupId: `sg-${connection}` },
  });
  const machine = (connection: string, role: "control-plane" | "worker", address?: string) =>
    ({ spec: { clusterName: "c", connection, role, machineType: "s1.small" }, status: address ? { addresses: [{ type: "ExternalIP", address }] } : {} }) as unknown as MachineObject;

  class FakeGroups {
    rules = new Map<string, FirewallRule[]>();
    sets = 0;
    async firewallRules(id: string) {
      return this.rules.get(id) ?? [];
    }
    async setFirewallRules(id: string, rules: FirewallRule[]) {
      this.sets++;
      this.rules.set(id, rules);
    }
  }

  function scopeOf(object: InfrastructureObject, groups: FakeGroups, pools: string[], machines: MachineObject[]): InfrastructureScope {
    const cluster = { spec: { controlPlane: { connection: "a" }, workers: pools.map((connection) => ({ connection })) } } as never;
    return {
      original: object,
      object,
      settings,
      providers: {} as never,
      infrastructure: groups as unknown as ClusterInfrastructure,
      notices: [],
      crossCloud: () => crossCloudView(object, { connectionOf: (name) => connections[name], infrastructures: [], machines, cluster }),
    };
  }

  it("admits the other cloud's node addresses when the cluster spans clouds, and puts back a rule removed by hand", async () => {
    const groups = new FakeGroups();
    groups.rules.set("sg-a", nodeFirewallRules("10.0.0.0/16"));
    const machines = [machine("a", "control-plane", "203.0.113.5"), machine("b", "worker", "198.51.100.3")];
    const scope = scopeOf(infra("a", true), groups, ["b"], machines);
    assert.equal(await ensureCrossCloudRules(context, scope), undefined);
    assert.equal(scope.object.status?.publicAddresses, true);
    assert.equal(scope.object.status?.crossCloudRules, 3);
    assert.deepEqual(groups.rules.get("sg-a")!.filter((r) => r.cidr.endsWith("/32")).map((r) => r.fromPort), [6443, 10250, 179]);
    assert.match(scope.notices[0]?.message ?? "", /admits 1 node address\(es\) of the other clouds \(3 rule\(s\)\)/);

    await ensureCrossCloudRules(context, scope);
    assert.equal(groups.sets, 1, "rules already right are left alone");
    groups.rules.set("sg-a", nodeFirewallRules("10.0.0.0/16"));
    await ensureCrossCloudRules(context, scope);
    assert.equal(groups.sets, 2);
    assert.equal(groups.rules.get("sg-a")!.length, nodeFirewallRules("10.0.0.0/16").length + 3);
  });

  it("says machines get public addresses before the network exists, so none is made while the load balancer is pending without one", async () => {
    const spanning = infra("a", true);
    spanning.status = {};
    const scope = scopeOf(spanning, new FakeGroups(), ["b"], []);
    const phases = infrastructurePhases;
    assert.ok(phases.indexOf(decidePublicAddresses) < phases.indexOf(ensureNetwork), "decided before the steps that may wait");
    await decidePublicAddresses(context, scope);
    assert.equal(scope.object.status?.publicAddresses, true);
    const within = scopeOf(Object.assign(infra("a", true), { status: {} }), new FakeGroups(), ["a2"], []);
    await decidePublicAddresses(context, within);
    assert.equal(within.object.status?.publicAddresses, undefined);
  });

  it("touches nothing in a cluster within one cloud, two regions of it included", async () => {
    const groups = new FakeGroups();
    const scope = scopeOf(infra("a", true), groups, ["a2"], [machine("a", "control-plane"), machine("a2", "worker")]);
    assert.equal(await ensureCrossCloudRules(context, scope), undefined);
    assert.equal(groups.sets, 0);
    assert.equal(scope.object.status?.publicAddresses, undefined);
  });

  it("goes back to the node rules alone once the cluster no longer spans clouds", async () => {
    const groups = new FakeGroups();
    const object = infra("a", true);
    object.status = { ...object.status, publicAddresses: true, crossCloudRules: 3 };
    groups.rules.set("sg-a", [...nodeFirewallRules("10.0.0.0/16"), { direction: "ingress", protocol: "tcp", fromPort: 6443, toPort: 6443, cidr: "198.51.100.3/32" }]);
    const scope = scopeOf(object, groups, [], [machine("a", "control-plane", "203.0.113.5")]);
    await ensureCrossCloudRules(context, scope);
    assert.ok(sameRules(groups.rules.get("sg-a")!, nodeFirewallRules("10.0.0.0/16")));
    assert.equal(scope.object.status?.publicAddresses, undefined);
    assert.equal(scope.object.status?.crossCloudRules, undefined);
  });
});
