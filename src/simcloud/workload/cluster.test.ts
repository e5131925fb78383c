import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { renderCniManifest } from "../../bootstrap/cni.ts";
import type { ClusterPki } from "../../bootstrap/kubeadm.ts";
import { createCertificateAuthority, type KeyPairPem } from "../../bootstrap/pki.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import { SimCloud } from "../cloud.ts";
import { readyNetwork, waitFor, type ReadyNetwork } from "../test-support.ts";
import type { Instance, LoadBalancer } from "../types.ts";
import { ManualClock } from "../clock.ts";
import { NODE_GONE_AFTER_MS, NODE_MONITOR_GRACE_MS, startWorkloadEmulation, type WorkloadEmulation } from "./index.ts";
import { NODE_MONITOR_PERIOD_MS } from "./emulator.ts";
import {
  REGION,
  VERSION,
  adminCertificate,
  bootLogMatching,
  clusterPki,
  controlPlaneLoadBalancer,
  initData,
  joinData,
  kubectl,
  launch,
  launchControlPlane,
  runDueSteps,
  writeKubeconfig,
} from "./test-support.ts";

const dir = mkdtempSync(join(tmpdir(), "slipway-workload-"));
// Instant steps run as they fall due; time moves only when a test advances the clock.
const clock = new ManualClock(Date.now());
const stopSteps = runDueSteps(clock);
const store = SqliteStore.open(":memory:");
let cloud: SimCloud;
let workloads: WorkloadEmulation;
let net: ReadyNetwork;

before(async () => {
  cloud = new SimCloud({ profile: "instant", clock, seed: 3 });
  workloads = await startWorkloadEmulation(cloud, { store });
  net = await readyNetwork(cloud);
});

after(async () => {
  stopSteps();
  await workloads.close();
  await cloud.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

interface NodeRow {
  name: string;
  status: string;
  roles: string;
  version: string;
}

function nodeRows(table: string): NodeRow[] {
  return table
    .trim()
    .split("\n")
    .slice(1)
    .map((line) => {
      const [name, status, roles, , version] = line.trim().split(/\s+/);
      return { name: name!, status: status!, roles: roles!, version: version! };
    });
}

describe("an emulated workload cluster", () => {
  let lb: LoadBalancer;
  let pki: ClusterPki;
  let kubeconfig: string;
  const instances = new Map<string, Instance>();

  it("initialises on the first control-plane machine and serves its API behind the load balancer", async () => {
    lb = await controlPlaneLoadBalancer(cloud, net, "alpha");
    assert.equal(lb.host, "127.0.0.1");
    assert.equal(lb.port, workloads.port);
    assert.equal(lb.path, `/clusters/${lb.id}`);
    pki = await clusterPki();
    const first = await launchControlPlane(cloud, net, lb, initData(lb, pki, "alpha-cp-0"));
    instances.set("alpha-cp-0", first);
    const log = await bootLogMatching(cloud, first.id, /control-plane has initialized successfully/);
    assert.ok(log.some((line) => line.includes(`[init] Using Kubernetes version: ${VERSION}`)), log.join("\n"));
    await waitFor(async () => (await cloud.getLoadBalancer(REGION, lb.id)).targets[0]?.health === "healthy", "the initialised machine serving behind the load balancer");

    kubeconfig = await writeKubeconfig(dir, lb, pki.ca);
    const pods = await kubectl(kubeconfig, ["get", "pods", "-n", "kube-system", "-o", "wide"]);
    assert.equal(pods.code, 0, pods.stderr);
    for (const component of ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      assert.match(pods.stdout, new RegExp(`^${component}-alpha-cp-0\\s+1/1\\s+Running`, "m"));
    }
    assert.match(pods.stdout, /^coredns-\S+\s+0\/1\s+Pending/m);
    const nodes = await kubectl(kubeconfig, ["get", "nodes"]);
    assert.deepEqual(nodeRows(nodes.stdout), [{ name: "alpha-cp-0", status: "NotReady", roles: "control-plane", version: VERSION }]);
  });

  it("joins a control-plane machine and two workers, which turn Ready once a CNI manifest is applied", async () => {
    for (const [name, controlPlane] of [["alpha-cp-1", true], ["alpha-w-0", false], ["alpha-w-1", false]] as const) {
      const data = joinData(lb, pki, { name }, { controlPlane });
      instances.set(name, controlPlane ? await launchControlPlane(cloud, net, lb, data) : await launch(cloud, net, data));
    }
    await bootLogMatching(cloud, instances.get("alpha-cp-1")!.id, /new control plane instance was created/);
    for (const worker of ["alpha-w-0", "alpha-w-1"]) await bootLogMatching(cloud, instances.get(worker)!.id, /This node has joined the cluster/);

    const manifest = join(dir, "calico.yaml");
    writeFileSync(manifest, renderCniManifest("calico", { podCIDR: "10.244.0.0/16" }).map((o) => stringify(o)).join("---\n"));
    const applied = await kubectl(kubeconfig, ["apply", "-f", manifest]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /daemonset.apps\/calico-node created/);

    const rows = await waitFor(async () => {
      const out = await kubectl(kubeconfig, ["get", "nodes"]);
      const parsed = nodeRows(out.stdout);
      return parsed.length === 4 && parsed.every((r) => r.status === "Ready") ? parsed : undefined;
    }, "four Ready nodes", 15_000);
    assert.deepEqual(
      rows.map((r) => [r.name, r.roles, r.version]),
      [
        ["alpha-cp-0", "control-plane", VERSION],
        ["alpha-cp-1", "control-plane", VERSION],
        ["alpha-w-0", "<none>", VERSION],
        ["alpha-w-1", "<none>", VERSION],
      ],
    );
    const calico = await kubectl(kubeconfig, ["get", "pods", "-n", "kube-system", "-l", "k8s-app=calico-node", "-o", "wide"]);
    assert.equal(calico.stdout.trim().split("\n").length, 1 + 4, calico.stdout);
    const dns = await kubectl(kubeconfig, ["get", "deployment", "coredns", "-n", "kube-system"]);
    assert.match(dns.stdout, /^coredns\s+2\/2\s+2\s+2\s/m);
  });

  it("turns the node of a terminated machine NotReady after the node-monitor grace period, then removes it", async () => {
    const statusOf = async (name: string) => nodeRows((await kubectl(kubeconfig, ["get", "nodes"])).stdout).find((r) => r.name === name)?.status;
    await cloud.terminateInstance(REGION, instances.get("alpha-w-1")!.id);
    await workloads.emulator.idle();
    clock.advance(NODE_MONITOR_GRACE_MS - 1);
    await workloads.emulator.idle();
    assert.equal(await statusOf("alpha-w-1"), "Ready", "the kubelet's silence is noticed only after the grace period");
    clock.advance(1);
    await waitFor(async () => (await statusOf("alpha-w-1")) === "NotReady", "the node NotReady");
    clock.advance(NODE_MONITOR_PERIOD_MS - 1);
    await workloads.emulator.idle();
    assert.equal(nodeRows((await kubectl(kubeconfig, ["get", "nodes"])).stdout).length, 4, "the node stays until the node-lifecycle controller looks again");
    clock.advance(1);
    const gone = await waitFor(async () => {
      const rows = nodeRows((await kubectl(kubeconfig, ["get", "nodes"])).stdout);
      return rows.length === 3 ? rows : undefined;
    }, "the node removed", 10_000);
    assert.deepEqual(gone.map((r) => r.name), ["alpha-cp-0", "alpha-cp-1", "alpha-w-0"]);
    const pods = await kubectl(kubeconfig, ["get", "pods", "-A", "--field-selector", "spec.nodeName=alpha-w-1"]);
    assert.match(pods.stdout + pods.stderr, /No resources found/);
  });

  it("refuses clients without a certificate of the cluster's CA", async () => {
    const stranger = await createCertificateAuthority({ commonName: "someone-else" });
    const foreign = await adminCertificate(stranger);
    const config = await writeKubeconfig(dir, { ...lb, id: `${lb.id}-foreign` }, pki.ca, foreign);
    const denied = await kubectl(config, ["get", "nodes"]);
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /Unauthorized|must be logged in/);

    const anonymous = await get(lb, pki, `${lb.path}/api/v1/nodes`);
    assert.equal(anonymous.status, 401);
    assert.equal((anonymous.body as { kind: string; reason: string }).reason, "Unauthorized");
  });

  it("serves a cluster by its TLS server name alone, with that cluster's certificate", async () => {
    const nodes = await get(lb, pki, "/api/v1/nodes", await adminCertificate(pki.ca));
    assert.equal(nodes.status, 200);
    assert.deepEqual((nodes.body as { items: { metadata: { name: string } }[] }).items.map((n) => n.metadata.name), ["alpha-cp-0", "alpha-cp-1", "alpha-w-0"]);
  });

  it("gives a ResourceQuota its status whoever writes it: kubectl, or a client in the process", async () => {
    const manifest = join(dir, "quota.yaml");
    writeFileSync(manifest, stringify({ apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "pods", namespace: "default" }, spec: { hard: { pods: "5" } } }));
    const applied = await kubectl(kubeconfig, ["apply", "-f", manifest]);
    assert.equal(applied.code, 0, applied.stderr);
    const status = await kubectl(kubeconfig, ["get", "resourcequota", "pods", "-n", "default", "-o", "jsonpath={.status.hard.pods}/{.status.used.pods}"]);
    assert.equal(status.stdout, "5/0", status.stderr);

    const objects = workloads.emulator.cluster(lb.id)!.objects;
    const quotas = objects.registry.byKind("v1", "ResourceQuota")!;
    await objects.create(quotas, "default", { metadata: { name: "cpu" }, spec: { hard: { "requests.cpu": "4" } } });
    const written = await objects.get(quotas, "default", "cpu");
    assert.deepEqual(written.status, { hard: { "requests.cpu": "4" }, used: { "requests.cpu": "0" } });
  });

  it("stops answering as soon as its last control-plane machine goes, and erases the cluster once its node is removed", async () => {
    for (const name of ["alpha-cp-0", "alpha-cp-1"]) await cloud.terminateInstance(REGION, instances.get(name)!.id);
    await workloads.emulator.idle();
    const gone = await kubectl(kubeconfig, ["get", "nodes"]);
    assert.notEqual(gone.code, 0, "no healthy target serves the API any more");
    assert.match(gone.stderr, /connection reset by peer|EOF|unexpected EOF/);
    assert.ok((await store.count(`/clusters/${lb.id}/`)) > 0, "its objects stay until the node-lifecycle controller acts");
    clock.advance(NODE_GONE_AFTER_MS);
    await waitFor(() => workloads.emulator.cluster(lb.id) === undefined, "the cluster erased", 10_000);
    await workloads.emulator.idle();
    assert.equal(await store.count(`/clusters/${lb.id}/`), 0, "none of its objects are left");
  });
});

/** A GET over HTTPS to the workload port, naming the load balancer for TLS and trusting only the cluster CA. */
function get(lb: LoadBalancer, pki: ClusterPki, path: string, client?: KeyPairPem): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: workloads.port, path, servername: lb.dnsName, ca: pki.ca.certPem, ...(client ? { cert: client.certPem, key: client.keyPem } : {}) },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}
