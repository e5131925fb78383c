// Pools a cluster declares and pools created on their own, end to end: `slipway up` with its embedded
// sim cloud, kubectl against its API. A MachinePool applied on its own is adopted by the cluster it
// names, provisions, is scaled with `kubectl scale`, and goes away with the cluster; a declared pool's
// replicas edited directly are reverted with a Warning event saying why; `kubectl get machinepools`
// shows Cluster API's counts and the pool lists its nodes' provider IDs; bad input is reported or
// refused naming the field.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SLIPWAY_BIN, eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

interface PoolView {
  metadata: { uid: string; ownerReferences?: { kind: string; name: string; controller?: boolean; blockOwnerDeletion?: boolean }[] };
  spec: { replicas?: number; selector?: { matchLabels?: Record<string, string> }; providerIDList?: string[] };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    replicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    updatedReplicas?: number;
    selector?: string;
    nodeRefs?: { name: string; uid?: string }[];
    bootstrapReady?: boolean;
    infrastructureReady?: boolean;
  };
}

const SPEC = { connection: "sim", machineType: "s1.small" };
/** A sim Connection and a Cluster declaring one worker pool of 1 machine, as a List for kubectl apply. */
const CLUSTER = JSON.stringify({
  apiVersion: "v1",
  kind: "List",
  items: [
    { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: "sim" }, spec: { provider: "sim", region: "sim-east-1" } },
    {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: "demo" },
      spec: { controlPlane: { connection: "sim", machineType: "s1.medium" }, workers: [{ name: "work", ...SPEC, replicas: 1 }] },
    },
  ],
});

function standalonePool(name: string, clusterName: string, replicas: number): string {
  return JSON.stringify({ apiVersion: "slipway.dev/v1alpha1", kind: "MachinePool", metadata: { name }, spec: { clusterName, ...SPEC, replicas } });
}

describe("machine pools created on their own and declared by the cluster", () => {
  let plane: RunningSlipway;
  let kc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const apply = (text: string) => void kubectlOk(kc, ["apply", "-f", "-"], text);
  const pool = (name: string) => JSON.parse(ok("get", "machinepool", name, "-o", "json")) as PoolView;
  const gone = (kind: string, name: string) => kubectl(kc, ["get", kind, name]).status !== 0;

  before(async () => {
    plane = await startSlipway({ args: ["--sim-profile", "instant", "--poll-interval", "100ms"] });
    kc = plane.kubeconfig;
  });

  after(async () => {
    await plane.stop("SIGTERM");
    removeDir(plane.dataDir);
  });

  it("reports a pool naming a missing cluster, and refuses a negative scale naming spec.replicas", async () => {
    apply(standalonePool("orphan", "nowhere", 1));
    const waiting = await eventually(() => {
      const p = pool("orphan");
      return p.status?.reason === "WaitingForCluster" && p;
    }, { what: "the orphan pool to report its missing cluster" });
    assert.equal(waiting.status?.phase, "Pending");
    assert.match(waiting.status?.message ?? "", /spec\.clusterName: Cluster "nowhere" does not exist/);
    assert.equal(ok("get", "machines", "-l", "slipway.dev/pool=orphan", "-o", "name").trim(), "");

    const refused = kubectl(kc, ["scale", "machinepool", "orphan", "--replicas", "-1"]);
    assert.notEqual(refused.status, 0);
    const viaApi = kubectl(kc, ["patch", "machinepool", "orphan", "--subresource", "scale", "--type", "merge", "-p", '{"spec":{"replicas":-1}}']);
    assert.notEqual(viaApi.status, 0);
    assert.match(viaApi.stderr, /spec\.replicas/);
    // Above the limit of a worker pool, through /scale and through the object itself.
    const tooMany = kubectl(kc, ["scale", "machinepool", "orphan", "--replicas", "1001"]);
    assert.notEqual(tooMany.status, 0);
    assert.match(tooMany.stderr, /spec\.replicas/);
    const edited = kubectl(kc, ["patch", "machinepool", "orphan", "--type", "merge", "-p", '{"spec":{"replicas":1001}}']);
    assert.notEqual(edited.status, 0);
    assert.match(edited.stderr, /spec\.replicas/);
    assert.equal(pool("orphan").spec.replicas, 1);
    // A selector that would not choose the pool's machines is refused, naming it; nothing is made.
    const selecting = JSON.parse(standalonePool("picky", "nowhere", 1)) as { spec: Record<string, unknown> };
    selecting.spec.selector = { matchLabels: { "slipway.dev/pool": "someone-else" } };
    const picky = kubectl(kc, ["apply", "-f", "-"], JSON.stringify(selecting));
    assert.notEqual(picky.status, 0);
    assert.match(picky.stderr, /spec\.selector: Invalid value: "slipway\.dev\/pool=someone-else": must select the pool's machines/);
    assert.ok(gone("machinepool", "picky"));
    ok("delete", "machinepool", "orphan", "--wait=true");
  });

  it("adopts a pool created on its own, scales it with kubectl scale, reverts a direct edit of a declared pool, and deletes both with the cluster", async () => {
    apply(CLUSTER);
    apply(standalonePool("extra", "demo", 1));
    const adopted = await eventually(() => {
      const p = pool("extra");
      return p.status?.phase === "Running" && p;
    }, { timeoutMs: 40_000, what: "the standalone pool to be adopted and Running" });
    const owner = adopted.metadata.ownerReferences?.find((o) => o.controller);
    assert.deepEqual(owner && { kind: owner.kind, name: owner.name, blockOwnerDeletion: owner.blockOwnerDeletion }, { kind: "Cluster", name: "demo", blockOwnerDeletion: true });
    assert.equal(adopted.status?.selector, "slipway.dev/cluster=demo,slipway.dev/pool=extra");
    assert.match(ok("get", "events", "--field-selector", "involvedObject.name=extra", "-o", "jsonpath={.items[*].reason}"), /AdoptedByCluster/);

    // The Scale, as an autoscaler reads it, and kubectl scale.
    const scale = JSON.parse(ok("get", "--raw", "/apis/slipway.dev/v1alpha1/namespaces/default/machinepools/extra/scale")) as { kind: string; spec: { replicas: number }; status: { replicas: number; selector: string } };
    assert.deepEqual([scale.kind, scale.spec.replicas, scale.status.replicas, scale.status.selector], ["Scale", 1, 1, "slipway.dev/cluster=demo,slipway.dev/pool=extra"]);
    const discovery = JSON.parse(ok("get", "--raw", "/apis/slipway.dev/v1alpha1")) as { resources: { name: string; group?: string; version?: string; kind: string }[] };
    const listed = discovery.resources.find((r) => r.name === "machinepools/scale");
    assert.deepEqual(listed && [listed.group, listed.version, listed.kind], ["autoscaling", "v1", "Scale"]);
    ok("scale", "machinepool", "extra", "--replicas", "3");
    const three = await eventually(() => {
      const p = pool("extra");
      return p.status?.readyReplicas === 3 && p.status.phase === "Running" && p.spec.providerIDList?.length === 3 && p;
    }, { timeoutMs: 30_000, what: "the standalone pool to run 3 machines" });

    // Cluster API's counts, as kubectl shows them, and the nodes the pool lists, as the workload cluster has them.
    const table = ok("get", "machinepools").trim().split("\n").map((line) => line.split(/\s+/));
    assert.deepEqual(table[0], ["NAME", "CLUSTER", "DESIRED", "REPLICAS", "READY", "AVAILABLE", "UPDATED", "PHASE", "AGE"]);
    assert.deepEqual(table.find((row) => row[0] === "extra")?.slice(0, 8), ["extra", "demo", "3", "3", "3", "3", "3", "Running"]);
    assert.deepEqual([three.status?.availableReplicas, three.status?.updatedReplicas, three.status?.bootstrapReady, three.status?.infrastructureReady], [3, 3, true, true]);
    assert.deepEqual(three.spec.selector, { matchLabels: { "slipway.dev/cluster": "demo", "slipway.dev/pool": "extra" } });
    const workload = join(plane.dataDir, "demo.kubeconfig");
    writeFileSync(workload, Buffer.from(ok("get", "secret", "demo-kubeconfig", "-o", "jsonpath={.data.value}"), "base64"));
    const nodes = (JSON.parse(kubectlOk(workload, ["get", "nodes", "-o", "json"])) as { items: { metadata: { name: string; uid: string }; spec: { providerID?: string } }[] }).items;
    const poolNodes = nodes.filter((n) => n.metadata.name.startsWith("extra-"));
    assert.equal(poolNodes.length, 3);
    assert.deepEqual(three.spec.providerIDList, poolNodes.map((n) => n.spec.providerID).sort());
    assert.deepEqual(three.status?.nodeRefs?.map((r) => [r.name, r.uid]), poolNodes.map((n) => [n.metadata.name, n.metadata.uid]));
    // slipway scale goes through the same subresource for a pool the cluster does not declare.
    const cli = spawnSync(process.execPath, [SLIPWAY_BIN, "--kubeconfig", kc, "scale", "machinepool", "extra", "--replicas", "2"], { encoding: "utf8" });
    assert.equal(cli.status, 0, cli.stderr);
    assert.equal(cli.stdout, "machinepool.slipway.dev/extra scaled to 2 (cluster demo)\n");
    // The cluster neither deletes nor rewrites a pool it does not declare.
    await eventually(() => pool("extra").status?.replicas === 2, { timeoutMs: 30_000, what: "the standalone pool to scale down to 2" });
    assert.equal(pool("extra").spec.replicas, 2);
    // The cluster counts the adopted pool's machines among the workers it wants, and is Ready with them.
    await eventually(() => {
      const c = JSON.parse(ok("get", "cluster", "demo", "-o", "json")) as { status?: { workers?: { desired: number; ready: number }; conditions?: { type: string; status: string }[] } };
      return c.status?.workers?.desired === 3 && c.status.workers.ready === 3 && c.status.conditions?.some((x) => x.type === "Ready" && x.status === "True");
    }, { timeoutMs: 30_000, what: "the cluster to want and have 3 Ready workers (1 declared, 2 adopted) and be Ready" });

    // A declared pool edited directly: the cluster's spec wins, and says so on the pool.
    await eventually(() => pool("demo-work").status?.phase === "Running", { timeoutMs: 30_000, what: "the declared pool to run" });
    ok("scale", "machinepool", "demo-work", "--replicas", "2");
    const event = await eventually(() => {
      const messages = ok("get", "events", "--field-selector", "involvedObject.name=demo-work,reason=ReplicasReverted", "-o", "jsonpath={.items[*].message}");
      return messages.trim() !== "" && messages;
    }, { timeoutMs: 20_000, what: "a ReplicasReverted event on demo-work" });
    assert.match(event, /spec\.replicas 2 reverted to 1: the pool is declared in Cluster demo/);
    assert.equal(pool("demo-work").spec.replicas, 1);

    // Marked as scaled from outside, the declared pool keeps the replicas it is given.
    ok("annotate", "machinepool", "demo-work", "cluster.x-k8s.io/replicas-managed-by=external-autoscaler");
    ok("scale", "machinepool", "demo-work", "--replicas", "2");
    await eventually(() => pool("demo-work").status?.readyReplicas === 2, { timeoutMs: 30_000, what: "the externally scaled pool to run 2 machines" });
    assert.equal(pool("demo-work").spec.replicas, 2);

    ok("delete", "cluster", "demo", "--wait=false");
    await eventually(() => gone("cluster", "demo") && gone("machinepool", "extra") && gone("machinepool", "demo-work"), {
      timeoutMs: 40_000,
      what: "the cluster and both pools to be gone",
    });
    assert.equal(ok("get", "machines", "-o", "name").trim(), "");
  });
});
