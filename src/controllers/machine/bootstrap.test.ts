import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { KUBEADM_CONFIG_PATH, LOCAL_IPV4, PUBLIC_IPV4, nodeAddressesCommand } from "../../bootstrap/cloudinit.ts";
import type { ClusterPki } from "../../bootstrap/kubeadm.ts";
import { readCloudConfig } from "../../simcloud/workload/cloud-init.ts";
import { readKubeadmConfig } from "../../simcloud/workload/kubeadm-config.ts";
import { caCertHash } from "../../bootstrap/pki.ts";
import { clusterPki } from "../../simcloud/workload/test-support.ts";
import { ANNOTATION_BOOTSTRAP } from "../../api/slipway/machine.ts";
import { renderBootstrapData } from "./bootstrap.ts";

const TOKEN = "abcdef.0123456789abcdef";
const ENDPOINT = { host: "demo-lb.sim-east-1.sim.internal", port: 6443 };

const cluster: ClusterObject = {
  apiVersion: "slipway.dev/v1alpha1",
  kind: "Cluster",
  metadata: { name: "demo", namespace: "default", uid: "c-1" },
  spec: {
    kubernetesVersion: "v1.30.4",
    controlPlane: { connection: "east", machineType: "s1.medium" },
    network: { podCIDR: "10.32.0.0/16", serviceCIDR: "10.100.0.0/16", serviceDomain: "demo.local" },
  },
};

const pool: MachinePoolObject = {
  apiVersion: "slipway.dev/v1alpha1",
  kind: "MachinePool",
  metadata: { name: "demo-gpu", namespace: "default", uid: "p-1" },
  spec: {
    clusterName: "demo",
    connection: "east",
    machineType: "s1.large",
    labels: { "example.com/accelerator": "gpu" },
    taints: [{ key: "example.com/gpu", value: "true", effect: "NoSchedule" }],
  },
};

/** The user data as a machine reads it: its files, its packages, its kubeadm command and configuration (strictly). */
function readKubeadmBootstrap(userData: string) {
  const cloud = readCloudConfig(userData)!;
  const command = cloud.commands.find((c) => c.startsWith("kubeadm "))!;
  return { command: command.split(" ")[1], files: cloud.files, packages: cloud.packages, config: readKubeadmConfig(cloud.files.get(KUBEADM_CONFIG_PATH)!) };
}

function machine(name: string, role: "control-plane" | "worker", extra: Partial<MachineObject["metadata"]> = {}, poolName?: string): MachineObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: { name, namespace: "default", uid: `${name}-uid`, ...extra },
    spec: { clusterName: "demo", role, connection: "east", machineType: "s1.medium", ...(poolName ? { pool: poolName } : {}) },
  };
}

describe("bootstrap data", () => {
  let pki: ClusterPki;
  before(async () => {
    pki = await clusterPki();
  });

  it("initialises the cluster on the machine annotated for it, with a token for a day, as kubeadm makes it", () => {
    const data = renderBootstrapData({ machine: machine("demo-cp-0", "control-plane", { annotations: { [ANNOTATION_BOOTSTRAP]: "init" } }), cluster, endpoint: ENDPOINT, pki, token: TOKEN });
    const boot = readKubeadmBootstrap(data);
    assert.equal(boot.command, "init");
    assert.deepEqual(boot.packages, ["containerd", "kubelet=1.30.4-*", "kubeadm=1.30.4-*", "kubectl=1.30.4-*"]);
    assert.equal(boot.config.cluster?.controlPlaneEndpoint, "demo-lb.sim-east-1.sim.internal:6443");
    assert.equal(boot.config.cluster?.kubernetesVersion, "v1.30.4");
    assert.deepEqual(boot.config.cluster?.networking, { podSubnet: "10.32.0.0/16", serviceSubnet: "10.100.0.0/16", dnsDomain: "demo.local" });
    assert.equal(boot.config.init?.bootstrapTokens?.[0]?.token, TOKEN);
    assert.equal(boot.config.init?.bootstrapTokens?.[0]?.ttl, "24h0m0s");
    assert.equal(boot.config.init?.nodeRegistration?.name, "demo-cp-0");
    assert.equal(boot.files.get("/etc/kubernetes/pki/ca.key"), pki.ca.keyPem);
  });

  it("puts the API's internal name in the certificate and joins machines through it, when the endpoint has one", () => {
    const endpoint = { host: "api.demo.sim-east-1.sim.slipway.internal", internalHost: "api-int.demo.sim-east-1.sim.slipway.internal", port: 6443 };
    const init = readKubeadmBootstrap(renderBootstrapData({ machine: machine("demo-cp-0", "control-plane", { annotations: { [ANNOTATION_BOOTSTRAP]: "init" } }), cluster, endpoint, pki, token: TOKEN }));
    assert.equal(init.config.cluster?.controlPlaneEndpoint, "api.demo.sim-east-1.sim.slipway.internal:6443");
    assert.deepEqual(init.config.cluster?.apiServer?.certSANs, ["api-int.demo.sim-east-1.sim.slipway.internal"]);
    const join = readKubeadmBootstrap(renderBootstrapData({ machine: machine("demo-w-0", "worker"), cluster, endpoint, pki, token: TOKEN }));
    assert.equal(join.config.join?.discovery?.bootstrapToken?.apiServerEndpoint, "api-int.demo.sim-east-1.sim.slipway.internal:6443");
    const plain = readKubeadmBootstrap(renderBootstrapData({ machine: machine("demo-cp-0", "control-plane", { annotations: { [ANNOTATION_BOOTSTRAP]: "init" } }), cluster, endpoint: ENDPOINT, pki, token: TOKEN }));
    assert.equal(plain.config.cluster?.apiServer, undefined, "no further names without one");
  });

  it("joins further control-plane machines with the shared PKI, pinned to the cluster CA", () => {
    const data = renderBootstrapData({ machine: machine("demo-cp-1", "control-plane"), cluster, endpoint: ENDPOINT, pki, token: TOKEN });
    const boot = readKubeadmBootstrap(data);
    assert.equal(boot.command, "join");
    assert.deepEqual(boot.packages, ["containerd", "kubelet=1.30.4-*", "kubeadm=1.30.4-*", "kubectl=1.30.4-*"], "joining machines install the cluster's version too");
    assert.ok(boot.config.join?.controlPlane);
    assert.deepEqual(boot.config.join?.discovery.bootstrapToken?.caCertHashes, [caCertHash(pki.ca.certPem)]);
    assert.equal(boot.config.join?.discovery.bootstrapToken?.apiServerEndpoint, "demo-lb.sim-east-1.sim.internal:6443");
    assert.equal(boot.files.get("/etc/kubernetes/pki/ca.key"), pki.ca.keyPem);
  });

  it("joins workers without any private key, with the pool's labels and taints", () => {
    const data = renderBootstrapData({ machine: machine("demo-gpu-0", "worker", {}, "demo-gpu"), cluster, endpoint: ENDPOINT, pki, token: TOKEN, pool });
    const boot = readKubeadmBootstrap(data);
    assert.equal(boot.command, "join");
    assert.equal(boot.config.join?.controlPlane, undefined);
    assert.ok(![...boot.files.keys()].some((path) => path.startsWith("/etc/kubernetes/pki/")), "a worker carries no cluster PKI");
    assert.ok(!data.includes(pki.ca.keyPem.split("\n")[1]!), "the CA key appears nowhere in a worker's user data");
    assert.deepEqual(boot.config.join?.nodeRegistration?.kubeletExtraArgs, [{ name: "node-labels", value: "example.com/accelerator=gpu,slipway.dev/cluster=demo,slipway.dev/pool=demo-gpu" }]);
    assert.deepEqual(boot.config.join?.nodeRegistration?.taints, [{ key: "example.com/gpu", value: "true", effect: "NoSchedule" }]);
  });

  it("where the machine gets a public address, fills its addresses in at boot: node-ip private, the control plane advertising its private address with its public one in the certificate", () => {
    const endpoint = { host: "api.demo.sim-east-1.sim.slipway.internal", internalHost: "api-int.demo.sim-east-1.sim.slipway.internal", port: 6443 };
    const initData = renderBootstrapData({ machine: machine("demo-cp-0", "control-plane", { annotations: { [ANNOTATION_BOOTSTRAP]: "init" } }), cluster, endpoint, pki, token: TOKEN, publicAddress: true });
    const commands = readCloudConfig(initData)!.commands;
    assert.equal(commands.indexOf(nodeAddressesCommand()), commands.findIndex((c) => c.startsWith("kubeadm ")) - 1, "the addresses are filled in just before kubeadm runs");
    const init = readKubeadmBootstrap(initData).config;
    assert.deepEqual(init.cluster?.apiServer?.certSANs, ["api-int.demo.sim-east-1.sim.slipway.internal", PUBLIC_IPV4]);
    assert.equal(init.init?.localAPIEndpoint?.advertiseAddress, LOCAL_IPV4);
    assert.deepEqual(init.init?.nodeRegistration?.kubeletExtraArgs?.find((a) => a.name === "node-ip"), { name: "node-ip", value: LOCAL_IPV4 });

    const joining = readCloudConfig(renderBootstrapData({ machine: machine("demo-cp-1", "control-plane"), cluster, endpoint, pki, token: TOKEN, publicAddress: true, takeTurn: true }))!;
    assert.deepEqual(joining.commands.slice(-3).map((c) => c.split(" ")[0]), ["slipway-node-addresses", "slipway-join-turn", "kubeadm"], "the turn reads the configuration once it is filled in");
    assert.equal(readKubeadmConfig(joining.files.get(KUBEADM_CONFIG_PATH)!).join?.controlPlane?.localAPIEndpoint?.advertiseAddress, LOCAL_IPV4);

    const worker = readKubeadmBootstrap(renderBootstrapData({ machine: machine("demo-gpu-0", "worker", {}, "demo-gpu"), cluster, endpoint, pki, token: TOKEN, pool, publicAddress: true })).config;
    assert.deepEqual(worker.join?.nodeRegistration?.kubeletExtraArgs, [
      { name: "node-labels", value: "example.com/accelerator=gpu,slipway.dev/cluster=demo,slipway.dev/pool=demo-gpu" },
      { name: "node-ip", value: LOCAL_IPV4 },
    ]);
    assert.equal(worker.join?.controlPlane, undefined);

    const plain = renderBootstrapData({ machine: machine("demo-w-0", "worker"), cluster, endpoint, pki, token: TOKEN });
    assert.ok(!plain.includes("slipway-node-addresses") && !plain.includes("ds.meta_data"), "a machine without a public address keeps kubeadm's own choice");
  });
});
