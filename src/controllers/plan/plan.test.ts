import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, ConnectionObject, InfrastructureObject, MachineObject } from "../../api/kinds.ts";
import { HOURS_PER_MONTH } from "../../api/slipway/clusterplan.ts";
import { imagesOf, machineTypesOf, regions, zonesOf } from "../../simcloud/catalog.ts";
import { DEFAULT_QUOTA } from "../../simcloud/quotas.ts";
import type { PlanConnectionFacts } from "./facts.ts";
import { makePlan } from "./plan.ts";

function facts(region: string, usage = { vcpus: 0, instances: 0, networks: 0, loadBalancers: 0, publicIps: 0 }): PlanConnectionFacts {
  const r = regions().find((x) => x.name === region)!;
  return {
    connection: { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: region, namespace: "default" }, spec: { provider: "sim", region } } as ConnectionObject,
    zones: zonesOf(region).map((z) => z.name),
    machineTypes: machineTypesOf(region),
    images: imagesOf(region),
    quota: { limits: { ...DEFAULT_QUOTA }, usage },
    estimates: { prices: r.prices, durationsMs: { instanceBoot: 1000, kubeadmJoin: 500 } },
  };
}

function cluster(workers: { name: string; replicas: number; connection?: string; machineType?: string }[], cp = { replicas: 3, machineType: "s1.medium" }): ClusterObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: "shop", namespace: "default" },
    spec: {
      kubernetesVersion: "v1.31.2",
      controlPlane: { connection: "east", machineType: cp.machineType, replicas: cp.replicas, image: "ubuntu-22.04" },
      workers: workers.map((w) => ({ name: w.name, connection: w.connection ?? "east", machineType: w.machineType ?? "s1.large", replicas: w.replicas, image: "ubuntu-22.04" })),
    },
  } as ClusterObject;
}

const FACTS = new Map([
  ["east", facts("sim-east-1")],
  ["west", facts("sim-west-1")],
]);

function price(region: string, type: string): number {
  return machineTypesOf(region).find((t) => t.name === type)!.hourlyPrice;
}

describe("plan of a new cluster", () => {
  it("costs what the catalogue says: machines, and the control plane's load balancer", () => {
    const plan = makePlan({ cluster: cluster([{ name: "a", replicas: 2 }, { name: "b", replicas: 2, connection: "west" }]), facts: FACTS });
    const lb = regions().find((r) => r.name === "sim-east-1")!.prices.loadBalancerHourly;
    const expected = 3 * price("sim-east-1", "s1.medium") + 2 * price("sim-east-1", "s1.large") + 2 * price("sim-west-1", "s1.large") + lb;
    assert.equal(plan.action, "Create");
    assert.ok(Math.abs(plan.cost.hourly - expected) < 1e-9, `${plan.cost.hourly} vs ${expected}`);
    assert.equal(plan.cost.monthly, Math.round(expected * HOURS_PER_MONTH * 100) / 100);
    assert.deepEqual(
      plan.machines.map((m) => `${m.name} ${m.machineType} ${m.zone} ${m.change}`),
      [
        "shop-cp-0 s1.medium sim-east-1a Create",
        "shop-cp-1 s1.medium sim-east-1a Create",
        "shop-cp-2 s1.medium sim-east-1a Create",
        "shop-a-0 s1.large sim-east-1a Create",
        "shop-a-1 s1.large sim-east-1a Create",
        "shop-b-0 s1.large sim-west-1a Create",
        "shop-b-1 s1.large sim-west-1a Create",
      ],
    );
    assert.deepEqual(
      plan.resources.filter((r) => r.connection === "west").map((r) => r.kind),
      ["network", "subnet", "securityGroup", "keyPair"],
      "a load balancer only where the control plane is",
    );
    const vcpus = plan.quota.find((q) => q.connection === "east" && q.resource === "vcpus")!;
    assert.deepEqual([vcpus.needed, vcpus.free, vcpus.sufficient], [3 * 2 + 2 * 4, 64, true]);
  });

  it("reports every problem at once, as validation would", () => {
    const short = new Map([["east", facts("sim-east-1", { vcpus: 63, instances: 0, networks: 0, loadBalancers: 0, publicIps: 0 })]]);
    const plan = makePlan({ cluster: cluster([{ name: "a", replicas: 2, machineType: "s9.huge" }], { replicas: 3, machineType: "s1.small" }), facts: short });
    assert.deepEqual(
      plan.problems.map((p) => p.field),
      ['spec.controlPlane.machineType', "spec.workers[0].machineType", 'connection "east"'],
    );
    assert.equal(plan.quota.find((q) => q.resource === "vcpus")!.sufficient, false);
    assert.deepEqual(plan.cost.unpriced, ["machine type s9.huge in east"]);
  });

  it("refuses a private API with a pool in another cloud, as validation would", () => {
    const other = facts("sim-west-1");
    other.connection!.spec.endpoint = "http://127.0.0.1:7481";
    const hidden = cluster([{ name: "a", replicas: 1 }, { name: "b", replicas: 1, connection: "west" }]);
    hidden.spec.apiServer = { visibility: "private" };
    assert.deepEqual(makePlan({ cluster: hidden, facts: FACTS }).problems, [], "both connections are one cloud");
    const problems = makePlan({ cluster: hidden, facts: new Map([["east", facts("sim-east-1")], ["west", other]]) }).problems;
    assert.deepEqual(problems.map((p) => p.field), ["spec.workers[1].connection"]);
    assert.match(problems[0]!.message, /outside the cloud of the control plane's connection "east".*visibility is private/);
  });
});

describe("plan of a change", () => {
  const existing = (() => {
    const c = cluster([{ name: "a", replicas: 2 }]);
    const infra = {
      spec: { connection: "east", controlPlane: true },
      status: { ready: true, networkId: "net-1", subnetId: "sub-1", securityGroupId: "sg-1", keyPairId: "kp-1", loadBalancer: { id: "lb-1", host: "h", port: 6443 }, zones: ["sim-east-1a"], machineTypes: { "s1.medium": { vcpu: 2, memoryMiB: 4096 }, "s1.large": { vcpu: 4, memoryMiB: 8192 } } },
      metadata: { name: "shop-east" },
    } as unknown as InfrastructureObject;
    const machine = (name: string, role: string, type: string, pool?: string) =>
      ({
        metadata: { name },
        spec: { clusterName: "shop", role, connection: "east", machineType: type, ...(pool ? { pool } : {}) },
        status: { instanceId: `i-${name}`, phase: "Running", nodeReady: true, bootstrapped: true, zone: "sim-east-1a" },
      }) as unknown as MachineObject;
    const machines = [
      machine("shop-cp-0", "control-plane", "s1.medium"),
      machine("shop-cp-1", "control-plane", "s1.medium"),
      machine("shop-cp-2", "control-plane", "s1.medium"),
      machine("shop-a-0", "worker", "s1.large", "shop-a"),
      machine("shop-a-1", "worker", "s1.large", "shop-a"),
    ];
    return { cluster: c, infrastructures: [infra], pools: [], machines };
  })();

  it("lists only what changes, and the cost's change", () => {
    const plan = makePlan({ cluster: cluster([{ name: "a", replicas: 3 }]), existing, facts: FACTS });
    assert.equal(plan.action, "Update");
    assert.deepEqual(plan.machines.map((m) => `${m.name} ${m.change}`), ["shop-a-2 Create"]);
    assert.equal(plan.unchangedMachines, 5);
    assert.deepEqual(plan.resources, [], "the infrastructure is reused and not listed");
    assert.ok(Math.abs(plan.cost.delta!.hourly - price("sim-east-1", "s1.large")) < 1e-9);
    assert.deepEqual(plan.quota.map((q) => `${q.resource} ${q.needed}`), ["vcpus 4", "instances 1"]);
    assert.equal(plan.estimate.seconds, 1.5, "a boot and a join");
  });

  it("removes the highest index first and gives the cost back", () => {
    const plan = makePlan({ cluster: cluster([{ name: "a", replicas: 1 }]), existing, facts: FACTS });
    assert.deepEqual(plan.machines.map((m) => `${m.name} ${m.change}`), ["shop-a-1 Remove"]);
    assert.ok(plan.cost.delta!.hourly < 0);
  });

  it("says when nothing changes", () => {
    const plan = makePlan({ cluster: existing.cluster, existing, facts: FACTS });
    assert.equal(plan.action, "Unchanged");
    assert.deepEqual([plan.machines, plan.resources, plan.cost.delta!.hourly, plan.estimate.seconds], [[], [], 0, 0]);
  });
});
