import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parse, parseAllDocuments } from "yaml";
import { createCertificateAuthority, caCertHash, createServiceAccountKeyPair } from "./pki.ts";
import { bootstrapSecretValue, initBootstrap, initUserData, joinUserData, renderUserData, CloudInitError, KUBEADM_CONFIG_PATH, KUBERNETES_APT_KEY } from "./cloudinit.ts";
import type { ClusterPki } from "./kubeadm.ts";

async function pki(): Promise<ClusterPki> {
  return {
    ca: await createCertificateAuthority({ commonName: "kubernetes" }),
    frontProxyCa: await createCertificateAuthority({ commonName: "front-proxy-ca" }),
    etcdCa: await createCertificateAuthority({ commonName: "etcd-ca" }),
    serviceAccount: await createServiceAccountKeyPair(),
  };
}

interface Document {
  apt: { sources: Record<string, { source: string; keyid: string }> };
  package_update: boolean;
  packages: string[];
  write_files: { path: string; content: string; permissions: string }[];
  runcmd: string[];
}

function read(userData: string): { doc: Document; files: Map<string, string>; kubeadm: Record<string, unknown>[] } {
  assert.ok(userData.startsWith("#cloud-config\n"));
  const doc = parse(userData) as Document;
  const files = new Map(doc.write_files.map((f) => [f.path, f.content]));
  const kubeadm = parseAllDocuments(files.get(KUBEADM_CONFIG_PATH) ?? "").map((d) => d.toJSON() as Record<string, unknown>);
  return { doc, files, kubeadm };
}

const init = {
  clusterName: "demo",
  kubernetesVersion: "v1.31.2",
  controlPlaneEndpoint: "lb.example:6443",
  podSubnet: "10.244.0.0/16",
  serviceSubnet: "10.96.0.0/12",
  dnsDomain: "cluster.local",
  bootstrapToken: "abcdef.0123456789abcdef",
  node: { name: "demo-cp-0", labels: { "slipway.dev/cluster": "demo" } },
};

describe("cloud-init user data", () => {
  it("installs containerd and kubelet, kubeadm and kubectl pinned to the cluster's version from its minor's repository, held", async () => {
    const p = await pki();
    const { doc } = read(initUserData({ ...init, kubernetesVersion: "v1.30.4" }, p));
    assert.deepEqual(doc.apt.sources, { "kubernetes.list": { source: "deb [signed-by=$KEY_FILE] https://pkgs.k8s.io/core:/stable:/v1.30/deb/ /", keyid: KUBERNETES_APT_KEY } });
    assert.equal(doc.package_update, true);
    assert.deepEqual(doc.packages, ["containerd", "kubelet=1.30.4-*", "kubeadm=1.30.4-*", "kubectl=1.30.4-*"]);
    const commands = doc.runcmd;
    assert.ok(commands.includes("apt-mark hold kubelet kubeadm kubectl"));
    for (const step of ["swapoff -a", "sysctl --system", "systemctl restart containerd"]) {
      assert.ok(commands.indexOf(step) >= 0 && commands.indexOf(step) < commands.length - 1, `${step} runs before kubeadm`);
    }
    assert.equal(commands[commands.length - 1], `kubeadm init --config ${KUBEADM_CONFIG_PATH}`);
    assert.throws(() => initUserData({ ...init, kubernetesVersion: "1.31" }, p), CloudInitError);
  });

  it("carries kubeadm init with the cluster PKI, and the node's labels as the kubelet's --node-labels", async () => {
    const p = await pki();
    const { files, kubeadm } = read(initUserData(init, p));
    assert.equal(files.get("/etc/kubernetes/pki/ca.crt"), p.ca.certPem);
    assert.match(files.get("/etc/sysctl.d/99-kubernetes.conf") ?? "", /^net\.ipv4\.ip_forward = 1$/m);
    const initConfig = kubeadm.find((d) => d.kind === "InitConfiguration") as { nodeRegistration: Record<string, unknown>; bootstrapTokens: { token: string }[] };
    assert.equal(initConfig.bootstrapTokens[0]?.token, "abcdef.0123456789abcdef");
    assert.deepEqual(initConfig.nodeRegistration, { name: "demo-cp-0", kubeletExtraArgs: [{ name: "node-labels", value: "slipway.dev/cluster=demo" }] });
    const cluster = kubeadm.find((d) => d.kind === "ClusterConfiguration") as { controlPlaneEndpoint: string; networking: { podSubnet: string } };
    assert.equal(cluster.controlPlaneEndpoint, "lb.example:6443");
    assert.equal(cluster.networking.podSubnet, "10.244.0.0/16");
  });

  it("gives joining workers the discovery data but not the PKI", async () => {
    const p = await pki();
    const join = { kubernetesVersion: "v1.31.2", controlPlaneEndpoint: "lb.example:6443", bootstrapToken: "abcdef.0123456789abcdef", caCertHashes: [caCertHash(p.ca.certPem)], node: { name: "w-0" } };
    const worker = read(joinUserData(join, p));
    const config = worker.kubeadm[0] as { kind: string; discovery: { bootstrapToken: { caCertHashes: string[] } }; controlPlane?: unknown };
    assert.equal(config.kind, "JoinConfiguration");
    assert.deepEqual(config.discovery.bootstrapToken.caCertHashes, [caCertHash(p.ca.certPem)]);
    assert.ok(![...worker.files.keys()].some((path) => path.startsWith("/etc/kubernetes/pki/")), "workers never receive the PKI");
    assert.equal(worker.doc.runcmd[worker.doc.runcmd.length - 1], `kubeadm join --config ${KUBEADM_CONFIG_PATH}`);
    const cp = read(joinUserData({ ...join, controlPlane: {} }, p));
    assert.equal(cp.files.get("/etc/kubernetes/pki/ca.key"), p.ca.keyPem);
    assert.ok((cp.kubeadm[0] as { controlPlane?: unknown }).controlPlane);
  });

  it("keeps the token and keys out of the user data when they are in a secret, which holds them as files", async () => {
    const p = await pki();
    const bootstrap = initBootstrap(init, p);
    const userData = renderUserData(bootstrap, { id: "secret-0123456789abcdef0", region: "sim-east-1", endpoint: "http://127.0.0.1:7480" });
    const { doc, files } = read(userData);
    assert.deepEqual(doc.runcmd.slice(-2), ["slipway-bootstrap-fetch --secret-id secret-0123456789abcdef0 --region sim-east-1 --endpoint http://127.0.0.1:7480", `kubeadm init --config ${KUBEADM_CONFIG_PATH}`]);
    assert.ok(![...files.keys()].some((path) => path.startsWith("/etc/kubernetes/") || path === KUBEADM_CONFIG_PATH), [...files.keys()].join(", "));
    assert.ok(!userData.includes(init.bootstrapToken) && !userData.includes("PRIVATE KEY"));
    const secretFiles = new Map((parse(bootstrapSecretValue(bootstrap)) as { path: string; content: string; permissions: string }[]).map((f) => [f.path, f]));
    assert.equal(secretFiles.get("/etc/kubernetes/pki/ca.key")?.content, p.ca.keyPem);
    assert.equal(secretFiles.get("/etc/kubernetes/pki/ca.key")?.permissions, "0600");
    assert.match(secretFiles.get(KUBEADM_CONFIG_PATH)?.content ?? "", /token: abcdef\.0123456789abcdef/);
    assert.equal(renderUserData(bootstrap), initUserData(init, p), "without a secret the files are inline, as before");
  });
});
