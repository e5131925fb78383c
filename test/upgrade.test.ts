// Upgrades end to end: a sim cloud in its own process (so that its workload clusters outlive a killed
// `slipway up`), `slipway up` against it, kubectl on the control plane and on the cluster it makes. A
// three-control-plane, two-pool cluster moves from v1.30 to v1.31: every node ends at the new version,
// the workers only once the whole control plane runs it, etcd never loses quorum (the emulator records
// its membership over time), and the cluster's API answers throughout. Versions that break the skew
// rules are refused naming the rule. `slipway up` killed in the middle of an upgrade finishes it after a
// restart with no machine duplicated or lost; the control plane scaled 3 → 1 → 3 keeps etcd right.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { KubeClient } from "../src/kubeclient/index.ts";
import type { Instance } from "../src/simcloud/types.ts";
import type { EtcdSnapshot } from "../src/simcloud/workload/etcd.ts";
import { StopWaiting, eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "./support/simcloud.ts";

const OLD = "v1.30.14";
const NEW = "v1.31.13";
const NEXT = "v1.32.9";

interface OperationView {
  status?: { phase?: string; percentComplete?: number; message?: string; error?: { code: string; message: string } };
}

interface NodeView {
  metadata: { name: string; labels?: Record<string, string> };
  status?: { nodeInfo?: { kubeletVersion?: string } };
}

interface MachineView {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  spec: { role: string; version?: string };
  status?: { phase?: string; instanceId?: string };
}

function manifest(name: string, version: string, extra = ""): string {
  return (
    `apiVersion: slipway.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\nspec:\n  kubernetesVersion: ${version}\n${extra}` +
    `  controlPlane:\n    connection: east\n    machineType: s1.medium\n    replicas: 3\n` +
    `  workers:\n    - name: alpha\n      connection: east\n      machineType: s1.small\n      replicas: 2\n    - name: beta\n      connection: east\n      machineType: s1.small\n      replicas: 1\n`
  );
}

const isControlPlane = (n: NodeView) => n.metadata.labels?.["node-role.kubernetes.io/control-plane"] !== undefined;
const versionOf = (n: NodeView) => n.status?.nodeInfo?.kubeletVersion ?? "";

/**
 * Polls the workload cluster's API while it runs: every answer's nodes and versions, and every failure.
 * Asynchronous (not kubectl), so that the test's own waits go on meanwhile.
 */
class ApiWatcher {
  readonly samples: { at: number; nodes: NodeView[] }[] = [];
  readonly failures: string[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(private readonly client: KubeClient) {
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        const list = await this.client.list<NodeView>("/api/v1/nodes");
        this.samples.push({ at: Date.now(), nodes: list.items });
      } catch (error) {
        this.failures.push(`${new Date().toISOString()} ${(error as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

describe("upgrading a cluster", () => {
  let sim: RunningSimCloud;
  let plane: RunningSlipway;
  let kc: string;
  let workload: KubeClient;
  let workloadKc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const apply = (text: string) => void kubectlOk(kc, ["apply", "-f", "-"], text);
  const operation = (name: string) => JSON.parse(ok("get", "operation", name, "-o", "json")) as OperationView;
  const machines = (cluster: string) => (JSON.parse(ok("get", "machines", "-l", `slipway.dev/cluster=${cluster}`, "-o", "json")) as { items: MachineView[] }).items;
  const percents: number[] = [];
  const waitOperation = (name: string, timeoutMs = 90_000) =>
    eventually(
      () => {
        const op = operation(name);
        const phase = op.status?.phase;
        if (op.status?.percentComplete !== undefined) percents.push(op.status.percentComplete);
        if (phase && phase !== "InProgress" && phase !== "Succeeded") throw new StopWaiting(`operation ${name} ended ${phase}: ${JSON.stringify(op.status)}`);
        return phase === "Succeeded" && op;
      },
      { timeoutMs, intervalMs: 250, what: `operation ${name} to succeed` },
    );
  const etcdRecord = async () => {
    const cm = await workload.get<{ data: Record<string, string> }>("/api/v1/namespaces/kube-system/configmaps/etcd-membership");
    return { members: JSON.parse(cm.data.members!) as string[], history: JSON.parse(cm.data.history!) as EtcdSnapshot[], broken: cm.data.broken };
  };
  const nodes = async () => (await workload.list<NodeView>("/api/v1/nodes")).items;
  /** Every running instance belongs to exactly one machine, and every machine has exactly one. */
  const assertOneInstancePerMachine = async (cluster: string) => {
    const live = machines(cluster);
    const instances = (await sim.resourcesOf(`default/${cluster}`)).filter((r): r is Instance => r.kind === "instance" && !["terminated", "deleted", "stopping"].includes(r.state));
    const owners = instances.map((i) => i.tags["slipway.dev/owner-uid"]).sort();
    assert.deepEqual(owners, live.map((m) => m.metadata.uid).sort(), "one instance per machine, none without a machine");
    return live;
  };
  const assertQuorumKept = async (controlPlane: number) => {
    const record = await etcdRecord();
    assert.equal(record.broken, undefined, "the emulated control plane was never broken");
    const lost = record.history.filter((h) => !h.quorum);
    assert.deepEqual(lost, [], "etcd never lost quorum");
    assert.ok(record.history.every((h) => h.healthy.length === h.members.length), `no member was ever left unhealthy: ${JSON.stringify(record.history.filter((h) => h.healthy.length !== h.members.length))}`);
    const cpNodes = (await nodes()).filter(isControlPlane).map((n) => n.metadata.name).sort();
    assert.equal(cpNodes.length, controlPlane);
    assert.deepEqual([...record.members].sort(), cpNodes, "etcd's members are exactly the control-plane nodes");
    return record;
  };

  before(async () => {
    sim = await startSimCloud({ profile: "instant", seed: 14 });
    plane = await startSlipway({ args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "100ms"] });
    kc = plane.kubeconfig;
    apply(`apiVersion: slipway.dev/v1alpha1\nkind: Connection\nmetadata:\n  name: east\nspec:\n  provider: sim\n  region: sim-east-1\n`);
  });

  after(async () => {
    await plane.stop("SIGTERM");
    await sim.stop();
    removeDir(plane.dataDir);
  });

  it("rolls the control plane one machine at a time, then the workers, keeping etcd's quorum and the API up", async () => {
    apply(manifest("up", OLD));
    await waitOperation("up-create-1", 120_000);
    const text = Buffer.from(ok("get", "secret", "up-kubeconfig", "-o", "jsonpath={.data.value}"), "base64").toString("utf8");
    workloadKc = join(plane.dataDir, "up.kubeconfig");
    writeFileSync(workloadKc, text);
    workload = KubeClient.fromKubeconfig(text, { timeoutMs: 5000 });
    assert.deepEqual([...new Set((await nodes()).map(versionOf))], [OLD]);
    await assertQuorumKept(3);

    const watcher = new ApiWatcher(workload);
    const patched = kubectl(kc, ["patch", "cluster", "up", "--type", "merge", "-p", JSON.stringify({ spec: { kubernetesVersion: NEW } })]);
    assert.equal(patched.status, 0, patched.stderr);
    await eventually(() => (JSON.parse(ok("get", "cluster", "up", "-o", "json")) as { status?: { phase?: string } }).status?.phase === "Updating", { timeoutMs: 10_000, intervalMs: 100, what: "the cluster Updating" });
    percents.length = 0;
    await waitOperation("up-upgrade-2", 120_000);
    await watcher.stop();

    // Every node at the new version, and the cluster says so from what its nodes report.
    const after = await nodes();
    assert.equal(after.length, 6);
    assert.deepEqual([...new Set(after.map(versionOf))], [NEW]);
    const cluster = JSON.parse(ok("get", "cluster", "up", "-o", "json")) as { status: { version?: string; phase?: string; nodes?: { version?: string }[] } };
    assert.equal(cluster.status.version, NEW);
    assert.equal(cluster.status.phase, "Running");
    assert.ok(cluster.status.nodes?.every((n) => n.version === NEW));

    // The API answered throughout, and no worker ran the new version while a control-plane node ran the old.
    assert.deepEqual(watcher.failures, [], "the cluster's API answered every poll");
    assert.ok(watcher.samples.some((sample) => new Set(sample.nodes.map(versionOf)).size === 2), `polled during the upgrade (${watcher.samples.length} answers)`);
    for (const sample of watcher.samples) {
      const newWorkers = sample.nodes.filter((n) => !isControlPlane(n) && versionOf(n) === NEW);
      const oldControlPlane = sample.nodes.filter((n) => isControlPlane(n) && versionOf(n) === OLD);
      assert.ok(newWorkers.length === 0 || oldControlPlane.length === 0, `a worker at ${NEW} while ${oldControlPlane.map((n) => n.metadata.name).join(", ")} still ran ${OLD}`);
    }

    // etcd: never more than one extra member, never a lost quorum; its members are the new nodes.
    const record = await assertQuorumKept(3);
    const during = record.history.slice(record.history.findIndex((h) => h.members.length === 3));
    assert.ok(during.every((h) => h.members.length >= 3 && h.members.length <= 4), JSON.stringify(record.history.map((h) => [h.at, h.event, h.members.length])));
    assert.equal(record.history.filter((h) => h.event.endsWith("removed")).length, 3, "each old member removed by a member-remove step");

    // An honest percentage: it moved through the upgrade, never backwards.
    assert.ok(percents.some((p) => p > 0 && p < 100), `an intermediate percentage was seen: ${percents.join(",")}`);
    assert.deepEqual(percents, [...percents].sort((a, b) => a - b), "the percentage never went back");

    // Events for the steps: the cluster's (its later ones may fall to the per-object event rate limit in a
    // run this fast), each leaving machine's, and each pool's.
    const reasons = ok("get", "events", "-o", "jsonpath={range .items[*]}{.reason}{\"\\n\"}{end}").split("\n");
    for (const reason of ["UpgradingControlPlane", "DrainingNode", "EtcdMemberRemoved", "LeftLoadBalancer", "RollingMachines"]) {
      assert.ok(reasons.includes(reason), `an event ${reason}`);
    }
    await assertOneInstancePerMachine("up");
  });

  it("refuses a downgrade and a skipped minor version, naming the rule, and changes nothing", () => {
    const downgrade = kubectl(kc, ["patch", "cluster", "up", "--type", "merge", "-p", JSON.stringify({ spec: { kubernetesVersion: OLD } })]);
    assert.notEqual(downgrade.status, 0);
    assert.match(downgrade.stderr, /spec\.kubernetesVersion: Invalid value: "v1\.30\.14": version skew rule "no downgrade"/);
    // A cluster at v1.29 (paused: never built, its spec is what is checked) cannot go to v1.31 at once.
    apply(manifest("old", "v1.29.15", "  paused: true\n"));
    const skip = kubectl(kc, ["patch", "cluster", "old", "--type", "merge", "-p", JSON.stringify({ spec: { kubernetesVersion: NEW } })]);
    assert.notEqual(skip.status, 0);
    assert.match(skip.stderr, /spec\.kubernetesVersion: Invalid value: "v1\.31\.13": version skew rule "one minor version at a time": the cluster runs v1\.29\.15, so the next upgrade is to v1\.30\.x/);
    assert.equal(ok("get", "cluster", "old", "-o", "jsonpath={.spec.kubernetesVersion}"), "v1.29.15");
    assert.equal(ok("get", "cluster", "up", "-o", "jsonpath={.spec.kubernetesVersion}"), NEW);
    ok("delete", "cluster", "old", "--wait=false");
  });

  it("finishes an upgrade after slipway up is killed in the middle of it, with no machine duplicated or lost", async () => {
    ok("patch", "cluster", "up", "--type", "merge", "-p", JSON.stringify({ spec: { kubernetesVersion: NEXT } }));
    // Kill it once the control plane is on its way: a machine at the new version is made, old ones are left.
    await eventually(
      () => {
        const cp = machines("up").filter((m) => m.spec.role === "control-plane");
        return cp.some((m) => m.spec.version === NEXT) && cp.some((m) => m.spec.version !== NEXT);
      },
      { timeoutMs: 60_000, intervalMs: 50, what: "the control plane half-way through its upgrade" },
    );
    await plane.stop("SIGKILL");
    plane = await startSlipway({ dataDir: plane.dataDir, port: plane.port, args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "100ms"] });
    await waitOperation("up-upgrade-3", 120_000);
    const live = await assertOneInstancePerMachine("up");
    assert.equal(live.length, 6);
    assert.deepEqual([...new Set((await nodes()).map(versionOf))], [NEXT]);
    await assertQuorumKept(3);
  });

  it("scales the control plane 3 → 1 → 3, removing and adding etcd members one at a time, and a pause holds it between steps", async () => {
    const watcher = new ApiWatcher(workload);
    ok("patch", "cluster", "up", "--type", "merge", "-p", JSON.stringify({ spec: { controlPlane: { replicas: 1 } } }));
    // Paused half-way, the scale-down stops between steps: what is there stays as it is until it resumes.
    await eventually(async () => (await etcdRecord()).members.length === 2, { timeoutMs: 30_000, intervalMs: 20, what: "one member removed" });
    ok("patch", "cluster", "up", "--type", "merge", "-p", JSON.stringify({ spec: { paused: true } }));
    const held = () => machines("up").filter((m) => m.spec.role === "control-plane" && !m.metadata.deletionTimestamp).map((m) => m.metadata.name).sort();
    const atPause = held();
    await new Promise((r) => setTimeout(r, 1500)); // a negative check: nothing may move while paused
    assert.deepEqual(held(), atPause, "no control-plane machine removed while paused");
    ok("patch", "cluster", "up", "--type", "merge", "-p", JSON.stringify({ spec: { paused: false } }));
    // Each write of the spec has its operation; the last one (generation 6) sees the scale-down through.
    await waitOperation("up-update-6");
    assert.deepEqual((await assertQuorumKept(1)).members.length, 1);
    ok("patch", "cluster", "up", "--type", "merge", "-p", JSON.stringify({ spec: { controlPlane: { replicas: 3 } } }));

    await waitOperation("up-update-7");
    await watcher.stop();
    assert.deepEqual(watcher.failures, [], "the cluster's API answered every poll");
    const record = await assertQuorumKept(3);
    for (let i = 1; i < record.history.length; i++) assert.ok(Math.abs(record.history[i]!.members.length - record.history[i - 1]!.members.length) <= 1, "membership changes one member at a time");
    await assertOneInstancePerMachine("up");
  });

  it("replaces a failed first control-plane machine with one that joins (not a second kubeadm init), removing its member first", async () => {
    const first = machines("up").find((m) => m.metadata.name === "up-cp-0")!;
    assert.ok(first?.status?.instanceId, "up-cp-0 runs");
    await sim.admin.killInstance(first.status.instanceId);
    await eventually(
      () => {
        const cp = machines("up").filter((m) => m.spec.role === "control-plane");
        const replacement = cp.find((m) => m.metadata.name === "up-cp-0" && m.metadata.uid !== first.metadata.uid);
        return replacement?.status?.phase === "Running" && cp.length === 3 && cp.every((m) => m.status?.phase === "Running") && replacement;
      },
      { timeoutMs: 90_000, intervalMs: 250, what: "up-cp-0 replaced and Running" },
    );
    const annotations = JSON.parse(ok("get", "machine", "up-cp-0", "-o", "jsonpath={.metadata.annotations}") || "{}") as Record<string, string>;
    assert.equal(annotations["slipway.dev/bootstrap"], undefined, "the replacement joins the cluster");
    const record = await etcdRecord();
    assert.equal(record.broken, undefined);
    assert.deepEqual(record.history.filter((h) => !h.quorum), [], "quorum kept: one member of three was down");
    const cpNodes = (await nodes()).filter(isControlPlane).map((n) => n.metadata.name).sort();
    assert.deepEqual([...record.members].sort(), cpNodes);
    assert.ok(record.history.some((h) => h.event === "member up-cp-0 removed"), "the dead machine's member was removed before its replacement joined");
  });
});
