import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterSpec } from "../../api/slipway/cluster.ts";
import { apiVisibilityProblems, preflight, preflightReason, clusterDemand, type ConnectionFacts } from "./preflight.ts";

const types = [
  { name: "s1.small", vcpus: 1, memoryMiB: 2048 },
  { name: "s1.medium", vcpus: 2, memoryMiB: 4096 },
  { name: "s1.large", vcpus: 4, memoryMiB: 8192 },
];
const images = [{ id: "img-1", name: "ubuntu-22.04" }];
const roomy = { limits: { vcpus: 64, instances: 32, networks: 5, loadBalancers: 5, publicIps: 10 }, usage: { vcpus: 0, instances: 0, networks: 0, loadBalancers: 0, publicIps: 0 } };

function spec(overrides: Partial<ClusterSpec> = {}): ClusterSpec {
  return {
    kubernetesVersion: "v1.31.2",
    controlPlane: { connection: "east", machineType: "s1.medium", replicas: 3, image: "ubuntu-22.04" },
    workers: [
      { name: "a", connection: "east", machineType: "s1.large", replicas: 2, image: "ubuntu-22.04" },
      { name: "b", connection: "west", machineType: "s1.large", replicas: 3, image: "ubuntu-22.04" },
    ],
    ...overrides,
  } as ClusterSpec;
}

function facts(over: Record<string, Partial<ConnectionFacts>> = {}): Map<string, ConnectionFacts> {
  return new Map(["east", "west"].map((c) => [c, { machineTypes: types, images, quota: roomy, ...over[c] }]));
}

describe("cluster preflight", () => {
  it("passes a cluster that fits", () => {
    assert.deepEqual(preflight(spec(), facts()), []);
  });

  it("adds up the whole cluster per connection", () => {
    const demand = clusterDemand(spec(), () => types);
    assert.deepEqual(demand.get("east"), { vcpus: 3 * 2 + 2 * 4, instances: 5, networks: 1, loadBalancers: 1, publicIps: 0 });
    assert.deepEqual(demand.get("west"), { vcpus: 12, instances: 3, networks: 1, loadBalancers: 0, publicIps: 0 });
  });

  it("reports every problem at once", () => {
    const s = spec({ controlPlane: { connection: "east", machineType: "s1.small", replicas: 1, image: "ubuntu-22.04" } });
    s.workers![0]!.machineType = "s9.huge";
    s.workers![1]!.image = "windows";
    const problems = preflight(s, facts());
    assert.deepEqual(problems.map((p) => p.field), ["spec.controlPlane.machineType", "spec.workers[0].machineType", "spec.workers[1].image"]);
    assert.match(problems[0]!.message, /below kubeadm's control-plane minimum of 2 vCPU/);
    assert.match(problems[1]!.message, /offered: s1\.small, s1\.medium, s1\.large/);
    assert.equal(preflightReason(problems), "ValidationFailed");
  });

  it("reports a missing connection once, and quota short per resource", () => {
    const tight = { limits: { ...roomy.limits, vcpus: 10 }, usage: { ...roomy.usage, vcpus: 4 } };
    const problems = preflight(spec(), new Map([["east", { machineTypes: types, images, quota: tight }]]));
    assert.deepEqual(problems.map((p) => p.reason), ["ValidationFailed", "QuotaExceeded"]);
    assert.match(problems[0]!.message, /connection "west" does not exist/);
    assert.match(problems[1]!.message, /vCPUs in connection "east" is short by 8: the cluster needs 14 more, 6 of 10 are free/);
  });

  it("does not count what the cluster already holds", () => {
    const full = { limits: { ...roomy.limits, vcpus: 14, instances: 5 }, usage: { ...roomy.usage, vcpus: 14, instances: 5, networks: 1, loadBalancers: 1 } };
    const own = { vcpus: 14, instances: 5, networks: 1, loadBalancers: 1, publicIps: 0 };
    assert.deepEqual(preflight(spec(), facts({ east: { quota: full, ownUsage: own } })), []);
    const problems = preflight(spec(), facts({ east: { quota: full } }));
    assert.equal(preflightReason(problems), "QuotaExceeded");
  });
});

describe("a private API", () => {
  const oneCloud = (over: Record<string, Partial<ConnectionFacts>> = {}) => facts({ east: { cloud: "sim A", dns: true, ...over.east }, west: { cloud: "sim A", dns: true, ...over.west } });
  const privately = spec({ apiServer: { visibility: "private" } });

  it("is allowed where every pool is in the control plane's cloud and its provider keeps DNS; a public one needs neither", () => {
    assert.deepEqual(apiVisibilityProblems(privately, oneCloud()), []);
    assert.deepEqual(apiVisibilityProblems(spec(), oneCloud({ west: { cloud: "sim B" }, east: { dns: false } })), []);
  });

  it("is refused naming each pool in another cloud, whose machines would reach the API only through a public address", () => {
    const problems = apiVisibilityProblems(privately, oneCloud({ west: { cloud: "sim B" } }));
    assert.deepEqual(problems.map((p) => p.field), ["spec.workers[1].connection"]);
    assert.match(problems[0]!.message, /connection "west" is outside the cloud of the control plane's connection "east".*visibility is private/);
    const onHosts = apiVisibilityProblems(privately, oneCloud(), new Set(["west"]));
    assert.deepEqual(onHosts.map((p) => p.field), ["spec.workers[1].connection"]);
  });

  it("is refused without DNS for api-int, or for a control plane on hosts", () => {
    assert.match(apiVisibilityProblems(privately, oneCloud({ east: { dns: false } }))[0]?.message ?? "", /private needs DNS for the name api-int/);
    const hosts = apiVisibilityProblems(privately, oneCloud(), new Set(["east"]));
    assert.deepEqual(hosts.map((p) => p.field), ["spec.apiServer.visibility"]);
    assert.match(hosts[0]!.message, /connection "east" is of hosts/);
  });
});
