// A cluster served on its own (what the SSH host lab's kubeadm init starts) and `kubeadm join` against it:
// the API answers with the cluster CA's serving certificate and client certificates; a join with the
// right token and CA hash registers a node, a wrong hash or token is refused in kubeadm's words; nodes
// turn Ready once the network plugin's DaemonSet is applied.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCertificateAuthority, caCertHash, issueCertificate } from "../../bootstrap/pki.ts";
import { renderInitConfiguration, renderJoinConfiguration } from "../../bootstrap/kubeadm.ts";
import { request } from "node:https";
import { registeredNode, serveStandaloneCluster, type StandaloneCluster } from "./standalone.ts";
import { renderCniManifest } from "../../bootstrap/cni.ts";
import { eventually } from "../../../test/support/slipway.ts";
import { JoinFailedError, joinStandaloneCluster } from "./standalone-join.ts";
import { joinOutside, outsideEndpoint } from "./outside-join.ts";
import type { JoinPlan } from "./kubeadm-plan.ts";
import type { MachineRecord } from "./records.ts";

const TOKEN = "abcdef.0123456789abcdef";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address ? address.port : 0;
}

describe("a workload cluster served on its own", () => {
  let dir: string;
  let cluster: StandaloneCluster;
  let endpoint: string;
  let caPem: string;
  let admin: { certPem: string; keyPem: string };

  type Listed = { items?: { metadata: { name: string; labels?: Record<string, string> }; spec?: { nodeName?: string }; status?: { phase?: string; conditions?: { type: string; status: string }[] } }[] };

  /** A request as the cluster's admin (a client certificate of the cluster CA), trusting only the cluster CA. */
  function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Listed & Record<string, unknown> }> {
    return new Promise((resolve, reject) => {
      const req = request(`https://${endpoint}${path}`, { method, ca: caPem, cert: admin.certPem, key: admin.keyPem, headers: body ? { "content-type": "application/json" } : {} }, (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Listed & Record<string, unknown> }));
      });
      req.on("error", reject);
      req.end(body ? JSON.stringify(body) : undefined);
    });
  }
  const get = (path: string) => call("GET", path);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "slipway-standalone-"));
    const ca = await createCertificateAuthority({ commonName: "kubernetes" });
    caPem = ca.certPem;
    await mkdir(join(dir, "pki"));
    await writeFile(join(dir, "pki", "ca.crt"), ca.certPem);
    await writeFile(join(dir, "pki", "ca.key"), ca.keyPem);
    const port = await freePort();
    endpoint = `127.0.0.1:${port}`;
    const init = renderInitConfiguration({
      clusterName: "onprem",
      kubernetesVersion: "v1.31.2",
      controlPlaneEndpoint: endpoint,
      podSubnet: "10.244.0.0/16",
      serviceSubnet: "10.96.0.0/12",
      dnsDomain: "cluster.local",
      bootstrapToken: TOKEN,
      node: { name: "cp-0", labels: { "slipway.dev/cluster": "onprem" } },
    });
    await writeFile(join(dir, "init.yaml"), init);
    cluster = await serveStandaloneCluster({ configPath: join(dir, "init.yaml"), address: "127.0.0.1", port, pkiDir: join(dir, "pki") });
    admin = await issueCertificate(ca, { commonName: "kubernetes-admin", organizations: ["system:masters"], usages: ["client"] });
  });
  after(async () => {
    await cluster?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function joinWith(name: string, overrides: { token?: string; hash?: string } = {}): Promise<string> {
    const path = join(dir, `${name}.yaml`);
    await writeFile(path, renderJoinConfiguration({ kubernetesVersion: "v1.31.2", controlPlaneEndpoint: endpoint, bootstrapToken: overrides.token ?? TOKEN, caCertHashes: [overrides.hash ?? caCertHash(caPem)], node: { name } }));
    return joinStandaloneCluster({ configPath: path, address: "127.0.0.1", discoveryTimeoutMs: 2000 });
  }

  it("serves what kubeadm init leaves, to a client certificate of the cluster CA", async () => {
    const nodes = await get("/api/v1/nodes");
    assert.equal(nodes.status, 200);
    assert.deepEqual(nodes.body.items?.map((n) => n.metadata.name), ["cp-0"]);
    assert.equal((await get("/api/v1/namespaces/kube-public/configmaps/cluster-info")).status, 200);
  });

  it("registers a node that joins with the token and the CA hash, and refuses a wrong hash or token", async () => {
    assert.equal(await joinWith("worker-1"), "worker-1");
    await assert.rejects(joinWith("worker-2", { hash: `sha256:${"0".repeat(64)}` }), (e: unknown) => e instanceof JoinFailedError && /none of the public keys .* are pinned/.test(e.message));
    await assert.rejects(joinWith("worker-3", { token: "abcdef.ffffffffffffffff" }), (e: unknown) => e instanceof JoinFailedError && /couldn't validate the identity of the API Server/.test(e.message));
    const names = ((await get("/api/v1/nodes")).body.items ?? []).map((n) => n.metadata.name).sort();
    assert.deepEqual(names, ["cp-0", "worker-1"]);
  });

  it("takes a sim cloud machine joining from outside, with what its cloud says of it; an endpoint outside the reachable ranges is not tried", async () => {
    assert.equal(outsideEndpoint(endpoint, ["127.0.0.0/8"]), true);
    assert.equal(outsideEndpoint(endpoint, ["10.0.0.0/8"]), false);
    assert.equal(outsideEndpoint("api.demo.example:6443", ["0.0.0.0/0"]), false, "a name is not an outside address");
    const machine = { instanceId: "i-0123", region: "sim-east-1", zone: "sim-east-1a", machineType: "s1.small", vcpus: 1, memoryMiB: 2048, privateIp: "10.0.0.5", publicIp: "203.0.113.7" } as MachineRecord;
    const plan = (token: string) =>
      ({ command: "join", endpoint, token, caCertHashes: [caCertHash(caPem)], unsafeSkipCAVerification: false, controlPlane: false, node: { name: "cloud-w-1" }, software: { kubeletVersion: "v1.31.2" } }) as unknown as JoinPlan;
    assert.deepEqual(await joinOutside(machine, plan(TOKEN), "sim://sim-east-1/i-0123"), { joined: true });
    // A token the API server does not know is refused at discovery: kubeadm retries until its discovery timeout.
    assert.deepEqual(await joinOutside(machine, plan("abcdef.ffffffffffffffff"), "sim://sim-east-1/i-0123"), { error: "the server answered 401" });
    const pinned = { ...plan(TOKEN), caCertHashes: [`sha256:${"0".repeat(64)}`] } as JoinPlan;
    const failed = await joinOutside(machine, pinned, "sim://sim-east-1/i-0123");
    assert.match(("failure" in failed ? failed.failure : []).join(""), /none of the public keys .* are pinned/);
    const node = (await get("/api/v1/nodes/cloud-w-1")).body as unknown as { spec: { providerID?: string }; status: { addresses: { type: string; address: string }[]; capacity: Record<string, string> } };
    assert.equal(node.spec.providerID, "sim://sim-east-1/i-0123");
    assert.ok(node.status.addresses.some((a) => a.address === "203.0.113.7"), JSON.stringify(node.status.addresses));
    assert.equal(node.status.capacity.cpu, "1");
  });

  it("turns a node Ready once the network plugin runs there, though its plugin pod was made before its kubelet reported", async () => {
    for (const object of renderCniManifest("calico", { podCIDR: "10.244.0.0/16" }).filter((o) => o.kind === "ConfigMap" || o.kind === "DaemonSet")) {
      const path = object.kind === "DaemonSet" ? "/apis/apps/v1/namespaces/kube-system/daemonsets" : "/api/v1/namespaces/kube-system/configmaps";
      assert.equal((await call("POST", path, object)).status, 201, `${object.kind} ${object.metadata.name}`);
    }
    const ready = async (name: string) => ((await get(`/api/v1/nodes/${name}`)).body as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
    await eventually(() => ready("worker-1"), { what: "the joined worker to be Ready", intervalMs: 50 });

    // A kubelet registers its node, then posts its status: between the two, the DaemonSet controller makes
    // the plugin's pod on a node that has not reported yet.
    const registration = registeredNode({ name: "late-1", address: "127.0.0.1", controlPlane: false, kubernetesVersion: "v1.31.2", labels: {} }, new Date().toISOString());
    assert.equal((await call("POST", "/api/v1/nodes", registration.node)).status, 201);
    const pluginPod = async () => ((await get("/api/v1/namespaces/kube-system/pods")).body.items ?? []).find((p) => p.spec?.nodeName === "late-1");
    await eventually(pluginPod, { what: "the plugin's pod on the silent node", intervalMs: 50 });
    const current = (await get("/api/v1/nodes/late-1")).body;
    assert.equal((await call("PUT", "/api/v1/nodes/late-1/status", { ...current, status: registration.status })).status, 200);
    await eventually(() => ready("late-1"), { what: "the late node to be Ready", intervalMs: 50 });
    assert.equal((await pluginPod())?.status?.phase, "Running");
  });
});
