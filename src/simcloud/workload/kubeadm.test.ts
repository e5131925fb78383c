import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterPki } from "../../bootstrap/kubeadm.ts";
import { caCertHash, createCertificateAuthority, createServiceAccountKeyPair } from "../../bootstrap/pki.ts";
import { SimCloud } from "../cloud.ts";
import { readyNetwork, waitFor, type ReadyNetwork } from "../test-support.ts";
import type { LoadBalancer } from "../types.ts";
import type { NodeObject } from "./kinds.ts";
import { ManualClock } from "../clock.ts";
import { API_CALL_TIMEOUT_MS, DISCOVERY_TIMEOUT_MS, startWorkloadEmulation, type WorkloadEmulation } from "./index.ts";
import { REGION, bootLogMatching, clusterPki, controlPlaneLoadBalancer, endpointOf, initData, joinData, launch, launchControlPlane, runDueSteps } from "./test-support.ts";

// Instant steps run as they fall due; time moves only when a test advances the clock.
const clock = new ManualClock(Date.now());
const stopSteps = runDueSteps(clock);
let cloud: SimCloud;
let workloads: WorkloadEmulation;
let net: ReadyNetwork;
let lb: LoadBalancer;
let pki: ClusterPki;

before(async () => {
  cloud = new SimCloud({ profile: "instant", clock, seed: 5 });
  workloads = await startWorkloadEmulation(cloud);
  cloud.setQuota("default", REGION, { loadBalancers: 20 });
  net = await readyNetwork(cloud);
  lb = await controlPlaneLoadBalancer(cloud, net, "beta");
  pki = await clusterPki();
  const first = await launchControlPlane(cloud, net, lb, initData(lb, pki, "beta-cp-0"));
  await bootLogMatching(cloud, first.id, /control-plane has initialized successfully/);
});

after(async () => {
  stopSteps();
  await workloads.close();
  await cloud.close();
});

async function hasNode(name: string, clusterId = lb.id): Promise<boolean> {
  return (await workloads.emulator.cluster(clusterId)?.hasNode(name)) ?? false;
}

/** Boots a machine and waits for kubeadm to give up; the machine keeps running and no node appears. */
async function failedJoin(userData: string, node: string, beforeFailing?: (instanceId: string) => Promise<void>): Promise<string[]> {
  const instance = await launch(cloud, net, userData);
  await beforeFailing?.(instance.id);
  const log = await bootLogMatching(cloud, instance.id, /^\S+ error execution phase/);
  assert.equal((await cloud.getInstance(REGION, instance.id)).state, "running", "a failed kubeadm leaves the machine running");
  assert.equal(await hasNode(node), false, `no node ${node}`);
  return log;
}

describe("kubeadm join on the sim cloud", () => {
  it("refuses a token the cluster does not know", async () => {
    const log = await failedJoin(joinData(lb, pki, { name: "beta-w-token" }, { token: "zzzzzz.0123456789abcdef" }), "beta-w-token");
    assert.ok(
      log.some((l) => l.includes('error execution phase preflight: couldn\'t validate the identity of the API Server: token id "zzzzzz" is invalid for this cluster or it has expired')),
      log.join("\n"),
    );
  });

  it("refuses the right token id with the wrong secret", async () => {
    const log = await failedJoin(joinData(lb, pki, { name: "beta-w-secret" }, { token: "abcdef.zzzzzzzzzzzzzzzz" }), "beta-w-secret");
    assert.ok(log.some((l) => l.includes("failed to verify JWS signature of received cluster info object")), log.join("\n"));
  });

  it("refuses a CA hash that does not pin the cluster's CA, naming the CA's actual key", async () => {
    const other = await createCertificateAuthority({ commonName: "not-the-cluster-ca" });
    const log = await failedJoin(joinData(lb, pki, { name: "beta-w-ca" }, { caCertHashes: [caCertHash(other.certPem)] }), "beta-w-ca");
    const expected = `cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${caCertHash(pki.ca.certPem)}" are pinned`;
    assert.ok(log.some((l) => l.includes(expected)), log.join("\n"));
  });

  it("retries an endpoint nothing answers on until discovery times out, then fails naming it", async () => {
    const expire = async (id: string) => {
      await bootLogMatching(cloud, id, /Failed to request cluster-info, will try again/);
      clock.advance(DISCOVERY_TIMEOUT_MS);
    };
    const wrongPort = `${lb.dnsName}:6444`;
    const log = await failedJoin(joinData(lb, pki, { name: "beta-w-port" }, { endpoint: wrongPort }), "beta-w-port", expire);
    const url = `https://${wrongPort}/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s`;
    assert.ok(log.some((l) => l.includes(`couldn't validate the identity of the API Server: failed to request the cluster-info ConfigMap: Get "${url}": dial tcp ${wrongPort}: i/o timeout`)), log.join("\n"));
    const unknown = await failedJoin(joinData(lb, pki, { name: "beta-w-host" }, { endpoint: "nowhere.example:6443" }), "beta-w-host", expire);
    assert.ok(unknown.some((l) => l.includes("dial tcp: lookup nowhere.example: no such host")), unknown.join("\n"));
  });

  it("refuses a control-plane join whose certificates are not the cluster's", async () => {
    const foreign = await clusterPki();
    const data = joinData(lb, { ...foreign, ca: foreign.ca }, { name: "beta-cp-foreign" }, { controlPlane: true, caCertHashes: [caCertHash(pki.ca.certPem)] });
    const log = await failedJoin(data, "beta-cp-foreign");
    assert.ok(log.some((l) => l.includes("One or more conditions for hosting a new control plane instance is not satisfied") && l.includes("is not the cluster's certificate authority")), log.join("\n"));
  });

  it("refuses a control-plane join whose etcd CA, front-proxy CA or service-account key is not the cluster's", async () => {
    const foreign = await clusterPki();
    const data = joinData(lb, { ...pki, etcdCa: foreign.etcdCa, frontProxyCa: foreign.frontProxyCa, serviceAccount: await createServiceAccountKeyPair() }, { name: "beta-cp-etcd" }, { controlPlane: true });
    const log = await failedJoin(data, "beta-cp-etcd");
    const failure = log.find((l) => l.includes("One or more conditions for hosting a new control plane instance is not satisfied")) ?? "";
    for (const file of ["etcd/ca.crt", "front-proxy-ca.crt", "sa.pub"]) assert.ok(failure.includes(`/etc/kubernetes/pki/${file} is not the cluster's`), `${file} named in: ${failure}`);
    assert.ok(!failure.includes("pki/ca.crt is not"), "the cluster CA itself is right");
  });

  it("registers a node with the kubelet version its machine installed, older than the control plane's", async () => {
    const instance = await launch(cloud, net, joinData(lb, pki, { name: "beta-w-old" }, { kubernetesVersion: "v1.30.4" }));
    await bootLogMatching(cloud, instance.id, /This node has joined the cluster/);
    const node = (await workloads.emulator.cluster(lb.id)!.objects.get(workloads.emulator.cluster(lb.id)!.kinds.node, undefined, "beta-w-old")) as NodeObject;
    assert.equal(node.status?.nodeInfo?.kubeletVersion, "v1.30.4");
    assert.equal(node.status?.nodeInfo?.containerRuntimeVersion, "containerd://1.7.12");
    const newer = await failedJoin(joinData(lb, pki, { name: "beta-w-new" }, { kubernetesVersion: "v1.32.0" }), "beta-w-new");
    assert.ok(newer.some((l) => l.includes('[ERROR KubeletVersion]: the kubelet version is higher than the control plane version. This is not a supported version skew and may lead to a malfunctional cluster. Kubelet version: "1.32.0" Control plane version: "1.31.2"')), newer.join("\n"));
  });

  it("times a join out naming the endpoint once the load balancer's only target is gone from it", async () => {
    const first = await cloud.getLoadBalancer(REGION, lb.id);
    const target = first.targets[0]!.instanceId;
    await cloud.deregisterTargets(REGION, lb.id, [target]);
    try {
      const log = await failedJoin(joinData(lb, pki, { name: "beta-w-alone" }), "beta-w-alone", async (id) => {
        await bootLogMatching(cloud, id, /Failed to request cluster-info, will try again/);
        clock.advance(DISCOVERY_TIMEOUT_MS);
      });
      const url = `https://${endpointOf(lb)}/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s`;
      assert.ok(log.some((l) => l.includes(`failed to request the cluster-info ConfigMap: Get "${url}": dial tcp ${endpointOf(lb)}: connect: connection refused`)), log.join("\n"));
    } finally {
      await cloud.registerTargets(REGION, lb.id, [target]);
    }
  });

  it("refuses a node name the cluster already has", async () => {
    const log = await failedJoin(joinData(lb, pki, { name: "beta-cp-0" }), "beta-cp-never");
    assert.ok(log.some((l) => l.includes('a Node with name "beta-cp-0" already exists in the cluster')), log.join("\n"));
  });

  it("waits for a control plane that is not up yet, then joins it", async () => {
    const later = await controlPlaneLoadBalancer(cloud, net, "gamma");
    const laterPki = await clusterPki();
    const worker = await launch(cloud, net, joinData(later, laterPki, { name: "gamma-w-0" }));
    await bootLogMatching(cloud, worker.id, /Failed to request cluster-info, will try again: .*connection refused/);
    await launchControlPlane(cloud, net, later, initData(later, laterPki, "gamma-cp-0"));
    await bootLogMatching(cloud, worker.id, /This node has joined the cluster/);
    assert.equal(await hasNode("gamma-w-0", later.id), true);
  });

  it("keeps a scale set's instance launched before init waiting for it, neither failed nor replaced, then joins it", async () => {
    const later = await controlPlaneLoadBalancer(cloud, net, "epsilon");
    const laterPki = await clusterPki();
    const set = await cloud.createScaleSet(REGION, {
      name: "epsilon-pool",
      subnetIds: [net.subnet.id],
      launchTemplate: { machineType: "s1.small", imageId: net.imageId, userData: joinData(later, laterPki, { name: "epsilon-w-0" }), securityGroupIds: [net.securityGroup.id] },
      minSize: 0,
      maxSize: 1,
      desiredCapacity: 1,
    });
    const member = await waitFor(async () => {
      clock.advance(10);
      return (await cloud.getScaleSet(REGION, set.id)).instances[0];
    }, "the scale set's instance");
    await bootLogMatching(cloud, member.instanceId, /Failed to request cluster-info, will try again: .*connection refused/);
    assert.ok(!(await cloud.getInstance(REGION, member.instanceId)).bootLog.some((l) => l.includes("error execution phase")), "the join waits, it does not fail");
    await launchControlPlane(cloud, net, later, initData(later, laterPki, "epsilon-cp-0"));
    await bootLogMatching(cloud, member.instanceId, /This node has joined the cluster/);
    assert.equal(await hasNode("epsilon-w-0", later.id), true);
    const after = await cloud.getScaleSet(REGION, set.id);
    assert.deepEqual(after.instances.map((i) => [i.instanceId, i.healthStatus]), [[member.instanceId, "Healthy"]], "the same instance, never replaced");
  });

  it("gives up when no control plane answers within kubeadm's discovery timeout", async () => {
    const log = await failedJoin(joinData(lb, pki, { name: "beta-w-late" }, { endpoint: "10.0.99.99:6443" }), "beta-w-late", async (id) => {
      await bootLogMatching(cloud, id, /will try again: Get "https:\/\/10\.0\.99\.99:6443\/.*": dial tcp 10\.0\.99\.99:6443: i\/o timeout/);
      clock.advance(DISCOVERY_TIMEOUT_MS - 1);
      await workloads.emulator.idle();
      assert.ok(!(await cloud.getInstance(REGION, id)).bootLog.some((l) => l.includes("error execution phase")), "still retrying just before the timeout");
      clock.advance(1);
    });
    assert.ok(log.some((l) => l.includes('failed to request the cluster-info ConfigMap: Get "https://10.0.99.99:6443/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s": dial tcp 10.0.99.99:6443: i/o timeout')), log.join("\n"));
  });

  it("refuses a token past its expiration", async () => {
    const short = await controlPlaneLoadBalancer(cloud, net, "delta");
    const shortPki = await clusterPki();
    const first = await launchControlPlane(cloud, net, short, initData(short, shortPki, "delta-cp-0", { tokenTtl: "1s" }));
    await bootLogMatching(cloud, first.id, /initialized successfully/);
    clock.advance(1000);
    const instance = await launch(cloud, net, joinData(short, shortPki, { name: "delta-w-0" }));
    const log = await bootLogMatching(cloud, instance.id, /error execution phase/);
    assert.ok(log.some((l) => l.includes('token id "abcdef" is invalid for this cluster or it has expired')), log.join("\n"));
  });
});

describe("kubeadm init on the sim cloud", () => {
  it("fails after kubeadm's API-call timeout, naming the endpoint, while the load balancer has no healthy target for the machine", async () => {
    const alone = await controlPlaneLoadBalancer(cloud, net, "theta");
    const instance = await launch(cloud, net, initData(alone, await clusterPki(), "theta-cp-0"));
    await bootLogMatching(cloud, instance.id, /The API server is healthy/);
    await workloads.emulator.idle();
    clock.advance(API_CALL_TIMEOUT_MS - 1);
    await workloads.emulator.idle();
    assert.ok(!(await cloud.getInstance(REGION, instance.id)).bootLog.some((l) => l.includes("error execution phase")), "still trying just before the timeout");
    clock.advance(1);
    const log = await bootLogMatching(cloud, instance.id, /error execution phase upload-config/);
    const url = `https://${endpointOf(alone)}/api/v1/namespaces/kube-system/configmaps?timeout=10s`;
    assert.ok(log.some((l) => l.includes(`error execution phase upload-config/kubeadm: error uploading the kubeadm ClusterConfiguration: unable to create ConfigMap: Post "${url}": dial tcp ${endpointOf(alone)}: connect: connection refused`)), log.join("\n"));
    assert.equal(workloads.emulator.cluster(alone.id), undefined, "no cluster came of it");
  });

  it("finishes once the machine becomes a healthy target of the load balancer, within the timeout", async () => {
    const later = await controlPlaneLoadBalancer(cloud, net, "iota");
    const instance = await launch(cloud, net, initData(later, await clusterPki(), "iota-cp-0"));
    await bootLogMatching(cloud, instance.id, /The API server is healthy/);
    await workloads.emulator.idle();
    clock.advance(API_CALL_TIMEOUT_MS / 2);
    await cloud.registerTargets(REGION, later.id, [instance.id]);
    await bootLogMatching(cloud, instance.id, /initialized successfully/);
    assert.ok(await workloads.emulator.cluster(later.id)?.hasNode("iota-cp-0"));
  });

  it("refuses a control plane with one CPU in kubeadm's preflight", async () => {
    const small = await controlPlaneLoadBalancer(cloud, net, "kappa");
    const instance = await launchControlPlane(cloud, net, small, initData(small, await clusterPki(), "kappa-cp-0"), "s1.small");
    const log = await bootLogMatching(cloud, instance.id, /error execution phase preflight/);
    assert.ok(log.some((l) => l.endsWith("error execution phase preflight: [ERROR NumCPU]: the number of available CPUs 1 is less than the required 2")), log.join("\n"));
  });

  it("refuses a configuration kubeadm's preflight would refuse, and creates no cluster", async () => {
    const broken = await controlPlaneLoadBalancer(cloud, net, "epsilon");
    const instance = await launch(cloud, net, initData(broken, pki, "epsilon-cp-0", { kubernetesVersion: "1.31", podSubnet: "10.96.0.0/16" }));
    const log = await bootLogMatching(cloud, instance.id, /error execution phase preflight/);
    assert.ok(log.some((l) => l.includes('[ERROR KubernetesVersion]: couldn\'t parse Kubernetes version "1.31"')), log.join("\n"));
    assert.equal(workloads.emulator.cluster(broken.id), undefined);
    assert.equal((await cloud.getInstance(REGION, instance.id)).state, "running");
    await waitFor(async () => (await cloud.registerTargets(REGION, broken.id, [instance.id])).targets[0]?.health === "unhealthy", "the machine not serving");
  });

  it("cannot initialise a second cluster behind a load balancer whose targets serve another one", async () => {
    const instance = await launchControlPlane(cloud, net, lb, initData(lb, await clusterPki(), "beta-cp-again"));
    await bootLogMatching(cloud, instance.id, /The API server is healthy/);
    await workloads.emulator.idle();
    clock.advance(API_CALL_TIMEOUT_MS);
    const log = await bootLogMatching(cloud, instance.id, /error execution phase upload-config/);
    const url = `https://${endpointOf(lb)}/api/v1/namespaces/kube-system/configmaps?timeout=10s`;
    assert.ok(log.some((l) => l.includes(`error uploading the kubeadm ClusterConfiguration: unable to create ConfigMap: Post "${url}": tls: failed to verify certificate: x509: certificate signed by unknown authority`)), log.join("\n"));
    assert.equal(await hasNode("beta-cp-0"), true, "the first cluster is untouched");
    await cloud.deregisterTargets(REGION, lb.id, [instance.id]);
  });
});
