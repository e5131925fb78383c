// Which ports a cloud's security group opens to which addresses of the other clouds' nodes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { cloudOf, crossCloudRules, sameRules, spansClouds, type CrossCloudNode } from "./crosscloud.ts";

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
