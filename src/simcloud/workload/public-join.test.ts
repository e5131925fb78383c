// Two sim clouds, each its own server: a worker of cloud B joins the control plane of cloud A over the
// public network, only from its public address and only where A's security group admits it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterPki } from "../../bootstrap/kubeadm.ts";
import { admits } from "../public-network.ts";
import { startSimCloudServer, type SimCloudServer } from "../server.ts";
import { readyNetwork, waitFor, type ReadyNetwork } from "../test-support.ts";
import type { LoadBalancer, SecurityGroupRule } from "../types.ts";
import { clusterPki, controlPlaneLoadBalancer, endpointOf, initData, joinData, kubectl, launchControlPlane, writeKubeconfig } from "./test-support.ts";

const WEST = "sim-west-1";
const dir = mkdtempSync(join(tmpdir(), "slipway-public-join-"));
let a: SimCloudServer;
let b: SimCloudServer;
let netA: ReadyNetwork;
let netB: ReadyNetwork;
let lb: LoadBalancer;
let pki: ClusterPki;
const ownNetwork: SecurityGroupRule = { direction: "ingress", protocol: "all", fromPort: 0, toPort: 65535, cidr: "10.0.0.0/16" };

before(async () => {
  // Time runs a hundred times faster: kubeadm's 5-minute discovery timeout takes 3 s.
  a = await startSimCloudServer({ port: 0, profile: "instant", seed: 21, timeScale: 0.01, publicRange: "203.0.113.0/24" });
  b = await startSimCloudServer({ port: 0, profile: "instant", seed: 22, timeScale: 0.01, publicRange: "198.51.100.0/24", peers: [a.url] });
  netA = await readyNetwork(a.cloud);
  netB = await readyNetwork(b.cloud, { region: WEST });
  // Cloud A's nodes admit their own network only: nothing of cloud B's.
  await a.cloud.setSecurityGroupRules("sim-east-1", netA.securityGroup.id, [ownNetwork]);
  lb = await controlPlaneLoadBalancer(a.cloud, netA, "across");
  pki = await clusterPki();
  await launchControlPlane(a.cloud, netA, lb, initData(lb, pki, "across-cp-0"));
  await waitFor(async () => (await a.cloud.getLoadBalancer("sim-east-1", lb.id)).targets[0]?.health === "healthy", "the control plane serving");
});

after(async () => {
  await b?.close();
  await a?.close();
  rmSync(dir, { recursive: true, force: true });
});

function worker(name: string) {
  return b.cloud.createInstance(WEST, {
    subnetId: netB.subnet.id,
    machineType: "s1.medium",
    imageId: netB.imageId,
    securityGroupIds: [netB.securityGroup.id],
    assignPublicIp: true,
    userData: joinData(lb, pki, { name }),
  });
}

async function bootLog(id: string, pattern: RegExp, timeoutMs = 8000): Promise<string[]> {
  return waitFor(async () => {
    const log = (await b.cloud.getInstance(WEST, id)).bootLog;
    return log.some((line) => pattern.test(line)) ? log : undefined;
  }, `a boot log line matching ${pattern} on ${id}`, timeoutMs);
}

describe("kubeadm join across clouds", () => {
  it("admits TCP on a port from an address inside a rule's range only", () => {
    const rule: SecurityGroupRule = { direction: "ingress", protocol: "tcp", fromPort: 6443, toPort: 6443, cidr: "198.51.100.7/32" };
    assert.ok(admits([rule], "198.51.100.7", 6443));
    assert.ok(!admits([rule], "198.51.100.8", 6443));
    assert.ok(!admits([rule], "198.51.100.7", 10250));
    assert.ok(!admits([{ ...rule, direction: "egress" }], "198.51.100.7", 6443));
    assert.ok(admits([ownNetwork, { ...rule, protocol: "all", fromPort: 0, toPort: 65535, cidr: "0.0.0.0/0" }], "192.0.2.1", 2379));
  });

  it("times out on an endpoint whose security group does not admit the machine, and fails naming it when discovery gives up", async () => {
    const blocked = await worker("blocked-0");
    assert.match(blocked.publicIp ?? "", /^198\.51\.100\./);
    const endpoint = endpointOf(lb);
    const retrying = await bootLog(blocked.id, /\[discovery\] Failed to request cluster-info, will try again/);
    assert.ok(retrying.some((line) => line.includes(`dial tcp ${endpoint}: i/o timeout`)), retrying.join("\n"));
    const failed = await bootLog(blocked.id, /couldn't validate the identity of the API Server/);
    assert.ok(failed.some((line) => line.includes(`https://${endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info`) && line.includes("i/o timeout")), failed.join("\n"));
  });

  it("joins once the security group admits the machine's public address on the API port, and its node is in cloud A's cluster", async () => {
    const admitted = await worker("admitted-0");
    await bootLog(admitted.id, /\[discovery\] Failed to request cluster-info, will try again/);
    await a.cloud.setSecurityGroupRules("sim-east-1", netA.securityGroup.id, [
      ownNetwork,
      { direction: "ingress", protocol: "tcp", fromPort: 6443, toPort: 6443, cidr: `${admitted.publicIp}/32` },
    ]);
    await bootLog(admitted.id, /This node has joined the cluster/);
    const kubeconfig = await writeKubeconfig(dir, lb, pki.ca);
    const nodes = await kubectl(kubeconfig, ["get", "nodes", "-o", "custom-columns=NAME:.metadata.name,PROVIDER:.spec.providerID,EXTERNAL:.status.addresses[?(@.type=='ExternalIP')].address", "--no-headers"]);
    assert.equal(nodes.code, 0, nodes.stderr);
    assert.match(nodes.stdout, new RegExp(`^admitted-0\\s+sim://${WEST}/${admitted.id}\\s+${admitted.publicIp!.replaceAll(".", "\\.")}$`, "m"));
    assert.doesNotMatch(nodes.stdout, /blocked-0/);
  });
});
