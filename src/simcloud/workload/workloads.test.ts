import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import type { KubeObject } from "../../api/meta.ts";
import { renderCniManifest } from "../../bootstrap/cni.ts";
import type { ClusterPki } from "../../bootstrap/kubeadm.ts";
import type { SimCloud } from "../cloud.ts";
import type { ManualClock } from "../clock.ts";
import { waitFor, type ReadyNetwork } from "../test-support.ts";
import type { Instance, LoadBalancer } from "../types.ts";
import { CRASH_BACKOFF_MS } from "./controllers.ts";
import { NODE_MONITOR_GRACE_MS, type WorkloadEmulation } from "./index.ts";
import { REGION, bootLogMatching, clusterPki, controlPlaneLoadBalancer, initData, joinData, kubectl, launch, launchControlPlane, writeKubeconfig, emulatedCloud, type EmulatedCloud } from "./test-support.ts";

let env: EmulatedCloud;
let clock: ManualClock;
let cloud: SimCloud;
let workloads: WorkloadEmulation;
let net: ReadyNetwork;
let dir: string;

before(async () => {
  env = await emulatedCloud(21);
  ({ clock, cloud, workloads, net, dir } = env);
});

after(() => env.close());

interface Cluster {
  lb: LoadBalancer;
  pki: ClusterPki;
  kubeconfig: string;
  machines: Map<string, Instance>;
}

/** A control-plane machine and two workers, joined; no network plugin yet. */
async function cluster(name: string): Promise<Cluster> {
  const lb = await controlPlaneLoadBalancer(cloud, net, name);
  const pki = await clusterPki();
  const machines = new Map<string, Instance>();
  const cp = await launchControlPlane(cloud, net, lb, initData(lb, pki, `${name}-cp-0`));
  machines.set(`${name}-cp-0`, cp);
  await bootLogMatching(cloud, cp.id, /initialized successfully/);
  for (const worker of [`${name}-w-0`, `${name}-w-1`]) {
    const instance = await launch(cloud, net, joinData(lb, pki, { name: worker }));
    machines.set(worker, instance);
    await bootLogMatching(cloud, instance.id, /This node has joined the cluster/);
  }
  return { lb, pki, kubeconfig: await writeKubeconfig(dir, lb, pki.ca), machines };
}

async function apply(kubeconfig: string, objects: KubeObject[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = join(dir, `manifest-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, objects.map((o) => stringify(o)).join("---\n"));
  return kubectl(kubeconfig, ["apply", "-f", file]);
}

async function rows(kubeconfig: string, args: string[]): Promise<string[][]> {
  const out = await kubectl(kubeconfig, [...args, "--no-headers"]);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout.trim().split("\n").filter((l) => l !== "").map((l) => l.trim().split(/\s+/));
}

async function readyNodes(kubeconfig: string): Promise<number> {
  return (await rows(kubeconfig, ["get", "nodes"])).filter((r) => r[1] === "Ready").length;
}

interface NodeJson {
  spec?: { taints?: { key: string; effect: string }[] };
  status: { conditions: { type: string; status: string; reason?: string; message?: string }[] };
}

async function nodeJson(kubeconfig: string, name: string): Promise<NodeJson> {
  const out = await kubectl(kubeconfig, ["get", "node", name, "-o", "json"]);
  assert.equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout) as NodeJson;
}

describe("workloads of an emulated cluster", () => {
  let c: Cluster;
  before(async () => {
    c = await cluster("sigma");
  });

  it("refuses DaemonSets and Deployments whose pod template Kubernetes would refuse, naming the field", async () => {
    const ds = (spec: unknown): KubeObject => ({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "bad", namespace: "default" }, spec });
    const nonsense = await apply(c.kubeconfig, [ds({ nonsense: true })]);
    assert.notEqual(nonsense.code, 0);
    assert.match(nonsense.stderr, /spec\.nonsense: unknown field "nonsense"/);
    const template = (containers: unknown[], labels = { app: "x" }) => ({ selector: { matchLabels: { app: "x" } }, template: { metadata: { labels }, spec: { containers } } });
    const noImage = await apply(c.kubeconfig, [ds(template([{ name: "c" }]))]);
    assert.match(noImage.stderr, /spec\.template\.spec\.containers\[0\]\.image: Required value/);
    const typo = await apply(c.kubeconfig, [ds(template([{ name: "c", image: "nginx", imagePolicy: "Always" }]))]);
    assert.match(typo.stderr, /spec\.template\.spec\.containers\[0\]\.imagePolicy: unknown field "imagePolicy"/);
    const mismatch = await apply(c.kubeconfig, [{ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "bad", namespace: "default" }, spec: template([{ name: "c", image: "nginx" }], { app: "other" }) }]);
    assert.match(mismatch.stderr, /spec\.template\.metadata\.labels: Invalid value: .*`selector` does not match template `labels`/);
    assert.equal((await kubectl(c.kubeconfig, ["get", "ds,deploy", "bad", "-n", "default"])).code, 1, "nothing was made");
  });

  it("leaves nodes NotReady with the kubelet's message while the network plugin's pod range does not hold theirs, until it is fixed", async () => {
    const wrong = renderCniManifest("flannel", { podCIDR: "10.245.0.0/16" });
    assert.equal((await apply(c.kubeconfig, wrong)).code, 0);
    const crash = await waitFor(async () => {
      const pods = await rows(c.kubeconfig, ["get", "pods", "-n", "kube-flannel"]);
      return pods.length === 3 && pods.every((p) => p[2] === "CrashLoopBackOff") ? pods : undefined;
    }, "the flannel pods crashing", 10_000);
    assert.equal(crash.length, 3);
    const logged = await kubectl(c.kubeconfig, ["get", "pods", "-n", "kube-flannel", "-o", "jsonpath={.items[0].status.containerStatuses[0].lastState.terminated.message}"]);
    assert.match(logged.stdout, /subnet "10\.245\.0\.0\/16" specified in the flannel net config doesn't contain "10\.244\.\d+\.0\/24" PodCIDR/);
    assert.equal(await readyNodes(c.kubeconfig), 0);
    const ready = (await nodeJson(c.kubeconfig, "sigma-w-0")).status.conditions.find((x) => x.type === "Ready");
    assert.deepEqual([ready?.status, ready?.reason], ["False", "KubeletNotReady"]);
    assert.match(ready?.message ?? "", /container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized/);
    assert.deepEqual((await rows(c.kubeconfig, ["get", "ds", "kube-flannel-ds", "-n", "kube-flannel"]))[0]?.slice(1, 6), ["3", "3", "0", "3", "0"]);

    // The kubelet restarts the crashed container after its back-off; it then reads the fixed configuration.
    assert.equal((await apply(c.kubeconfig, renderCniManifest("flannel", { podCIDR: "10.244.0.0/16" }))).code, 0);
    clock.advance(CRASH_BACKOFF_MS.first);
    await waitFor(async () => (await readyNodes(c.kubeconfig)) === 3, "three Ready nodes once the pod range is right", 10_000);
  });

  it("reports DaemonSet and Deployment status as Kubernetes does", async () => {
    const [proxy] = await rows(c.kubeconfig, ["get", "ds", "kube-proxy", "-n", "kube-system"]);
    assert.deepEqual(proxy?.slice(0, 6), ["kube-proxy", "3", "3", "3", "3", "3"]);
    const dsJson = JSON.parse((await kubectl(c.kubeconfig, ["get", "ds", "kube-flannel-ds", "-n", "kube-flannel", "-o", "json"])).stdout) as { metadata: { generation: number }; status: Record<string, number> };
    assert.deepEqual(dsJson.status, { desiredNumberScheduled: 3, currentNumberScheduled: 3, numberMisscheduled: 0, numberReady: 3, updatedNumberScheduled: 3, numberAvailable: 3, observedGeneration: dsJson.metadata.generation });
    await waitFor(async () => (await rows(c.kubeconfig, ["get", "deploy", "coredns", "-n", "kube-system"]))[0]?.[1] === "2/2", "CoreDNS 2/2");
    const dns = JSON.parse((await kubectl(c.kubeconfig, ["get", "deploy", "coredns", "-n", "kube-system", "-o", "json"])).stdout) as { status: { replicas: number; readyReplicas: number; availableReplicas: number; conditions: { type: string; status: string }[] } };
    assert.deepEqual([dns.status.replicas, dns.status.readyReplicas, dns.status.availableReplicas], [2, 2, 2]);
    assert.equal(dns.status.conditions.find((x) => x.type === "Available")?.status, "True");
    // Taints keep CoreDNS off nothing here, but the control-plane taint keeps ordinary pods off that node.
    const web = await apply(c.kubeconfig, [
      { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web", namespace: "default" }, spec: { replicas: 4, selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "nginx" }] } } } },
    ]);
    assert.equal(web.code, 0, web.stderr);
    const pods = await waitFor(async () => {
      const list = await rows(c.kubeconfig, ["get", "pods", "-n", "default", "-l", "app=web", "-o", "wide"]);
      return list.length === 4 && list.every((p) => p[2] === "Running") ? list : undefined;
    }, "four web pods running");
    assert.deepEqual([...new Set(pods.map((p) => p[6]))].sort(), ["sigma-w-0", "sigma-w-1"], "spread over the workers, none on the tainted control plane");
  });

  it("runs a Job applied with kubectl to completion, prints it as kubectl does and collects its pods when it is deleted", async () => {
    const manifest: KubeObject = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "migrate", namespace: "default" },
      spec: { completions: 2, template: { spec: { restartPolicy: "OnFailure", containers: [{ name: "migrate", image: "busybox:1.36", command: ["true"] }] } } },
    };
    const created = await apply(c.kubeconfig, [manifest]);
    assert.equal(created.code, 0, created.stderr);
    const [row] = await waitFor(async () => {
      const list = await rows(c.kubeconfig, ["get", "jobs", "-n", "default"]);
      return list[0]?.[1] === "Complete" ? list : undefined;
    }, "the Job Complete");
    assert.deepEqual(row?.slice(0, 3), ["migrate", "Complete", "2/2"]);
    const pods = await rows(c.kubeconfig, ["get", "pods", "-n", "default", "-l", "job-name=migrate"]);
    assert.deepEqual(pods.map((p) => p[2]), ["Completed", "Completed"]);
    const again = await apply(c.kubeconfig, [manifest]);
    assert.match(again.stdout, /job\.batch\/migrate unchanged/, again.stderr);
    assert.equal((await kubectl(c.kubeconfig, ["delete", "job", "migrate", "-n", "default"])).code, 0);
    await waitFor(async () => (await rows(c.kubeconfig, ["get", "pods", "-n", "default", "-l", "job-name=migrate"])).length === 0, "the Job's pods collected");
  });

  it("turns a stopped machine's node NotReady after the node-monitor grace period, shut down, and Ready once it starts again", async () => {
    const worker = c.machines.get("sigma-w-1")!;
    await cloud.stopInstance(REGION, worker.id);
    await workloads.emulator.idle();
    clock.advance(NODE_MONITOR_GRACE_MS - 1);
    await workloads.emulator.idle();
    assert.equal((await nodeJson(c.kubeconfig, "sigma-w-1")).status.conditions.find((x) => x.type === "Ready")?.status, "True");
    clock.advance(1);
    const silent = await waitFor(async () => {
      const node = await nodeJson(c.kubeconfig, "sigma-w-1");
      return node.status.conditions.find((x) => x.type === "Ready")?.status === "Unknown" ? node : undefined;
    }, "the node Unknown");
    assert.ok(silent.spec?.taints?.some((t) => t.key === "node.cloudprovider.kubernetes.io/shutdown"), JSON.stringify(silent.spec?.taints));
    await waitFor(async () => (await cloud.getInstance(REGION, worker.id)).state === "stopped", "stopped");
    await cloud.startInstance(REGION, worker.id);
    await waitFor(async () => (await readyNodes(c.kubeconfig)) === 3, "the node Ready again", 10_000);
    const node = await nodeJson(c.kubeconfig, "sigma-w-1");
    assert.ok(!node.spec?.taints?.some((t) => t.key.startsWith("node.kubernetes.io/unreachable") || t.key.includes("shutdown")));
  });

  it("evicts through pods/eviction only as far as a PodDisruptionBudget allows: kubectl drain waits on it", async () => {
    const budget = (spec: Record<string, unknown>): KubeObject => ({ apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "web", namespace: "default" }, spec: { selector: { matchLabels: { app: "web" } }, ...spec } });
    assert.equal((await apply(c.kubeconfig, [budget({ minAvailable: 4 })])).code, 0);
    await waitFor(async () => (await rows(c.kubeconfig, ["get", "pdb", "web", "-n", "default"]))[0]?.[3] === "0", "no disruption allowed");
    const blocked = await kubectl(c.kubeconfig, ["drain", "sigma-w-0", "--ignore-daemonsets", "--timeout=2s"]);
    assert.notEqual(blocked.code, 0);
    assert.match(blocked.stdout + blocked.stderr, /Cannot evict pod as it would violate the pod's disruption budget/);
    assert.equal((await rows(c.kubeconfig, ["get", "pods", "-n", "default", "-l", "app=web"])).length, 4, "no web pod was evicted");

    await kubectl(c.kubeconfig, ["delete", "pdb", "web", "-n", "default"]);
    assert.equal((await apply(c.kubeconfig, [budget({ maxUnavailable: 1 })])).code, 0);
    const drained = await kubectl(c.kubeconfig, ["drain", "sigma-w-0", "--ignore-daemonsets", "--timeout=20s"]);
    assert.equal(drained.code, 0, drained.stdout + drained.stderr);
    assert.match(drained.stdout, /pod\/web-\S+ evicted/);
    const pods = await rows(c.kubeconfig, ["get", "pods", "-n", "default", "-l", "app=web", "-o", "wide"]);
    assert.equal(pods.length, 4);
    assert.ok(pods.every((p) => p[6] === "sigma-w-1" && p[2] === "Running"), "the replacements run on the other worker");
  });
});
