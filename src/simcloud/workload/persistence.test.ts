import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { renderCniManifest } from "../../bootstrap/cni.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import { SimCloud } from "../cloud.ts";
import { readyNetwork, waitFor } from "../test-support.ts";
import { ManualClock } from "../clock.ts";
import { NODE_GONE_AFTER_MS, NODE_MONITOR_GRACE_MS, startWorkloadEmulation } from "./index.ts";
import { REGION, VERSION, bootLogMatching, clusterPki, controlPlaneLoadBalancer, initData, joinData, kubectl, launch, launchControlPlane, runDueSteps, writeKubeconfig } from "./test-support.ts";

const dir = mkdtempSync(join(tmpdir(), "slipway-workload-restart-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The cloud on its state file, with instant steps running as they fall due and time moving only when told. */
const open = async (state: string, now = Date.now()) => {
  const clock = new ManualClock(now);
  const stopSteps = runDueSteps(clock);
  const cloud = new SimCloud({ profile: "instant", seed: 9, state, clock });
  const workloads = await startWorkloadEmulation(cloud);
  const close = async () => {
    stopSteps();
    await workloads.close();
    await cloud.close();
  };
  return { clock, cloud, workloads, close };
};

async function nodeTable(kubeconfig: string): Promise<string[][]> {
  const out = await kubectl(kubeconfig, ["get", "nodes", "--no-headers"]);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout
    .trim()
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => line.trim().split(/\s+/));
}

describe("keeping workload clusters", () => {
  it("keeps clusters, nodes and objects, serves them on the same port (kubeconfigs handed out before keep working), and resumes pending steps", async () => {
    const state = join(dir, "sim.db");
    let { clock, cloud, workloads, close } = await open(state);
    const net = await readyNetwork(cloud);
    let lb = await controlPlaneLoadBalancer(cloud, net, "zeta");
    const pki = await clusterPki();
    const cp = await launchControlPlane(cloud, net, lb, initData(lb, pki, "zeta-cp-0"));
    const workers = [await launch(cloud, net, joinData(lb, pki, { name: "zeta-w-0" })), await launch(cloud, net, joinData(lb, pki, { name: "zeta-w-1" }))];
    await bootLogMatching(cloud, cp.id, /initialized successfully/);
    for (const worker of workers) await bootLogMatching(cloud, worker.id, /This node has joined the cluster/);
    const kubeconfig = await writeKubeconfig(dir, lb, pki.ca);
    const manifest = join(dir, "cilium.yaml");
    writeFileSync(manifest, renderCniManifest("cilium", { podCIDR: "10.244.0.0/16" }).map((o) => stringify(o)).join("---\n"));
    assert.equal((await kubectl(kubeconfig, ["apply", "-f", manifest])).code, 0);
    await waitFor(async () => (await nodeTable(kubeconfig)).filter((row) => row[1] === "Ready").length === 3, "three Ready nodes", 10_000);

    // The second worker's machine goes away; its node is NotReady when the cloud stops, and its removal is still due.
    await cloud.terminateInstance(REGION, workers[1]!.id);
    await workloads.emulator.idle();
    clock.advance(NODE_MONITOR_GRACE_MS);
    await waitFor(async () => (await nodeTable(kubeconfig)).find((row) => row[0] === "zeta-w-1")?.[1] === "NotReady", "the lost node NotReady");
    const oldPort = workloads.port;
    await close();
    assert.ok(existsSync(`${state}.workloads.db`), "workload clusters are kept beside the cloud's state file");

    ({ clock, cloud, workloads, close } = await open(state, clock.now()));
    try {
      lb = await cloud.getLoadBalancer(REGION, lb.id);
      assert.equal(lb.port, workloads.port, "the load balancer publishes the emulator's port");
      assert.equal(workloads.port, oldPort, "the port of the previous run");
      assert.deepEqual((await nodeTable(kubeconfig)).find((row) => row[0] === "zeta-w-1")?.[1], "NotReady", "the lost node is still there");
      clock.advance(NODE_GONE_AFTER_MS - NODE_MONITOR_GRACE_MS);
      const rows = await waitFor(async () => {
        const table = await nodeTable(kubeconfig);
        return table.length === 2 ? table : undefined;
      }, "the lost node removed after the restart", 10_000);
      assert.deepEqual(rows.map((row) => [row[0], row[1], row[2], row[4]]), [
        ["zeta-cp-0", "Ready", "control-plane", VERSION],
        ["zeta-w-0", "Ready", "<none>", VERSION],
      ]);
      const ds = await kubectl(kubeconfig, ["get", "ds", "cilium", "-n", "kube-system", "--no-headers"]);
      assert.match(ds.stdout, /^cilium\s+2\s+2\s+2\s/);

      // The cluster still admits machines: a new worker joins with the original data and turns Ready.
      const joined = await launch(cloud, net, joinData(lb, pki, { name: "zeta-w-2" }));
      await bootLogMatching(cloud, joined.id, /This node has joined the cluster/);
      await waitFor(async () => (await nodeTable(kubeconfig)).find((row) => row[0] === "zeta-w-2")?.[1] === "Ready", "the new worker Ready");
    } finally {
      await close();
    }
  });

  it("compacts the history of the workload store, keeping every current object", async () => {
    const store = SqliteStore.open(":memory:");
    const cloud = new SimCloud({ profile: "instant", seed: 10 });
    const workloads = await startWorkloadEmulation(cloud, { store, compactionIntervalMs: 20 });
    try {
      const net = await readyNetwork(cloud);
      const lb = await controlPlaneLoadBalancer(cloud, net, "eta");
      const pki = await clusterPki();
      const cp = await launchControlPlane(cloud, net, lb, initData(lb, pki, "eta-cp-0"));
      await bootLogMatching(cloud, cp.id, /initialized successfully/);
      const objects = await store.count(`/clusters/${lb.id}/`);
      await waitFor(async () => (await store.compactedRevision()) > 0, "a compaction");
      assert.equal(await store.count(`/clusters/${lb.id}/`), objects);
      assert.equal(await workloads.emulator.cluster(lb.id)?.hasNode("eta-cp-0"), true);
    } finally {
      await workloads.close();
      await cloud.close();
      await store.close();
    }
  });
});
