import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ManualClock } from "../clock.ts";
import type { SimCloud } from "../cloud.ts";
import type { ReadyNetwork } from "../test-support.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { JOIN_LEASE, TURN_POLL_MS } from "./kubeadm-steps.ts";
import { REGION, bootLogMatching, clusterPki, controlPlaneLoadBalancer, emulatedCloud, initData, joinData, kubectl, launchControlPlane, writeKubeconfig, type EmulatedCloud } from "./test-support.ts";

/** How long a `kubeadm join` takes here (simulated ms): half up to the etcd member add, half for the learner to catch up. */
const JOIN_MS = 10_000;

let env: EmulatedCloud;
let cloud: SimCloud;
let clock: ManualClock;
let net: ReadyNetwork;

before(async () => {
  env = await emulatedCloud(43);
  ({ cloud, clock, net } = env);
  // Everything else is instant; joins take their time, so that two of them can overlap.
  const sample = cloud.sampleDelay.bind(cloud);
  cloud.sampleDelay = (name) => (name === "kubeadmJoin" ? JOIN_MS : sample(name));
});

after(() => env.close());

async function bootLog(id: string): Promise<string[]> {
  await env.workloads.emulator.idle();
  return (await cloud.getInstance(REGION, id)).bootLog;
}

async function advance(ms: number): Promise<void> {
  await env.workloads.emulator.idle();
  clock.advance(ms);
  await env.workloads.emulator.idle();
}

async function initialised(name: string) {
  const lb = await controlPlaneLoadBalancer(cloud, net, name);
  const pki = await clusterPki();
  const cp0 = await launchControlPlane(cloud, net, lb, initData(lb, pki, `${name}-cp-0`));
  await bootLogMatching(cloud, cp0.id, /initialized successfully/);
  return { lb, pki };
}

describe("control-plane joins on the sim cloud", () => {
  it("refuses a control-plane join while another join's etcd member is still a learner, as etcd refuses a second learner", async () => {
    const { lb, pki } = await initialised("rho");
    const [a, b] = await Promise.all(["rho-cp-1", "rho-cp-2"].map((name) => launchControlPlane(cloud, net, lb, joinData(lb, pki, { name }, { controlPlane: true }))));
    await Promise.all([a!, b!].map((m) => bootLogMatching(cloud, m.id, /Z running$/)));
    await advance(JOIN_MS / 2);
    const logs = [await bootLog(a!.id), await bootLog(b!.id)];
    const refused = logs.filter((log) => log.some((l) => l.includes("error execution phase control-plane-join/etcd: error creating local etcd static pod manifest file: etcdserver: too many learner members in cluster")));
    assert.equal(refused.length, 1, logs.map((l) => l.join("\n")).join("\n---\n"));
    const learning = logs.find((log) => !refused.includes(log))!;
    assert.ok(learning.some((l) => l.includes("[etcd] Announced new etcd member joining")), learning.join("\n"));
    assert.ok(!learning.some((l) => l.includes("new control plane instance was created")), "the first join is not over before its learner is promoted");
    await advance(JOIN_MS / 2);
    const etcd = env.workloads.emulator.records.cluster(lb.id)!.etcd!;
    assert.equal(etcd.members.length, 2, "the first join ended; the refused one added no member");
    assert.equal(etcd.learner, undefined);
  });

  it("joins control-plane machines made at once one at a time: each takes the join Lease once the join before it ended", async () => {
    const { lb, pki } = await initialised("sigma");
    const names = ["sigma-cp-1", "sigma-cp-2"];
    const machines = await Promise.all(names.map((name) => launchControlPlane(cloud, net, lb, joinData(lb, pki, { name }, { controlPlane: true, takeTurn: true }))));
    await Promise.all(machines.map((m) => bootLogMatching(cloud, m.id, /slipway-join-turn/)));
    const logs = async () => Promise.all(machines.map((m) => bootLog(m.id)));
    let [first, second] = await logs();
    const took = (log: string[]) => log.some((l) => l.includes(`took Lease ${JOIN_LEASE}`));
    assert.equal([first, second].filter((l) => took(l!)).length, 1, "one machine holds the turn");
    const [holder, waiter] = took(first!) ? [0, 1] : [1, 0];
    assert.ok((holder === 0 ? second : first)!.some((l) => l.includes(`waiting for the control-plane join under way: ${names[holder]} holds Lease ${JOIN_LEASE}`)));

    await advance(JOIN_MS / 2); // the holder's member is a learner; the other still waits
    [first, second] = await logs();
    assert.ok(!took([first, second][waiter]!));
    await advance(JOIN_MS / 2); // the holder's join ended: the other takes the turn at once
    [first, second] = await logs();
    assert.ok([first, second][holder]!.some((l) => l.includes("new control plane instance was created")));
    assert.ok(took([first, second][waiter]!), "the next join starts as soon as the one before ended");
    await advance(JOIN_MS / 2);
    await advance(JOIN_MS / 2);
    for (const log of await logs()) {
      assert.ok(log.some((l) => l.includes("new control plane instance was created")), log.join("\n"));
      assert.ok(!log.some((l) => l.includes("error execution phase")), log.join("\n"));
    }
    const cluster = env.workloads.emulator.records.cluster(lb.id)!;
    assert.deepEqual(cluster.etcd!.history.map((h) => [h.event, h.quorum]), [
      ["member sigma-cp-0 added", true],
      [`member ${names[holder]} added`, true],
      [`member ${names[waiter]} added`, true],
    ]);
    assert.equal(cluster.joinLease, undefined, "the last join freed the Lease");
  });
  it("holds the next join while a join that never ended left its learner, until etcdctl member remove removes it", async () => {
    const { lb, pki } = await initialised("tau");
    const stuck = await launchControlPlane(cloud, net, lb, joinData(lb, pki, { name: "tau-cp-1" }, { controlPlane: true, takeTurn: true }));
    await bootLogMatching(cloud, stuck.id, /took Lease/);
    await advance(JOIN_MS / 2);
    await bootLogMatching(cloud, stuck.id, /Announced new etcd member joining/);
    await cloud.terminateInstance(REGION, stuck.id);
    const next = await launchControlPlane(cloud, net, lb, joinData(lb, pki, { name: "tau-cp-2" }, { controlPlane: true, takeTurn: true }));
    await bootLogMatching(cloud, next.id, /waiting for the control-plane join under way: etcd member tau-cp-1 is still a learner/);
    await advance(TURN_POLL_MS);
    assert.ok(!(await bootLog(next.id)).some((l) => l.includes("took Lease")), "a pending learner holds the turn");

    const kubeconfig = await writeKubeconfig(env.dir, lb, pki.ca);
    const exec = async (...args: string[]) => {
      const body = join(env.dir, "exec-tau.json");
      writeFileSync(body, JSON.stringify({ command: ["etcdctl", ...args] }));
      const result = await kubectl(kubeconfig, ["create", "--raw", "/api/v1/namespaces/kube-system/pods/etcd-tau-cp-0/exec", "-f", body]);
      assert.equal(result.code, 0, result.stderr);
      return JSON.parse(result.stdout) as { exitCode: number; stdout: string; stderr: string };
    };
    const members = (JSON.parse((await exec("member", "list", "-w", "json")).stdout) as { members: { ID: string; name: string; isLearner?: boolean }[] }).members;
    const learner = members.find((m) => m.name === "tau-cp-1");
    assert.equal(learner?.isLearner, true, JSON.stringify(members));
    assert.equal((await exec("member", "remove", learner.ID)).exitCode, 0);

    await advance(TURN_POLL_MS);
    await bootLogMatching(cloud, next.id, /took Lease/);
    await advance(JOIN_MS / 2);
    await advance(JOIN_MS / 2);
    await bootLogMatching(cloud, next.id, /new control plane instance was created/);
    assert.deepEqual(env.workloads.emulator.records.cluster(lb.id)!.etcd!.members.map((m) => m.name), ["tau-cp-0", "tau-cp-2"]);
  });
});
