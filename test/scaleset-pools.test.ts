// Pools on scale sets, end to end: a sim cloud in its own process, `slipway up` against it, kubectl. A
// MachinePool whose template names a BootstrapConfig and a SimMachinePool adopts both (owner
// references), the bootstrap data goes into a Secret, the cloud's scale set launches the instances and
// the pool makes a Machine per instance; an instance killed in the scale set is replaced by the cloud
// and the pool shows the dip and the recovery; a scale-in drains a chosen node and removes exactly its
// instance; bad input is refused or reported naming the field; deleting the pool deletes the objects and
// the scale set with its instances.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SLIPWAY_BIN, eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "./support/simcloud.ts";
import type { Instance } from "../src/simcloud/types.ts";

interface Owned {
  metadata: { uid: string; ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[] };
}
interface PoolView extends Owned {
  spec: { replicas?: number; providerIDList?: string[]; template?: { bootstrap: { dataSecretName?: string } } };
  status?: { phase?: string; replicas?: number; readyReplicas?: number; availableReplicas?: number; updatedReplicas?: number; bootstrapReady?: boolean; infrastructureReady?: boolean; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}
interface SimPoolView extends Owned {
  status?: { scaleSetId?: string; ready?: boolean; replicas?: number; desiredCapacity?: number; providerIDList?: string[]; instances?: { instanceId: string; state: string; protected: boolean; upToDate?: boolean }[]; reason?: string; message?: string };
}
interface NodeView {
  metadata: { name: string; labels: Record<string, string> };
  spec: { providerID?: string };
  status?: { nodeInfo?: { kubeletVersion?: string } };
}
interface MachineView {
  metadata: { name: string; ownerReferences?: { kind: string; name: string }[] };
  spec: { scaleSetInstance?: { instanceId: string }; version?: string };
  status?: { nodeName?: string; nodeReady?: boolean };
}

const CLUSTER = JSON.stringify({
  apiVersion: "v1",
  kind: "List",
  items: [
    { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: "sim" }, spec: { provider: "sim", region: "sim-east-1" } },
    { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", metadata: { name: "demo" }, spec: { controlPlane: { connection: "sim", machineType: "s1.medium" }, workers: [] } },
  ],
});

function scaleSetPool(replicas: number, maxSize = 10): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "List",
    items: [
      { apiVersion: "slipway.dev/v1alpha1", kind: "BootstrapConfig", metadata: { name: "asg-join" }, spec: { labels: { tier: "asg" } } },
      { apiVersion: "slipway.dev/v1alpha1", kind: "SimMachinePool", metadata: { name: "asg-set" }, spec: { minSize: 0, maxSize } },
      {
        apiVersion: "slipway.dev/v1alpha1",
        kind: "MachinePool",
        metadata: { name: "asg" },
        spec: {
          clusterName: "demo",
          connection: "sim",
          machineType: "s1.small",
          replicas,
          template: {
            infrastructureRef: { apiVersion: "slipway.dev/v1alpha1", kind: "SimMachinePool", name: "asg-set" },
            bootstrap: { configRef: { apiVersion: "slipway.dev/v1alpha1", kind: "BootstrapConfig", name: "asg-join" } },
          },
        },
      },
    ],
  });
}

describe("machine pools on scale sets", () => {
  let sim: RunningSimCloud;
  let plane: RunningSlipway;
  let kc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const get = <T>(kind: string, name: string) => JSON.parse(ok("get", kind, name, "-o", "json")) as T;
  const machines = (pool = "asg") => (JSON.parse(ok("get", "machines", "-l", `slipway.dev/pool=${pool}`, "-o", "json")) as { items: MachineView[] }).items;
  const scaleSets = async () => (await sim.resourcesOf("default/demo")).filter((r) => r.kind === "scaleSet" && r.state !== "deleted");
  const cloudInstances = async () => new Map((await sim.resourcesOf("default/demo")).filter((r): r is Instance => r.kind === "instance").map((i) => [i.id, i]));
  const instanceIds = (providerIDs: readonly string[]) => providerIDs.map((id) => id.split("/").pop()!);
  const eventMessages = (name: string, reason: string) => ok("get", "events", "--field-selector", `involvedObject.name=${name},reason=${reason}`, "-o", "jsonpath={range .items[*]}{.count} {.message}{\"\\n\"}{end}");
  /** The workload cluster's nodes of a pool, read with kubectl through the cluster's kubeconfig. */
  let workload = "";
  const nodes = (pool = "asg") => (JSON.parse(kubectlOk(workload, ["get", "nodes", "-l", `slipway.dev/pool=${pool}`, "-o", "json"])) as { items: NodeView[] }).items;

  before(async () => {
    sim = await startSimCloud({ profile: "instant", seed: 5 });
    plane = await startSlipway({ args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "100ms"] });
    kc = plane.kubeconfig;
  });

  after(async () => {
    await plane.stop("SIGTERM");
    await sim.stop();
    removeDir(plane.dataDir);
  });

  it("refuses a template naming an unknown kind, naming the field, and makes nothing", () => {
    const bad = JSON.parse(scaleSetPool(2)) as { items: { kind: string; spec: { template?: { infrastructureRef: { kind: string } } } }[] };
    const poolItem = bad.items.find((i) => i.kind === "MachinePool")!;
    poolItem.spec.template!.infrastructureRef.kind = "AWSMachinePool";
    const refused = kubectl(kc, ["apply", "-f", "-"], JSON.stringify(poolItem));
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /spec\.template\.infrastructureRef\.kind: Unsupported value: "AWSMachinePool"/);
    assert.notEqual(kubectl(kc, ["get", "machinepool", "asg"]).status, 0);
  });

  it("runs a pool on a scale set: adopted objects, a Machine per instance, provider IDs matching the nodes, the cloud's replacement and a scale-in of the drained node", async () => {
    kubectlOk(kc, ["apply", "-f", "-"], CLUSTER);
    kubectlOk(kc, ["apply", "-f", "-"], scaleSetPool(3));
    const running = await eventually(() => {
      const p = get<PoolView>("machinepool", "asg");
      return p.status?.phase === "Running" && p.status.readyReplicas === 3 && p.spec.providerIDList?.length === 3 && p;
    }, { timeoutMs: 60_000, what: "the pool on a scale set to run 3 machines" });
    assert.deepEqual([running.status?.replicas, running.status?.availableReplicas, running.status?.bootstrapReady, running.status?.infrastructureReady], [3, 3, true, true]);
    assert.equal(running.spec.template?.bootstrap.dataSecretName, "asg-join-bootstrap-data");
    // Both objects are the pool's (garbage-collected with it), and show in kubectl with their columns.
    for (const [kind, name] of [["bootstrapconfig", "asg-join"], ["simmachinepool", "asg-set"]] as const) {
      const owner = get<Owned>(kind, name).metadata.ownerReferences?.find((o) => o.controller);
      assert.deepEqual(owner && [owner.kind, owner.name, owner.uid], ["MachinePool", "asg", running.metadata.uid], kind);
    }
    assert.match(ok("get", "bootstrapconfigs"), /^NAME\s+READY\s+DATASECRET\s+REASON\s+AGE\nasg-join\s+true\s+asg-join-bootstrap-data\s+/);
    const setTable = ok("get", "simmachinepools").trim().split("\n").map((l) => l.split(/\s+/));
    assert.deepEqual(setTable[0], ["NAME", "SCALESET", "DESIRED", "REPLICAS", "READY", "MESSAGE", "AGE"]);
    // The join data (token) is in the Secret only.
    // (Its status says whether the join token is kept valid, never the token.)
    const token = Buffer.from(ok("get", "secret", "demo-bootstrap-token", "-o", "jsonpath={.data.token}"), "base64").toString("utf8");
    assert.match(token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    const configYaml = ok("get", "bootstrapconfig", "asg-join", "-o", "yaml");
    for (const secret of [token, token.split(".")[1]!, "caCertHashes", "sha256:"]) assert.ok(!configYaml.includes(secret), `the BootstrapConfig shows no ${secret === token ? "token" : secret}`);
    assert.match(configYaml, /type: JoinTokenValid/);
    const infra = get<SimPoolView>("simmachinepool", "asg-set");
    const sets = await scaleSets();
    assert.deepEqual(sets.map((s) => s.id), [infra.status?.scaleSetId]);
    const cli = spawnSync(process.execPath, [SLIPWAY_BIN, "sim-cloud", "resources", "--endpoint", sim.url, "--token", SIM_TOKEN], { encoding: "utf8" });
    assert.match(cli.stdout, new RegExp(`scaleSet\\s+${infra.status!.scaleSetId}`), cli.stdout + cli.stderr);
    assert.ok(infra.status?.instances?.every((i) => i.protected), "every instance is protected from the cloud's scale-in");
    // What the cloud keeps for each instance of the set names the pool's bootstrap secret and holds no token.
    for (const instance of infra.status!.instances!) {
      const { userData } = await sim.api.getInstanceUserData("sim-east-1", instance.instanceId);
      assert.match(userData, new RegExp(`slipway-bootstrap-fetch --secret-id secret-[0-9a-f]{17} --region sim-east-1 --endpoint ${sim.url}`));
      assert.doesNotMatch(userData, /token: [a-z0-9]{6}\.[a-z0-9]{16}|BootstrapToken|JoinConfiguration|caCertHashes/, `instance ${instance.instanceId}'s user data holds no secret`);
    }
    assert.match(cli.stdout, /^secret\s/m, "the pool's bootstrap secret is in the cloud");
    // A Machine per instance, owned by the pool; the nodes are named after the instances.
    const ms = machines();
    assert.deepEqual(ms.map((m) => m.spec.scaleSetInstance?.instanceId).sort(), infra.status!.instances!.map((i) => i.instanceId).sort());
    assert.ok(ms.every((m) => m.metadata.ownerReferences?.some((o) => o.kind === "MachinePool" && o.name === "asg")));
    workload = join(plane.dataDir, "demo.kubeconfig");
    writeFileSync(workload, Buffer.from(ok("get", "secret", "demo-kubeconfig", "-o", "jsonpath={.data.value}"), "base64"));
    assert.deepEqual(nodes().map((n) => n.spec.providerID).sort(), running.spec.providerIDList);
    assert.deepEqual(nodes().map((n) => n.metadata.name).sort(), ms.map((m) => m.spec.scaleSetInstance!.instanceId).sort());
    assert.ok(nodes().every((n) => n.metadata.labels.tier === "asg"));

    // An instance killed in the scale set: the cloud replaces it, the pool dips and recovers.
    const victim = infra.status!.instances![0]!.instanceId;
    await sim.admin.killInstance(victim);
    // The dip: the pool says the instance was lost, and its machine goes.
    await eventually(() => ok("get", "events", "--field-selector", "involvedObject.name=asg,reason=InstanceLost", "-o", "jsonpath={.items[*].message}").includes(victim), { timeoutMs: 30_000, what: "the pool to report the lost instance" });
    const recovered = await eventually(() => {
      const p = get<PoolView>("machinepool", "asg");
      return p.status?.readyReplicas === 3 && p.status.phase === "Running" && !p.spec.providerIDList?.some((id) => id.endsWith(`/${victim}`)) && p.spec.providerIDList?.length === 3 && p;
    }, { timeoutMs: 60_000, what: "the pool to recover with the cloud's replacement" });
    assert.equal(machines().filter((m) => m.spec.scaleSetInstance?.instanceId === victim).length, 0);

    // Scale-in: the drained node's instance goes, exactly that one.
    ok("scale", "machinepool", "asg", "--replicas", "2");
    const drained = await eventually(() => {
      const events = ok("get", "events", "--field-selector", "involvedObject.name=asg,reason=ScalingDown", "-o", "jsonpath={.items[*].message}");
      return /draining (asg-i-[0-9a-f]+)/.exec(events)?.[1];
    }, { timeoutMs: 30_000, what: "the pool to choose a machine to drain" });
    const removed = drained.slice("asg-".length);
    const two = await eventually(() => {
      const p = get<PoolView>("machinepool", "asg");
      return p.status?.phase === "Running" && p.status.readyReplicas === 2 && p.spec.providerIDList?.length === 2 && p;
    }, { timeoutMs: 60_000, what: "the pool to run 2 machines" });
    assert.ok(!two.spec.providerIDList!.some((id) => id.endsWith(`/${removed}`)), `the removed instance ${removed} is gone from the pool`);
    assert.ok(recovered.spec.providerIDList!.filter((id) => !id.endsWith(`/${removed}`)).every((id) => two.spec.providerIDList!.includes(id)), "the other instances stay");
    const after = get<SimPoolView>("simmachinepool", "asg-set");
    assert.equal(after.status?.desiredCapacity, 2);
    assert.ok(!nodes().some((n) => n.metadata.name === removed));
    // The node drained is the instance's, and in the cloud exactly that instance was taken out, on the
    // pool's request (not by the scale set's own choice); the others run on.
    assert.match(eventMessages(drained, "NodeDrained"), new RegExp(`node ${removed} drained`));
    const cloud = await eventually(async () => {
      const found = await cloudInstances();
      return found.get(removed)?.state === "terminated" && found;
    }, { timeoutMs: 30_000, what: `instance ${removed} to be terminated in the cloud` });
    assert.equal(cloud.get(removed)?.stateReason?.code, "ScaleSetRemoval");
    const kept = instanceIds(recovered.spec.providerIDList!).filter((id) => id !== removed);
    assert.deepEqual(kept.map((id) => cloud.get(id)?.state), ["running", "running"], "the cloud removed no other instance");
    assert.deepEqual([...cloud.values()].filter((i) => i.stateReason?.code === "ScaleSetScaleIn").map((i) => i.id), [], "the scale set chose no instance itself");
  });

  it("reports replicas beyond the scale set's limit, naming the field, without resizing it", async () => {
    ok("scale", "machinepool", "asg", "--replicas", "20");
    const reported = await eventually(() => {
      const p = get<PoolView>("machinepool", "asg");
      const c = p.status?.conditions?.find((x) => x.type === "InfrastructureReady");
      return c?.status === "False" && c;
    }, { timeoutMs: 30_000, what: "the pool to report replicas beyond the limit" });
    assert.match(reported.message ?? "", /spec\.replicas of MachinePool asg \(20\) is outside spec\.minSize\.\.spec\.maxSize of SimMachinePool asg-set \(0\.\.10\)/);
    assert.equal(get<SimPoolView>("simmachinepool", "asg-set").status?.desiredCapacity, 2);
    ok("scale", "machinepool", "asg", "--replicas", "2");
  });

  it("rolls every instance to a changed machine type, one surged instance at a time, the new one Ready before an old one is drained; at the scale set's maxSize it waits, saying why, until the maxSize is raised", async () => {
    const before = get<PoolView>("machinepool", "asg").spec.providerIDList!;
    assert.equal(before.length, 2);
    // The scale set held at its 2 instances: with maxUnavailable 0 (the default) there is no room to surge.
    ok("patch", "simmachinepool", "asg-set", "--type", "merge", "-p", JSON.stringify({ spec: { maxSize: 2 } }));
    await eventually(async () => (await scaleSets()).some((r) => (r as { maxSize?: number }).maxSize === 2), { timeoutMs: 30_000, what: "the scale set's maxSize to be 2" });
    ok("patch", "machinepool", "asg", "--type", "merge", "-p", JSON.stringify({ spec: { machineType: "s1.medium" } }));
    const stuck = await eventually(() => {
      const c = get<PoolView>("machinepool", "asg").status?.conditions?.find((x) => x.type === "MachinesUpToDate");
      return c?.reason === "CannotSurge" && c;
    }, { timeoutMs: 30_000, what: "the pool to say its roll cannot surge" });
    assert.match(stuck.message ?? "", /^cannot surge: scale set \S+ is at its maxSize 2 \(spec\.maxSize of SimMachinePool asg-set\) and maxUnavailable is 0 \(spec\.strategy\.maxUnavailable of MachinePool asg\)/);
    assert.match(eventMessages("asg", "CannotSurge"), /^1 cannot surge: /);
    assert.deepEqual(get<PoolView>("machinepool", "asg").spec.providerIDList, before, "nothing was drained");
    ok("patch", "simmachinepool", "asg-set", "--type", "merge", "-p", JSON.stringify({ spec: { maxSize: 10 } }));
    const rolled = await eventually(() => {
      const p = get<PoolView>("machinepool", "asg");
      return p.status?.phase === "Running" && p.status.updatedReplicas === 2 && p.status.readyReplicas === 2 && p.spec.providerIDList?.length === 2 && !p.spec.providerIDList.some((id) => before.includes(id)) && p;
    }, { timeoutMs: 90_000, what: "the pool to roll both instances to s1.medium" });
    const instances = (await sim.resourcesOf("default/demo")).filter((r) => r.kind === "instance" && r.state !== "terminated" && rolled.spec.providerIDList!.some((id) => id.endsWith(`/${r.id}`)));
    assert.deepEqual(instances.map((i) => (i as { machineType?: string }).machineType), ["s1.medium", "s1.medium"]);
    assert.ok(machines().every((m) => rolled.spec.providerIDList!.some((id) => id.endsWith(`/${m.spec.scaleSetInstance?.instanceId}`))), "no machine of an old instance is left");
    const events = eventMessages("asg", "RollingMachines");
    // maxSurge 1 (the default): the capacity is raised to 3 for each new instance (one event, seen twice), never beyond.
    assert.deepEqual([...events.matchAll(/^(\d+) .*desired capacity of scale set \S+ raised to (\d+)/gm)].map((m) => `${m[2]} x${m[1]}`), ["3 x2"], events);
    const drainedOld = [...events.matchAll(/draining (asg-i-[0-9a-f]+)/g)].map((m) => m[1]!.slice("asg-".length));
    assert.deepEqual(drainedOld.sort(), before.map((id) => id.split("/").pop()!).sort(), events);
    await eventually(() => get<SimPoolView>("simmachinepool", "asg-set").status?.desiredCapacity === 2, { timeoutMs: 30_000, what: "the scale set to be back at 2" });
  });

  it("makes the objects for a pool the cluster declares on a scale set, under fixed names, controlled by the pool from the start", async () => {
    ok("patch", "cluster", "demo", "--type", "merge", "-p", JSON.stringify({ spec: { workers: [{ name: "set", connection: "sim", machineType: "s1.small", replicas: 2, scaleSet: { maxSize: 4 } }] } }));
    const declared = await eventually(() => {
      const p = get<PoolView>("machinepool", "demo-set");
      return p.status?.phase === "Running" && p.status.readyReplicas === 2 && p.status.infrastructureReady === true && p;
    }, { timeoutMs: 60_000, what: "the declared pool on a scale set to run" });
    for (const kind of ["bootstrapconfig", "simmachinepool"]) {
      const owner = get<Owned>(kind, "demo-set").metadata.ownerReferences?.find((o) => o.controller);
      assert.deepEqual(owner && [owner.kind, owner.name, owner.uid], ["MachinePool", "demo-set", declared.metadata.uid], kind);
    }
    // Made with their owner: the pool had nothing to adopt.
    assert.equal(ok("get", "events", "--field-selector", "involvedObject.name=demo-set", "-o", "jsonpath={.items[*].reason}").match(/Adopted\w*/g), null);
    assert.equal(get<SimPoolView>("simmachinepool", "demo-set").status?.providerIDList?.join(), declared.spec.providerIDList?.join());
    assert.equal((await scaleSets()).length, 2);
  });

  it("rolls the declared pool's instances to the cluster's new Kubernetes version through its launch template: every instance replaced one surge at a time, nodes at the new version, nothing old left in the cloud", async () => {
    const from = ok("get", "cluster", "demo", "-o", "jsonpath={.spec.kubernetesVersion}");
    const to = "v1.32.9";
    assert.match(from, /^v1\.31\./);
    const before = get<PoolView>("machinepool", "demo-set").spec.providerIDList!;
    assert.deepEqual([...new Set(nodes("demo-set").map((n) => n.status?.nodeInfo?.kubeletVersion))], [from]);
    ok("patch", "cluster", "demo", "--type", "merge", "-p", JSON.stringify({ spec: { kubernetesVersion: to } }));
    const rolled = await eventually(() => {
      const p = get<PoolView>("machinepool", "demo-set");
      const ids = p.spec.providerIDList ?? [];
      return p.status?.phase === "Running" && p.status.replicas === 2 && p.status.updatedReplicas === 2 && p.status.readyReplicas === 2 && p.status.availableReplicas === 2 && ids.length === 2 && !ids.some((id) => before.includes(id)) && p;
    }, { timeoutMs: 90_000, what: `the declared pool to roll both instances to ${to}` });
    // The nodes are the new instances, at the new version; so are the pool's machines.
    const upgraded = nodes("demo-set");
    assert.deepEqual(upgraded.map((n) => n.spec.providerID).sort(), rolled.spec.providerIDList);
    assert.deepEqual(upgraded.map((n) => n.status?.nodeInfo?.kubeletVersion), [to, to]);
    assert.deepEqual(machines("demo-set").map((m) => m.spec.version), [to, to]);
    // Through the launch template: the SimMachinePool brought it to the new version, and the cloud launched from it.
    assert.match(eventMessages("demo-set", "LaunchTemplateUpdated"), /new launch template for scale set \S+: machine type s1\.small/);
    const infra = await eventually(() => {
      const set = get<SimPoolView>("simmachinepool", "demo-set");
      return set.status?.desiredCapacity === 2 && set.status.instances?.length === 2 && set;
    }, { timeoutMs: 30_000, what: "the scale set to be back at 2 instances" });
    assert.ok(infra.status!.instances!.every((i) => i.upToDate && i.state === "ready"), JSON.stringify(infra.status?.instances));
    // maxSurge 1 (the default) within maxSize 4: the capacity is raised to 3 for each new instance, never beyond.
    const rolling = eventMessages("demo-set", "RollingMachines");
    assert.deepEqual([...new Set([...rolling.matchAll(/desired capacity of scale set \S+ raised to (\d+)/g)].map((m) => m[1]))], ["3"], rolling);
    assert.match(rolling, new RegExp(`rolling to template \\w+ \\(machine type s1\\.small, image [^,]+, Kubernetes ${to.replaceAll(".", "\\.")}\\)`));
    // Nothing of the old instances is left in the cloud, and no worker runs outside the pool's two.
    const cloud = await eventually(async () => {
      const found = await cloudInstances();
      return instanceIds(before).every((id) => found.get(id)?.state === "terminated") && found;
    }, { timeoutMs: 30_000, what: "the old instances to be terminated in the cloud" });
    const live = [...cloud.values()].filter((i) => i.state !== "terminated" && i.tags["sim:scale-set"] === infra.status?.scaleSetId).map((i) => i.id).sort();
    assert.deepEqual(live, instanceIds(rolled.spec.providerIDList!).sort());
    const cluster = await eventually(() => {
      const c = JSON.parse(ok("get", "cluster", "demo", "-o", "json")) as { status?: { phase?: string; version?: string } };
      return c.status?.phase === "Running" && c;
    }, { timeoutMs: 30_000, what: "the cluster to be Running again" });
    assert.equal(cluster.status?.version, to);
  });

  it("deletes the objects and the scale set with its instances with the pool", async () => {
    ok("delete", "machinepool", "asg", "--wait=true", "--timeout=60s");
    await eventually(() => kubectl(kc, ["get", "simmachinepool", "asg-set"]).status !== 0 && kubectl(kc, ["get", "bootstrapconfig", "asg-join"]).status !== 0, { timeoutMs: 30_000, what: "the pool's objects to be collected" });
    await eventually(async () => (await scaleSets()).length === 1, { timeoutMs: 30_000, what: "the pool's scale set to be deleted" });
    // Its bootstrap secret went with it; the declared pool's stays.
    const secrets = await eventually(async () => {
      const found = (await sim.resourcesOf("default/demo")).filter((r) => r.kind === "secret");
      return found.length === 1 && found;
    }, { timeoutMs: 30_000, what: "the pool's bootstrap secret to be deleted" });
    assert.equal(secrets[0]!.tags["slipway.dev/owner"], "SimMachinePool/demo-set");
    // The cluster's declared pool goes with the cluster, and its scale set with its instances.
    ok("delete", "cluster", "demo", "--wait=true", "--timeout=90s");
    await eventually(async () => (await scaleSets()).length === 0, { timeoutMs: 30_000, what: "every scale set to be deleted" });
    const instances = (await sim.resourcesOf("default/demo")).filter((r) => r.kind === "instance" && r.state !== "terminated");
    assert.deepEqual(instances.map((i) => i.id), []);
    // No bootstrap secret of either pool is left in the cloud.
    const cli = spawnSync(process.execPath, [SLIPWAY_BIN, "sim-cloud", "resources", "--endpoint", sim.url, "--token", SIM_TOKEN], { encoding: "utf8" });
    assert.equal(cli.status, 0, cli.stderr);
    assert.doesNotMatch(cli.stdout, /^secret\s/m, cli.stdout);
  });
});
