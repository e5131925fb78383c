import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SimCloud } from "../cloud.ts";
import type { ManualClock } from "../clock.ts";
import { readyNetwork, waitFor, type ReadyNetwork } from "../test-support.ts";
import type { LoadBalancer } from "../types.ts";
import { API_CALL_TIMEOUT_MS, DISCOVERY_TIMEOUT_MS, type WorkloadEmulation } from "./index.ts";
import { REGION, bootLogMatching, clusterPki, endpointOf, initData, joinData, kubectl, launch, launchControlPlane, writeKubeconfig, emulatedCloud, type EmulatedCloud } from "./test-support.ts";

let env: EmulatedCloud;
let clock: ManualClock;
let cloud: SimCloud;
let workloads: WorkloadEmulation;
let net: ReadyNetwork;
let dir: string;

before(async () => {
  env = await emulatedCloud(12);
  ({ clock, cloud, workloads, net, dir } = env);
});

after(() => env.close());

async function loadBalancer(name: string, options: { scheme?: "internal"; targetPort?: number } = {}): Promise<LoadBalancer> {
  const lb = await cloud.createLoadBalancer(REGION, {
    name,
    subnetIds: [net.subnet.id],
    listeners: [{ port: 6443, protocol: "tcp", targetPort: options.targetPort ?? 6443 }],
    ...(options.scheme ? { scheme: options.scheme } : {}),
  });
  return waitFor(async () => {
    const current = await cloud.getLoadBalancer(REGION, lb.id);
    return current.state === "active" ? current : undefined;
  }, `load balancer ${name} active`);
}

/** `kubectl get nodes` through the load balancer's published address: its exit code and output. */
async function getNodes(lb: LoadBalancer, kubeconfig: string): Promise<{ code: number; out: string }> {
  const result = await kubectl(kubeconfig, ["get", "nodes", "--no-headers"]);
  return { code: result.code, out: result.stdout + result.stderr };
}

describe("the workload API behind a load balancer", () => {
  it("answers only while a healthy target of the load balancer serves the cluster", async () => {
    const lb = await loadBalancer("lambda");
    const pki = await clusterPki();
    const cp = await launchControlPlane(cloud, net, lb, initData(lb, pki, "lambda-cp-0"));
    await bootLogMatching(cloud, cp.id, /initialized successfully/);
    const kubeconfig = await writeKubeconfig(dir, lb, pki.ca);
    assert.equal((await getNodes(lb, kubeconfig)).code, 0);

    await cloud.deregisterTargets(REGION, lb.id, [cp.id]);
    const none = await getNodes(lb, kubeconfig);
    assert.notEqual(none.code, 0, "no registered target: nothing answers");
    assert.match(none.out, /connection reset by peer|EOF/);

    await cloud.registerTargets(REGION, lb.id, [cp.id]);
    assert.equal((await getNodes(lb, kubeconfig)).code, 0, "healthy again once registered");

    // The only control-plane machine stops: the API stops answering at once (its node lingers, Unknown later).
    await cloud.stopInstance(REGION, cp.id);
    const stopped = await getNodes(lb, kubeconfig);
    assert.notEqual(stopped.code, 0);
    assert.match(stopped.out, /connection reset by peer|EOF/);
    await waitFor(async () => (await cloud.getInstance(REGION, cp.id)).state === "stopped", "stopped");
    await cloud.startInstance(REGION, cp.id);
    await waitFor(async () => (await getNodes(lb, kubeconfig)).code === 0, "answering once started again", 10_000);
  });

  it("keeps an internal load balancer to its own network: joins from another network time out; clients reach it only through the cloud's forwarding into that network", async () => {
    const lb = await loadBalancer("mu", { scheme: "internal" });
    const pki = await clusterPki();
    const cp = await launchControlPlane(cloud, net, lb, initData(lb, pki, "mu-cp-0"));
    await bootLogMatching(cloud, cp.id, /initialized successfully/);
    const inside = await launch(cloud, net, joinData(lb, pki, { name: "mu-w-0" }));
    await bootLogMatching(cloud, inside.id, /This node has joined the cluster/);

    // The loopback port stands for private access into the load balancer's network (a private endpoint, a
    // bastion): that is how Slipway and a user's kubectl reach a private cluster in the emulation.
    const kubeconfig = await writeKubeconfig(dir, lb, pki.ca);
    assert.equal((await getNodes(lb, kubeconfig)).code, 0, "reachable through the cloud's forwarding into its network");
    assert.match((cloud.routeThroughLoadBalancer(lb.dnsName, 6443, {}) as { error: string }).error, /i\/o timeout/, "not from the public network");

    const other = await readyNetwork(cloud, { cidr: "10.9.0.0/16" });
    const outside = await cloud.createInstance(REGION, { subnetId: other.subnet.id, machineType: "s1.medium", imageId: other.imageId, securityGroupIds: [other.securityGroup.id], userData: joinData(lb, pki, { name: "mu-w-far" }) });
    await bootLogMatching(cloud, outside.id, /Failed to request cluster-info, will try again/);
    clock.advance(DISCOVERY_TIMEOUT_MS);
    const log = await bootLogMatching(cloud, outside.id, /error execution phase/);
    assert.ok(log.some((l) => l.includes(`failed to request the cluster-info ConfigMap: Get "https://${endpointOf(lb)}/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s": dial tcp ${endpointOf(lb)}: i/o timeout`)), log.join("\n"));
  });

  it("checks targets on the listener's target port: an API server on another port is no healthy target, and init times out", async () => {
    const lb = await loadBalancer("nu", { targetPort: 6444 });
    const cp = await launchControlPlane(cloud, net, lb, initData(lb, await clusterPki(), "nu-cp-0"));
    await bootLogMatching(cloud, cp.id, /The API server is healthy/);
    await workloads.emulator.idle();
    const target = (await cloud.getLoadBalancer(REGION, lb.id)).targets[0];
    assert.deepEqual([target?.health, target?.reason], ["unhealthy", "Target.FailedHealthChecks"]);
    clock.advance(API_CALL_TIMEOUT_MS);
    const log = await bootLogMatching(cloud, cp.id, /error execution phase upload-config/);
    assert.ok(log.some((l) => l.includes(`dial tcp ${endpointOf(lb)}: connect: connection refused`)), log.join("\n"));
  });

  it("reports each cluster's own Kubernetes version at /version", async () => {
    for (const [name, version] of [["xi", "v1.31.2"], ["omicron", "v1.30.4"]] as const) {
      const lb = await loadBalancer(name);
      const pki = await clusterPki();
      const cp = await launchControlPlane(cloud, net, lb, initData(lb, pki, `${name}-cp-0`, { kubernetesVersion: version }));
      await bootLogMatching(cloud, cp.id, /initialized successfully/);
      const out = await kubectl(await writeKubeconfig(dir, lb, pki.ca), ["version", "-o", "json"]);
      assert.equal(out.code, 0, out.stderr);
      assert.equal((JSON.parse(out.stdout) as { serverVersion: { gitVersion: string } }).serverVersion.gitVersion, version);
    }
  });
});
