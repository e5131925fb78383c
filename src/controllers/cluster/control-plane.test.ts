import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, ConnectionObject, InfrastructureObject, MachineObject } from "../../api/kinds.ts";
import type { Client } from "../../runtime/client.ts";
import { ManualClock, reconcileContext } from "../../runtime/testing.ts";
import type { ProviderResolver } from "../providers.ts";
import type { WorkloadClients } from "../workload.ts";
import { ensureControlPlane } from "./children.ts";
import { KubeconfigTargets } from "./kubeconfig.ts";
import { RecentChecks } from "./recent-checks.ts";
import type { ClusterScope } from "./scope.ts";

const T = "2025-01-01T00:00:00Z";

const infra: InfrastructureObject = {
  apiVersion: "slipway.dev/v1alpha1",
  kind: "Infrastructure",
  metadata: { name: "demo-east", namespace: "default", generation: 1 },
  spec: { clusterName: "demo", connection: "east", region: "sim-east-1", nodeCIDR: "10.0.0.0/20", controlPlane: true, machineTypes: ["s1.medium"], images: ["ubuntu-22.04"] },
  status: { ready: true, loadBalancer: { id: "lb-1", host: "api", port: 6443 }, conditions: [{ type: "Ready", status: "True", lastTransitionTime: T }] },
};

function cp(index: number, failed = false): MachineObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: { name: `demo-cp-${index}`, namespace: "default", uid: `m-${index}` },
    spec: { clusterName: "demo", role: "control-plane", connection: "east", machineType: "s1.medium" },
    status: failed ? { phase: "Failed", failureReason: "JoinControlPlaneFailed", failureMessage: "kubeadm join exited 1" } : { phase: "Running", bootstrapped: true, nodeReady: true },
  };
}

/** Runs the control plane's step over the machines given; says which it deleted and what it waits on. */
async function step(clock: ManualClock, cluster: ClusterObject, machines: MachineObject[], infrastructure = infra, cloud?: "instances" | "hosts") {
  const deleted: string[] = [];
  const created: string[] = [];
  const made: MachineObject[] = [];
  const client = {
    of: () => ({ delete: async (_ns: string, name: string) => void deleted.push(name), create: async (m: MachineObject) => (created.push(m.metadata.name!), made.push(m), m) }),
  } as unknown as Client;
  // A cloud whose machines are instances has cluster infrastructure; hosts reached over SSH do not.
  const providers = { open: async () => ({ capabilities: cloud === "instances" ? { clusterInfrastructure: {} } : {} }) } as unknown as ProviderResolver;
  const scope = {
    original: cluster,
    object: cluster,
    deps: { providers, workloads: undefined as unknown as WorkloadClients },
    timing: { pollMs: 1000, recheckMs: 120_000, revalidateMs: 30_000 },
    memory: { checks: new RecentChecks(), kubeconfigs: new KubeconfigTargets() },
    connections: new Map(cloud ? [["east", { metadata: { name: "east" }, spec: { provider: "sim", region: "sim-east-1" } } as unknown as ConnectionObject]] : []),
    infrastructures: [infrastructure],
    pools: [],
    controlPlane: machines,
    machines,
    changedChildren: new Set(),
  } as ClusterScope;
  const result = await ensureControlPlane(reconcileContext({ client, clock }), scope);
  return { deleted, created, made, waitingOn: scope.waitingOn, result };
}

describe("replacing failed control-plane machines", () => {
  it("replaces the first at once, backs off on the next, and stops past maxUnhealthy", async () => {
    const clock = new ManualClock();
    const cluster: ClusterObject = {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: "demo", namespace: "default", uid: "c-1" },
      spec: { controlPlane: { connection: "east", machineType: "s1.medium", replicas: 3 } },
    };
    const first = await step(clock, cluster, [cp(0), cp(1, true), cp(2)]);
    assert.deepEqual(first.deleted, ["demo-cp-1"]);
    assert.deepEqual(cluster.status?.controlPlane?.remediation, { attempts: 1, lastTime: T });

    clock.advance(3_000);
    const second = await step(clock, cluster, [cp(0), cp(2), cp(3, true)]);
    assert.deepEqual(second.deleted, []);
    assert.equal(second.waitingOn, "the control plane: replacing demo-cp-3 in 7s (backing off after 1 replacement(s))");
    assert.deepEqual(second.result, { requeueAfterMs: 7_000 });

    const paused = await step(clock, cluster, [cp(0, true), cp(2), cp(3, true)]);
    assert.deepEqual(paused.deleted, []);
    assert.match(paused.waitingOn ?? "", /2 machines failed \(demo-cp-0, demo-cp-3\), more than maxUnhealthy 1 of 3/);

    clock.advance(7_000);
    const later = await step(clock, cluster, [cp(0), cp(2), cp(3, true)]);
    assert.deepEqual(later.deleted, ["demo-cp-3"]);
    assert.equal(cluster.status?.controlPlane?.remediation?.attempts, 2);
  });

  it("follows the control plane's own maxUnhealthy", async () => {
    const clock = new ManualClock();
    const cluster = (maxUnhealthy: number | string): ClusterObject => ({
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: "demo", namespace: "default", uid: "c-1" },
      spec: { controlPlane: { connection: "east", machineType: "s1.medium", replicas: 3, maxUnhealthy } },
    });
    const none = await step(clock, cluster(0), [cp(0), cp(1, true), cp(2)]);
    assert.deepEqual(none.deleted, [], "0 replaces none");
    assert.match(none.waitingOn ?? "", /1 machines failed \(demo-cp-1\), more than maxUnhealthy 0 of 3/);
    const all = await step(clock, cluster("100%"), [cp(0), cp(1, true), cp(2, true)]);
    assert.deepEqual(all.deleted, ["demo-cp-1", "demo-cp-2"], "100% replaces even two of three");
  });
});

describe("the first control-plane machine", () => {
  const cluster = (): ClusterObject => ({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: "demo", namespace: "default", uid: "c-1" },
    spec: { controlPlane: { connection: "east", machineType: "s1.medium", replicas: 3 } },
  });
  const provisioning = (loadBalancer: boolean, lbCondition: "Unknown" | "False" = "Unknown"): InfrastructureObject => ({
    ...infra,
    status: {
      ready: false,
      ...(loadBalancer ? { loadBalancer: { id: "lb-1", host: "demo-api-1.sim-east-1.lb.simcloud.internal", port: 6443 } } : {}),
      conditions: [
        ...["CatalogResolved", "NetworkReady", "SubnetReady", "SecurityGroupReady", "KeyPairReady"].map((type) => ({ type, status: "True" as const, lastTransitionTime: T })),
        { type: "LoadBalancerReady", status: lbCondition, reason: lbCondition === "False" ? "CreateLoadBalancerFailed" : "Provisioning", lastTransitionTime: T },
        { type: "Ready", status: "False", reason: "LoadBalancerNotReady", lastTransitionTime: T },
      ],
    },
  });

  it("is created while the load balancer is provisioned, once its address is known", async () => {
    const made = await step(new ManualClock(), cluster(), [], provisioning(true));
    assert.deepEqual(made.created, ["demo-cp-0"]);
  });

  it("waits for the load balancer to exist, and for one that failed", async () => {
    for (const infrastructure of [provisioning(false), provisioning(true, "False")]) {
      const waiting = await step(new ManualClock(), cluster(), [], infrastructure);
      assert.deepEqual(waiting.created, []);
      assert.equal(waiting.waitingOn, "the infrastructure of connection east");
    }
  });
});

describe("making the control plane", () => {
  const cluster = (replicas: number): ClusterObject => ({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: "demo", namespace: "default", uid: "c-1" },
    spec: { controlPlane: { connection: "east", machineType: "s1.medium", replicas } },
  });
  const joining = (index: number): MachineObject => ({ ...cp(index), status: { phase: "Provisioning" } });

  it("makes every control-plane machine of a cloud at once, only the first initialising: the others take turns to join on their hosts", async () => {
    const made = await step(new ManualClock(), cluster(3), [], infra, "instances");
    assert.deepEqual(made.created, ["demo-cp-0", "demo-cp-1", "demo-cp-2"]);
    assert.deepEqual(made.made.map((m) => m.metadata.annotations?.["slipway.dev/bootstrap"] ?? "join"), ["init", "join", "join"]);
    // The next reconcile, with all three still joining, makes nothing more.
    assert.deepEqual((await step(new ManualClock(), cluster(3), [cp(0), joining(1), joining(2)], infra, "instances")).created, []);
  });

  it("makes a new first machine when the one that was to initialise failed before it did, instead of leaving the others waiting", async () => {
    const made = await step(new ManualClock(), cluster(3), [joining(1), joining(2)], infra, "instances");
    assert.deepEqual(made.created, ["demo-cp-0"]);
    assert.equal(made.made[0]?.metadata.annotations?.["slipway.dev/bootstrap"], "init");
    // Once one has initialised the cluster, a missing machine joins it.
    const joined: MachineObject = { ...joining(1), status: { phase: "Provisioned", bootstrapped: true } };
    const next = await step(new ManualClock(), cluster(3), [joined, joining(2)], infra, "instances");
    assert.deepEqual(next.made.map((m) => [m.metadata.name, m.metadata.annotations?.["slipway.dev/bootstrap"] ?? "join"]), [["demo-cp-0", "join"]]);
  });

  it("scales up by every missing machine at once while others still join, and adds none while a member leaves", async () => {
    assert.deepEqual((await step(new ManualClock(), cluster(5), [cp(0), joining(1), cp(2)], infra, "instances")).created, ["demo-cp-3", "demo-cp-4"]);
    const leaving = { ...cp(1), metadata: { ...cp(1).metadata, deletionTimestamp: T } };
    const held = await step(new ManualClock(), cluster(5), [cp(0), leaving, cp(2)], infra, "instances");
    assert.deepEqual(held.created, []);
    assert.match(held.waitingOn ?? "", /demo-cp-1 leaving/);
  });

  it("makes hosts reached over SSH one at a time, each once the others run", async () => {
    assert.deepEqual((await step(new ManualClock(), cluster(3), [], infra, "hosts")).created, ["demo-cp-0"]);
    assert.deepEqual((await step(new ManualClock(), cluster(3), [cp(0), joining(1)], infra, "hosts")).created, []);
    assert.deepEqual((await step(new ManualClock(), cluster(3), [cp(0), cp(1)], infra, "hosts")).created, ["demo-cp-2"]);
  });
});
