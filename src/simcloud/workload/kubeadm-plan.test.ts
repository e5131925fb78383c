import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { KUBEADM_CONFIG_PATH, LOCAL_IPV4, PUBLIC_IPV4, initBootstrap, initUserData, joinUserData, nodeAddressesCommand, renderUserData } from "../../bootstrap/cloudinit.ts";
import type { ClusterPki } from "../../bootstrap/kubeadm.ts";
import { caCertHash } from "../../bootstrap/pki.ts";
import { imagesOf } from "../catalog.ts";
import type { Image } from "../types.ts";
import { bootOutcome, type MachineFacts } from "./kubeadm-plan.ts";
import { nodeLabelsOf } from "./kubeadm-steps.ts";
import { clusterPki } from "./test-support.ts";

const REGION = "sim-east-1";
const image = (name: string): Image => imagesOf(REGION).find((i) => i.name === name)!;
const medium: MachineFacts = { vcpus: 2, memoryMiB: 4096, image: image("ubuntu-22.04") };
const ENDPOINT = "api.example:6443";
const TOKEN = "abcdef.0123456789abcdef";

const init = (version = "v1.31.2") => ({
  clusterName: "demo",
  kubernetesVersion: version,
  controlPlaneEndpoint: ENDPOINT,
  podSubnet: "10.244.0.0/16",
  serviceSubnet: "10.96.0.0/12",
  dnsDomain: "cluster.local",
  bootstrapToken: TOKEN,
  node: { name: "demo-cp-0", labels: { "slipway.dev/cluster": "demo" } },
});

/** The user data with `edit` applied to its text (a command added, a package changed, …). */
function edited(userData: string, edit: (text: string) => string): string {
  const text = edit(userData);
  assert.notEqual(text, userData, "the edit changed something");
  return text;
}

/** The kubeadm preflight lines of a failed outcome. */
function errorsOf(outcome: ReturnType<typeof bootOutcome>): string[] {
  assert.ok(outcome.failure, `kubeadm refused: ${JSON.stringify(outcome.output)}`);
  return outcome.failure.lines;
}

describe("kubeadm on a sim cloud machine", () => {
  let pki: ClusterPki;
  before(async () => {
    pki = await clusterPki();
  });

  it("runs Slipway's user data: containerd and the cluster's kubelet and kubeadm installed, every preflight check passed", () => {
    const outcome = bootOutcome(initUserData(init(), pki), medium);
    assert.equal(outcome.failure, undefined, outcome.failure?.message);
    assert.equal(outcome.plan?.command, "init");
    assert.deepEqual(outcome.plan?.software, { kubeletVersion: "v1.31.2", containerRuntime: "containerd://1.7.12" });
    assert.deepEqual(outcome.plan?.warnings, []);
    assert.equal(outcome.plan?.kubeletFailure, undefined);
    assert.equal(outcome.setup?.installed.get("kubeadm"), "1.31.2-1.1");
    const join = bootOutcome(joinUserData({ kubernetesVersion: "v1.30.4", controlPlaneEndpoint: ENDPOINT, bootstrapToken: TOKEN, caCertHashes: [caCertHash(pki.ca.certPem)], node: { name: "w-0" } }), { ...medium, vcpus: 1 });
    assert.equal(join.failure, undefined, "a worker may have one CPU");
    assert.equal(join.plan?.software.kubeletVersion, "v1.30.4");
  });

  it("joins a node under the machine's host name when the configuration names none, as kubeadm does", () => {
    const userData = joinUserData({ kubernetesVersion: "v1.31.2", controlPlaneEndpoint: ENDPOINT, bootstrapToken: TOKEN, caCertHashes: [caCertHash(pki.ca.certPem)], node: { labels: { tier: "asg" } } });
    assert.equal(bootOutcome(userData, { ...medium, hostname: "i-0123456789abcdef0" }).plan?.node.name, "i-0123456789abcdef0");
    assert.match(bootOutcome(userData, medium).failure?.message ?? "", /nodeRegistration\.name: Required value/, "no host name and no name: refused");
  });

  it("refuses a control plane with fewer than 2 CPUs or 1700 MB of memory, as kubeadm's preflight reads", () => {
    const lines = errorsOf(bootOutcome(initUserData(init(), pki), { ...medium, vcpus: 1, memoryMiB: 1024 }));
    assert.equal(lines[0], "error execution phase preflight: [preflight] Some fatal errors occurred:");
    assert.ok(lines.includes("\t[ERROR NumCPU]: the number of available CPUs 1 is less than the required 2"), lines.join("\n"));
    assert.ok(lines.includes("\t[ERROR Mem]: the system RAM (1024 MB) is less than the minimum 1700 MB"), lines.join("\n"));
    const ignored = bootOutcome(edited(initUserData(init(), pki), (t) => t.replace("kubeadm init --config", "kubeadm init --ignore-preflight-errors=NumCPU,Mem --config")), { ...medium, vcpus: 1, memoryMiB: 1024 });
    assert.equal(ignored.failure, undefined);
    assert.deepEqual(ignored.plan?.warnings, ["[WARNING NumCPU]: the number of available CPUs 1 is less than the required 2", "[WARNING Mem]: the system RAM (1024 MB) is less than the minimum 1700 MB"]);
  });

  it("refuses ports in use, IP forwarding off, and a worker that already has a CA file", () => {
    const haproxy = edited(initUserData(init(), pki), (t) =>
      t.replace("runcmd:\n", "runcmd:\n  - systemctl enable --now haproxy\n").replace("write_files:\n", "write_files:\n  - path: /etc/haproxy/haproxy.cfg\n    content: |\n      frontend api\n        bind *:6443\n"),
    );
    assert.ok(errorsOf(bootOutcome(haproxy, medium)).includes("error execution phase preflight: [ERROR Port-6443]: Port 6443 is in use"));
    const noForward = edited(initUserData(init(), pki), (t) => t.replace("  - sysctl --system\n", ""));
    assert.ok(errorsOf(bootOutcome(noForward, medium)).includes("error execution phase preflight: [ERROR FileContent--proc-sys-net-ipv4-ip_forward]: /proc/sys/net/ipv4/ip_forward contents are not set to 1"));
    const worker = joinUserData({ kubernetesVersion: "v1.31.2", controlPlaneEndpoint: ENDPOINT, bootstrapToken: TOKEN, caCertHashes: [caCertHash(pki.ca.certPem)], node: { name: "w-0" } });
    const withCa = edited(worker, (t) => t.replace("write_files:\n", `write_files:\n  - path: /etc/kubernetes/pki/ca.crt\n    content: x\n`));
    assert.ok(errorsOf(bootOutcome(withCa, medium)).some((l) => l.includes("[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]: /etc/kubernetes/pki/ca.crt already exists")));
  });

  it("warns of swap, after which the kubelet refuses to start unless told not to fail on it", () => {
    const swap = edited(initUserData(init(), pki), (t) => t.replace("  - swapoff -a\n", "  - fallocate -l 1G /swapfile && mkswap /swapfile && swapon /swapfile\n"));
    const outcome = bootOutcome(swap, medium);
    assert.equal(outcome.failure, undefined, "swap is a warning for kubeadm's preflight");
    assert.deepEqual(outcome.plan?.warnings, ["[WARNING Swap]: swap is enabled; production deployments should disable swap unless testing the NodeSwap feature gate of the kubelet"]);
    assert.match(outcome.plan?.kubeletFailure ?? "", /running with swap on is not supported, please disable swap or set --fail-swap-on flag to false/);
    const tolerated = edited(swap, (t) => t.replace(/( {4}content: \|\n {6}apiVersion: kubeadm\.k8s\.io\/v1beta4\n {6}kind: InitConfiguration)/, "    content: |\n      apiVersion: kubelet.config.k8s.io/v1beta1\n      kind: KubeletConfiguration\n      failSwapOn: false\n      ---\n      apiVersion: kubeadm.k8s.io/v1beta4\n      kind: InitConfiguration"));
    assert.equal(bootOutcome(tolerated, medium).plan?.kubeletFailure, undefined);
  });

  it("runs no kubeadm when nothing installed it, and reports what apt refused", () => {
    const bare = `#cloud-config\nruncmd:\n  - kubeadm init --config ${KUBEADM_CONFIG_PATH}\n`;
    const none = bootOutcome(bare, medium);
    assert.equal(none.plan, undefined);
    assert.equal(none.failure, undefined);
    assert.deepEqual(none.output, ["/var/lib/cloud/instance/scripts/runcmd: 2: kubeadm: not found"]);
    const unsigned = bootOutcome(edited(initUserData(init(), pki), (t) => t.replace(/\n\s+keyid: \S+/, "")), medium);
    assert.equal(unsigned.command, undefined, "kubeadm never ran");
    assert.ok(unsigned.output.includes("W: GPG error: https://pkgs.k8s.io/core:/stable:/v1.31/deb/ InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY 234654DA9A296436"), unsigned.output.join("\n"));
    assert.ok(unsigned.output.includes("E: Unable to locate package kubelet"));
    const missing = bootOutcome(edited(initUserData(init(), pki), (t) => t.replaceAll("=1.31.2-*", "=1.31.99-*")), medium);
    assert.ok(missing.output.includes("E: Version '1.31.99-*' for 'kubelet' was not found"), missing.output.join("\n"));
  });

  it("runs the software an image carries, whose catalogue entry says so", () => {
    const baked = image("ubuntu-22.04-kube-v1.31.2");
    assert.deepEqual(baked.kubernetes, { version: "v1.31.2", containerRuntime: "containerd://1.7.22" });
    assert.equal(image("ubuntu-22.04").kubernetes, undefined);
    const onlyKubeadm = edited(initUserData(init(), pki), (t) => t.replace(/apt:[\s\S]*?write_files:/, "write_files:").replace(/runcmd:\n[\s\S]*?( {2}- kubeadm init)/, "runcmd:\n$1"));
    assert.equal(bootOutcome(onlyKubeadm, medium).command, undefined, "nothing on a plain image runs kubeadm");
    const outcome = bootOutcome(onlyKubeadm, { ...medium, image: baked });
    assert.equal(outcome.failure, undefined, outcome.failure?.message);
    assert.deepEqual(outcome.plan?.software, { kubeletVersion: "v1.31.2", containerRuntime: "containerd://1.7.22" });
  });

  it("refuses versions kubeadm and the kubelet cannot run together", () => {
    // kubeadm 1.32 may deploy a 1.31 control plane, but not next to a kubelet newer than it.
    const newerKubelet = edited(initUserData(init("v1.32.0"), pki), (t) => t.replace("      kubernetesVersion: v1.32.0", "      kubernetesVersion: v1.31.2"));
    assert.ok(
      errorsOf(bootOutcome(newerKubelet, medium)).includes(
        'error execution phase preflight: [ERROR KubeletVersion]: the kubelet version is higher than the control plane version. This is not a supported version skew and may lead to a malfunctional cluster. Kubelet version: "1.32.0" Control plane version: "1.31.2"',
      ),
    );
    const older = edited(initUserData(init(), pki), (t) => t.replaceAll("1.31.2-*", "1.30.4-*").replace("v1.31/deb", "v1.30/deb"));
    assert.ok(errorsOf(bootOutcome(older, medium)).includes("error execution phase preflight: [ERROR KubernetesVersion]: Kubernetes version is greater than kubeadm version. Please consider to upgrade kubeadm. Kubernetes version: 1.31.2. Kubeadm version: 1.30.x"));
  });

  it("reads the kubeadm configuration strictly against v1beta4, naming an unknown field", () => {
    const unknown = edited(initUserData(init(), pki), (t) => t.replace("      nodeRegistration:\n", "      nodeRegistration:\n        nonsense: true\n"));
    const lines = errorsOf(bootOutcome(unknown, medium));
    assert.equal(lines[0], 'error execution phase preflight: [ERROR Config]: error unmarshaling configuration schema.GroupVersionKind{Group:"kubeadm.k8s.io", Version:"v1beta4", Kind:"InitConfiguration"}: strict decoding error: unknown field "nodeRegistration.nonsense"');
    const old = edited(initUserData(init(), pki), (t) => t.replaceAll("kubeadm.k8s.io/v1beta4", "kubeadm.k8s.io/v1beta3"));
    assert.match(errorsOf(bootOutcome(old, medium))[0]!, /uses an old or unsupported API version "kubeadm\.k8s\.io\/v1beta3"/);
    const wrongType = edited(initUserData(init(), pki), (t) => t.replace("bindPort: 6443", "bindPort: api").replace("      nodeRegistration:\n", "      localAPIEndpoint:\n        bindPort: api\n      nodeRegistration:\n"));
    assert.match(errorsOf(bootOutcome(wrongType, medium))[0]!, /localAPIEndpoint\.bindPort: Invalid value: "api"/);
  });

  it("lets the kubelet register only labels outside the kubernetes.io namespaces it may not set", () => {
    const plan = (value: string) => ({ node: { name: "n", kubeletExtraArgs: [{ name: "node-labels", value }] } }) as Parameters<typeof nodeLabelsOf>[0];
    assert.deepEqual(nodeLabelsOf(plan("slipway.dev/pool=a,node.kubernetes.io/instance-type=x")), { labels: { "slipway.dev/pool": "a", "node.kubernetes.io/instance-type": "x" } });
    const refused = nodeLabelsOf(plan("node-role.kubernetes.io/worker="));
    assert.match("error" in refused ? refused.error : "", /unknown 'kubernetes\.io' or 'k8s\.io' labels specified with --node-labels: \[node-role\.kubernetes\.io\/worker\]/);
  });

  it("fills the machine's addresses in from the instance metadata, and stops before kubeadm when it has no public address", () => {
    const bootstrap = initBootstrap({ ...init(), certSANs: [PUBLIC_IPV4], advertiseAddress: LOCAL_IPV4, node: { ...init().node, nodeIp: LOCAL_IPV4 } }, pki);
    const userData = renderUserData({ ...bootstrap, before: [nodeAddressesCommand()] });
    const outcome = bootOutcome(userData, { ...medium, metadata: { localIpv4: "10.0.1.5", publicIpv4: "203.0.113.7" } });
    assert.equal(outcome.failure, undefined, outcome.failure?.message);
    const plan = outcome.plan as Extract<typeof outcome.plan, { command: "init" }>;
    assert.deepEqual(plan.certSANs, ["203.0.113.7"]);
    assert.equal(plan.advertiseAddress, "10.0.1.5");
    assert.deepEqual(plan.node.kubeletExtraArgs?.find((a) => a.name === "node-ip"), { name: "node-ip", value: "10.0.1.5" });
    assert.equal(plan.kubeletFailure, undefined);

    const without = bootOutcome(userData, { ...medium, metadata: { localIpv4: "10.0.1.5" } });
    assert.equal(without.command, undefined, "kubeadm never runs");
    assert.ok(without.output.includes("slipway-node-addresses: error: the instance metadata has no public-ipv4 (the instance was launched without a public address)"), without.output.join("\n"));

    // Not filled in at all: kubeadm names the field it cannot use.
    const unfilled = bootOutcome(renderUserData(bootstrap), medium);
    assert.ok(errorsOf(unfilled).some((l) => l.includes(`localAPIEndpoint.advertiseAddress: Invalid value: "${LOCAL_IPV4}"`)), unfilled.failure?.message);
  });

  it("starts no kubelet whose --node-ip the machine does not hold, as its public address behind the cloud's NAT", () => {
    const joinData = joinUserData({ kubernetesVersion: "v1.31.2", controlPlaneEndpoint: ENDPOINT, bootstrapToken: TOKEN, caCertHashes: [caCertHash(pki.ca.certPem)], node: { name: "w-0", nodeIp: "203.0.113.9" } });
    const outcome = bootOutcome(joinData, { ...medium, metadata: { localIpv4: "10.0.1.6", publicIpv4: "203.0.113.9" } });
    assert.match(outcome.plan?.kubeletFailure ?? "", /failed to validate nodeIP: node IP: \\"203\.0\.113\.9\\" not found in the host's network interfaces/);
  });
});
