import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SimCloud } from "../cloud.ts";
import type { ReadyNetwork } from "../test-support.ts";
import type { EtcdSnapshot } from "./etcd.ts";
import { REGION, bootLogMatching, clusterPki, controlPlaneLoadBalancer, initData, joinData, kubectl, launch, launchControlPlane, writeKubeconfig, emulatedCloud, type EmulatedCloud } from "./test-support.ts";

let env: EmulatedCloud;
let cloud: SimCloud;
let net: ReadyNetwork;
let dir: string;

before(async () => {
  env = await emulatedCloud(41);
  ({ cloud, net, dir } = env);
});

after(() => env.close());

async function ok(kubeconfig: string, args: string[]): Promise<string> {
  const result = await kubectl(kubeconfig, args);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}

/** `etcdctl` in a member's etcd pod, through the pods/exec subresource. */
async function etcdctl(kubeconfig: string, node: string, ...args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const body = join(dir, `exec-${node}.json`);
  writeFileSync(body, JSON.stringify({ command: ["etcdctl", ...args] }));
  return JSON.parse(await ok(kubeconfig, ["create", "--raw", `/api/v1/namespaces/kube-system/pods/etcd-${node}/exec`, "-f", body])) as { exitCode: number; stdout: string; stderr: string };
}

async function record(kubeconfig: string): Promise<{ members: string[]; history: EtcdSnapshot[]; broken?: string }> {
  const cm = JSON.parse(await ok(kubeconfig, ["get", "configmap", "-n", "kube-system", "etcd-membership", "-o", "json"])) as { data: Record<string, string> };
  return { members: JSON.parse(cm.data.members!) as string[], history: JSON.parse(cm.data.history!) as EtcdSnapshot[], ...(cm.data.broken ? { broken: cm.data.broken } : {}) };
}

describe("the etcd of an emulated control plane", () => {
  it("grows by kubeadm join, shrinks by member remove, records every change, and breaks when a member goes unremoved", async () => {
    const lb = await controlPlaneLoadBalancer(cloud, net, "etcd");
    const pki = await clusterPki();
    const cp0 = await launchControlPlane(cloud, net, lb, initData(lb, pki, "etcd-cp-0"));
    await bootLogMatching(cloud, cp0.id, /initialized successfully/);
    const kubeconfig = await writeKubeconfig(dir, lb, pki.ca);
    const joined: string[] = [];
    for (const name of ["etcd-cp-1", "etcd-cp-2"]) {
      const instance = await launchControlPlane(cloud, net, lb, joinData(lb, pki, { name }, { controlPlane: true }));
      await bootLogMatching(cloud, instance.id, /new control plane instance was created/);
      joined.push(instance.id);
    }
    const list = await etcdctl(kubeconfig, "etcd-cp-0", "member", "list", "-w", "json");
    const members = (JSON.parse(list.stdout) as { members: { ID: string; name: string }[] }).members;
    assert.deepEqual(members.map((m) => m.name), ["etcd-cp-0", "etcd-cp-1", "etcd-cp-2"]);
    assert.deepEqual((await record(kubeconfig)).history.map((h) => [h.event, h.members.length, h.quorum]), [
      ["member etcd-cp-0 added", 1, true],
      ["member etcd-cp-1 added", 2, true],
      ["member etcd-cp-2 added", 3, true],
    ]);

    // The proper way out: the member is removed, then the machine goes.
    const cp2 = members.find((m) => m.name === "etcd-cp-2")!;
    const removed = await etcdctl(kubeconfig, "etcd-cp-0", "member", "remove", cp2.ID);
    assert.equal(removed.exitCode, 0, removed.stderr);
    assert.equal((await etcdctl(kubeconfig, "etcd-cp-0", "member", "remove", cp2.ID)).stderr, "Error: etcdserver: member not found");
    await cloud.deregisterTargets(REGION, lb.id, [joined[1]!]);
    await cloud.terminateInstance(REGION, joined[1]!);
    await env.workloads.emulator.idle();
    assert.deepEqual((await record(kubeconfig)).members, ["etcd-cp-0", "etcd-cp-1"]);

    // A worker is no member; a program other than etcdctl is not there.
    const worker = await launch(cloud, net, joinData(lb, pki, { name: "etcd-w-0" }));
    await bootLogMatching(cloud, worker.id, /This node has joined the cluster/);
    assert.equal((await kubectl(kubeconfig, ["create", "--raw", "/api/v1/namespaces/kube-system/pods/etcd-etcd-w-0/exec", "-f", join(dir, "exec-etcd-cp-0.json")])).code === 0, false);
    assert.equal((await etcdctl(kubeconfig, "etcd-cp-0", "member", "list")).exitCode, 0);

    // The improper way: cp-1's machine goes while it is still a member of two. One of two is no quorum:
    // the control plane is broken, its API stops answering.
    await cloud.terminateInstance(REGION, joined[0]!);
    await env.workloads.emulator.idle();
    const gets = await kubectl(kubeconfig, ["get", "nodes"]);
    assert.notEqual(gets.code, 0, "no quorum, no API");
    const etcd = env.workloads.emulator.records.cluster(lb.id)!.etcd!;
    assert.deepEqual(etcd.history.at(-1), { at: etcd.history.at(-1)!.at, event: "member etcd-cp-1 unreachable", members: ["etcd-cp-0", "etcd-cp-1"], healthy: ["etcd-cp-0"], quorum: false });
    assert.match(etcd.broken ?? "", /etcd lost quorum .*1 of 2 members healthy/);
  });
});
