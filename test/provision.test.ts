// Cluster provisioning end to end: a sim cloud in its own process, `slipway up` against it, the real
// kubectl on both the control plane and the clusters it makes.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SLIPWAY_BIN, StopWaiting, eventually, kubectl, kubectlOk, removeDir, REPO, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "./support/simcloud.ts";
import type { CloudResource, LoadBalancer } from "../src/simcloud/types.ts";
import { parseKubeconfig } from "../src/bootstrap/kubeconfig.ts";

interface ClusterView {
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    conditions?: { type: string; status: string }[];
    controlPlane?: { ready: number; desired: number };
    workers?: { ready: number; desired: number };
    version?: string;
    lastUpdated?: string;
    nodes?: { name: string; role: string; machine: string; ready: boolean; version?: string }[];
  };
}

interface Owned {
  metadata: { uid: string; ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[] };
}
interface PoolView extends Owned {
  spec: { providerIDList?: string[] };
}
interface NodeView {
  metadata: { name: string; labels: Record<string, string> };
  spec: { providerID?: string };
}
interface MachineView {
  metadata: { name: string };
  spec: { role: string; pool?: string; scaleSetInstance?: { instanceId: string } };
  status?: { nodeName?: string; providerID?: string; conditions?: { type: string; status: string }[] };
}

const live = (resources: CloudResource[]) => resources.filter((r) => !["terminated", "deleted"].includes(r.state));

function manifest(name: string, options: { region?: string; cp?: number; pools?: { name: string; replicas: number; region?: string }[]; visibility?: "public" | "private" } = {}): string {
  const region = options.region ?? "sim-east-1";
  const pools = options.pools ?? [];
  const regions = [...new Set([region, ...pools.map((p) => p.region ?? region)])];
  const connections = regions.map((r) => `apiVersion: slipway.dev/v1alpha1\nkind: Connection\nmetadata:\n  name: ${r}\nspec:\n  provider: sim\n  region: ${r}\n`);
  const workers = pools.map((p) => `    - name: ${p.name}\n      connection: ${p.region ?? region}\n      machineType: s1.small\n      replicas: ${p.replicas}\n`).join("");
  const cluster = `apiVersion: slipway.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\nspec:\n  controlPlane:\n    connection: ${region}\n    machineType: s1.medium\n    replicas: ${options.cp ?? 1}\n${options.visibility ? `  apiServer:\n    visibility: ${options.visibility}\n` : ""}  workers:\n${workers || "    []\n"}`;
  return [...connections, cluster].join("---\n");
}

describe("provisioning clusters on the sim cloud", () => {
  let sim: RunningSimCloud;
  let plane: RunningSlipway;
  let kc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const apply = (text: string) => void kubectlOk(kc, ["apply", "-f", "-"], text);
  const cluster = (name: string): ClusterView => JSON.parse(ok("get", "cluster", name, "-o", "json")) as ClusterView;
  // The controllers run on their worker thread here (the other end-to-end tests run them on the API
  // server's event loop, the default): provisioning, restart and deletion through the object service's proxy.
  const upArgs = () => ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "200ms", "--controllers-in-worker"];
  const waitPhase = (name: string, phase: string, timeoutMs = 60_000) =>
    eventually(() => {
      const c = cluster(name);
      if (c.status?.phase === "Failed" && phase !== "Failed") throw new StopWaiting(`cluster ${name} failed: ${c.status.reason}: ${c.status.message}`);
      return c.status?.phase === phase ? c : undefined;
    }, { timeoutMs, intervalMs: 250, what: `cluster ${name} to be ${phase}` });
  const workloadKubeconfig = (name: string) => {
    const file = join(plane.dataDir, `${name}.kubeconfig`);
    writeFileSync(file, Buffer.from(ok("get", "secret", `${name}-kubeconfig`, "-o", "jsonpath={.data.value}"), "base64"));
    return file;
  };
  const deleteAndCheckNothingLeft = async (name: string) => {
    ok("delete", "cluster", name, "--timeout=120s");
    assert.deepEqual(live(await sim.resourcesOf(`default/${name}`)).map((r) => `${r.kind} ${r.id} ${r.state}`), []);
  };

  before(async () => {
    sim = await startSimCloud({ profile: "fast", seed: 11 });
    plane = await startSlipway({ args: upArgs() });
    kc = plane.kubeconfig;
  });

  after(async () => {
    await plane.stop("SIGTERM");
    await sim.stop();
    removeDir(plane.dataDir);
  });

  it("brings the quickstart cluster to Running with every node Ready, and deletes everything it made", async () => {
    const r = kubectl(kc, ["apply", "-f", join(REPO, "examples/quickstart.yaml")]);
    assert.equal(r.status, 0, r.stderr);
    const running = await waitPhase("quickstart", "Running");
    assert.equal(running.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    // status.nodes: every node with its machine, Ready, at the kubelet version its node reports.
    const status = (JSON.parse(ok("get", "cluster", "quickstart", "-o", "json")) as ClusterView).status;
    assert.equal(status?.nodes?.length, 7);
    assert.ok(status?.nodes?.every((n) => n.ready && n.version === "v1.31.2"), JSON.stringify(status?.nodes));
    assert.deepEqual(status?.nodes?.map((n) => n.role).slice(0, 3), ["control-plane", "control-plane", "control-plane"]);
    assert.equal(status?.version, "v1.31.2");
    assert.ok(status?.lastUpdated);
    const listed = ok("get", "clusters,machinepools,machines");
    assert.match(listed, /quickstart\s+Running\s+3\/3\s+4\/4\s+v1\.31\.2/);
    // Each pool's counts as Cluster API reports them: desired, replicas, ready, available, updated.
    assert.match(listed, /^NAME\s+CLUSTER\s+DESIRED\s+REPLICAS\s+READY\s+AVAILABLE\s+UPDATED\s+PHASE\s+AGE$/m);
    for (const pool of ["east", "west"]) assert.match(listed, new RegExp(`quickstart-${pool}\\s+quickstart\\s+2\\s+2\\s+2\\s+2\\s+2\\s+Running`));
    assert.equal((listed.match(/machine\.slipway\.dev\/\S+\s+quickstart\s+\S+\s+Running/g) ?? []).length, 7);
    // The controllers on their thread are ready, and their metrics are served with the API server's.
    assert.match(ok("get", "--raw", "/readyz?verbose"), /\[\+\]controllers ok/);
    // (Whichever outcome: a Running cluster's last reconcile may still ask to be looked at again.)
    await eventually(() => /^slipway_reconcile_duration_seconds_count\{controller="cluster",outcome="(success|requeue)"\} [1-9]/m.test(ok("get", "--raw", "/metrics")), {
      what: "the cluster controller's reconciles in /metrics",
    });

    const workload = workloadKubeconfig("quickstart");
    const nodes = kubectl(workload, ["get", "nodes", "--no-headers"]);
    assert.equal(nodes.status, 0, nodes.stderr);
    const lines = nodes.stdout.trim().split("\n");
    assert.equal(lines.length, 7);
    for (const line of lines) assert.match(line, /\sReady\s.*v1\.31\.2$/);
    assert.equal(lines.filter((l) => /control-plane/.test(l)).length, 3);
    // Every node is linked to its machine by the machine's node name and provider ID (a pool's nodes are
    // named after their instances, its machines after the pool and the instance).
    const nodeObjects = (JSON.parse(kubectlOk(workload, ["get", "nodes", "-o", "json"])) as { items: NodeView[] }).items;
    const machineObjects = (JSON.parse(ok("get", "machines", "-o", "json")) as { items: MachineView[] }).items;
    assert.deepEqual(
      status!.nodes!.map((n) => {
        const m = machineObjects.find((x) => x.metadata.name === n.machine);
        return [n.name, m?.status?.nodeName, m?.status?.providerID];
      }),
      status!.nodes!.map((n) => [n.name, n.name, nodeObjects.find((x) => x.metadata.name === n.name)?.spec.providerID]),
    );

    // The worker pools are on scale sets, one per region, each with its BootstrapConfig and SimMachinePool
    // owned by the pool; its providerIDList is its nodes' provider IDs, its machines stand for the instances.
    const cli = spawnSync(process.execPath, [SLIPWAY_BIN, "sim-cloud", "resources", "--endpoint", sim.url, "--token", SIM_TOKEN], { encoding: "utf8" });
    assert.equal(cli.status, 0, cli.stderr);
    for (const [pool, region] of [["east", "sim-east-1"], ["west", "sim-west-1"]] as const) {
      const name = `quickstart-${pool}`;
      const mp = JSON.parse(ok("get", "machinepool", name, "-o", "json")) as PoolView;
      for (const kind of ["bootstrapconfig", "simmachinepool"]) {
        const owner = (JSON.parse(ok("get", kind, name, "-o", "json")) as Owned).metadata.ownerReferences?.find((o) => o.controller);
        assert.deepEqual(owner && [owner.kind, owner.name, owner.uid], ["MachinePool", name, mp.metadata.uid], `${kind} ${name}`);
      }
      const infra = JSON.parse(ok("get", "simmachinepool", name, "-o", "json")) as { status?: { scaleSetId?: string; instances?: { instanceId: string }[] } };
      const set = live(await sim.resourcesOf("default/quickstart")).find((r) => r.kind === "scaleSet" && r.id === infra.status?.scaleSetId);
      assert.equal(set?.region, region, `${name}'s scale set in ${region}`);
      assert.match(cli.stdout, new RegExp(`^scaleSet\\s+${set!.id}\\s`, "m"), cli.stdout);
      const poolNodes = nodeObjects.filter((n) => n.metadata.labels["slipway.dev/pool"] === name);
      assert.equal(poolNodes.length, 2);
      assert.deepEqual(mp.spec.providerIDList, poolNodes.map((n) => n.spec.providerID).sort());
      const poolMachines = machineObjects.filter((m) => m.spec.pool === name);
      assert.deepEqual(poolMachines.map((m) => m.spec.scaleSetInstance?.instanceId).sort(), infra.status!.instances!.map((i) => i.instanceId).sort());
    }

    // What the conditions claim holds: the network plugin's DaemonSet reports a ready pod on every node,
    // and the cloud reports every control-plane machine a healthy target of the load balancer.
    assert.equal(running.status?.conditions?.find((c) => c.type === "NetworkPluginInstalled")?.status, "True");
    const ds = JSON.parse(kubectl(workload, ["get", "ds", "calico-node", "-n", "kube-system", "-o", "json"]).stdout) as { status: Record<string, number> };
    assert.deepEqual([ds.status.desiredNumberScheduled, ds.status.numberReady, ds.status.numberAvailable], [7, 7, 7]);
    const lb = live(await sim.resourcesOf("default/quickstart")).find((r) => r.kind === "loadBalancer") as LoadBalancer;
    assert.deepEqual((await sim.api.getLoadBalancer(lb.region, lb.id)).targets.map((t) => t.health), ["healthy", "healthy", "healthy"]);
    const cps = machineObjects.filter((m) => m.spec.role === "control-plane");
    assert.equal(cps.length, 3);
    for (const m of cps) assert.equal(m.status?.conditions?.find((c) => c.type === "LoadBalancerTarget")?.status, "True");

    const instances = live(await sim.resourcesOf("default/quickstart")).filter((r) => r.kind === "instance");
    assert.equal(instances.length, 7, "one instance per machine");
    // What the cloud keeps for each instance names its bootstrap secret and holds no token or key; every
    // machine's bootstrap secret was deleted once its node joined, and only each scale set's (its
    // instances' join, for those it launches next) is left, owned by the pool's SimMachinePool.
    for (const instance of instances) {
      const { userData } = await sim.api.getInstanceUserData(instance.region, instance.id);
      assert.match(userData, new RegExp(`slipway-bootstrap-fetch --secret-id secret-[0-9a-f]{17} --region ${instance.region} --endpoint ${sim.url}`));
      assert.doesNotMatch(userData, /PRIVATE KEY|token: [a-z0-9]{6}\.[a-z0-9]{16}|BootstrapToken|JoinConfiguration/, `instance ${instance.id}'s user data holds no secret`);
    }
    const secretOwners = live(await sim.resourcesOf("default/quickstart")).filter((r) => r.kind === "secret").map((r) => r.tags["slipway.dev/owner"]);
    assert.deepEqual([...new Set(secretOwners)].sort(), ["SimMachinePool/quickstart-east", "SimMachinePool/quickstart-west"], "only the scale sets' bootstrap secrets are left");

    // The API has a stable name in the connection's DNS zone: the kubeconfig (which kubectl used above),
    // the cluster's endpoint and kubeadm's certificates name it, not the load balancer's generated name.
    const apiName = `api.quickstart.${lb.region}.sim.slipway.internal`;
    assert.equal(parseKubeconfig(readFileSync(workload, "utf8")).tlsServerName, apiName);
    assert.equal(ok("get", "cluster", "quickstart", "-o", "jsonpath={.status.controlPlaneEndpoint.host}"), apiName);
    const records = live(await sim.resourcesOf("default/quickstart")).filter((r) => r.kind === "dnsRecord") as (CloudResource & { name?: string })[];
    assert.deepEqual(records.map((r) => r.name).sort(), [`api-int.quickstart.${lb.region}.sim.slipway.internal`, apiName]);
    await deleteAndCheckNothingLeft("quickstart");
  });

  it("scales a pool up and down, and the control plane from 1 to 3, of a cluster whose API is private", async () => {
    apply(manifest("scaled", { pools: [{ name: "work", replicas: 1 }], visibility: "private" }));
    await waitPhase("scaled", "Running");
    // A private API: an internal load balancer, only the name api-int (in the kubeconfig, the endpoint and
    // the certificate kubectl checks below), reached here through the sim cloud's forwarding into its network.
    const internalName = "api-int.scaled.sim-east-1.sim.slipway.internal";
    const made = live(await sim.resourcesOf("default/scaled"));
    const internalLb = made.find((r) => r.kind === "loadBalancer") as LoadBalancer;
    assert.equal(internalLb.scheme, "internal");
    assert.deepEqual(made.filter((r) => r.kind === "dnsRecord").map((r) => (r as CloudResource & { name?: string }).name), [internalName]);
    assert.deepEqual(made.filter((r) => r.kind === "publicIp"), []);
    assert.equal(parseKubeconfig(readFileSync(workloadKubeconfig("scaled"), "utf8")).tlsServerName, internalName);
    assert.equal(ok("get", "cluster", "scaled", "-o", "jsonpath={.status.controlPlaneEndpoint.host}"), internalName);
    const refused = kubectl(kc, ["patch", "cluster", "scaled", "--type", "merge", "-p", JSON.stringify({ spec: { apiServer: { visibility: "public" } } })]);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /spec\.apiServer\.visibility: Invalid value: "public": field is immutable/);
    ok("patch", "cluster", "scaled", "--type", "merge", "-p", JSON.stringify({ spec: { controlPlane: { replicas: 3 }, workers: [{ name: "work", connection: "sim-east-1", machineType: "s1.small", replicas: 3 }] } }));
    await eventually(() => {
      const c = cluster("scaled");
      return c.status?.phase === "Running" && c.status.controlPlane?.ready === 3 && c.status.workers?.ready === 3;
    }, { timeoutMs: 60_000, what: "3 control-plane and 3 worker nodes" });
    const wl = workloadKubeconfig("scaled");
    assert.equal(kubectl(wl, ["get", "nodes", "--no-headers"]).stdout.trim().split("\n").length, 6);
    // The control plane and the pool each spread over the region's three zones, shown per machine.
    const placed = (JSON.parse(ok("get", "machines", "-o", "json")) as { items: { spec: { clusterName: string; role: string }; status?: { zone?: string } }[] }).items.filter((m) => m.spec.clusterName === "scaled");
    for (const role of ["control-plane", "worker"]) {
      assert.deepEqual(placed.filter((m) => m.spec.role === role).map((m) => m.status?.zone).sort(), ["sim-east-1a", "sim-east-1b", "sim-east-1c"], role);
    }
    assert.match(ok("get", "machines", "-o", "wide").split("\n")[0]!, /\bZONE\b/);

    ok("patch", "cluster", "scaled", "--type", "merge", "-p", JSON.stringify({ spec: { workers: [{ name: "work", connection: "sim-east-1", machineType: "s1.small", replicas: 1 }] } }));
    await eventually(() => {
      const c = cluster("scaled");
      const nodes = kubectl(wl, ["get", "nodes", "--no-headers"]).stdout.trim().split("\n");
      return c.status?.phase === "Running" && c.status.workers?.ready === 1 && nodes.length === 4;
    }, { timeoutMs: 60_000, what: "the pool to shrink to one node" });
    assert.equal(live(await sim.resourcesOf("default/scaled")).filter((r) => r.kind === "instance").length, 4);
    await deleteAndCheckNothingLeft("scaled");
  });

  it("refuses an over-quota cluster before building anything, and goes on once the quota is raised", async () => {
    await sim.admin.setQuota("default", "sim-central-1", { vcpus: 4 });
    apply(manifest("big", { region: "sim-central-1", pools: [{ name: "work", replicas: 3 }] }));
    const failed = await waitPhase("big", "Failed");
    assert.equal(failed.status?.reason, "QuotaExceeded");
    assert.match(failed.status?.message ?? "", /vCPUs in connection "sim-central-1" is short by 1/);
    assert.deepEqual(await sim.resourcesOf("default/big"), [], "nothing was created");
    assert.match(ok("get", "events", "--field-selector", "involvedObject.name=big"), /QuotaExceeded/);
    await sim.admin.setQuota("default", "sim-central-1", { vcpus: 64 });
    // Validated again (every 30 poll intervals after a failure: 6 s here), it goes on: from then on a failure ends the wait.
    await eventually(() => cluster("big").status?.phase !== "Failed", { timeoutMs: 60_000, intervalMs: 250, what: "cluster big to be validated again" });
    const running = await waitPhase("big", "Running", 90_000);
    assert.deepEqual([running.status?.workers?.ready, running.status?.controlPlane?.ready], [3, 1]);
    // The create's record keeps saying it failed (a client that stopped polling was told the truth), and
    // now also that the cluster recovered under the same generation.
    const create = await eventually(() => {
      const op = JSON.parse(ok("get", "operation", "big-create-1", "-o", "json")) as { status?: { phase?: string; recoveredTime?: string; error?: { code: string }; message?: string } };
      return op.status?.recoveredTime !== undefined && op;
    }, { timeoutMs: 30_000, intervalMs: 250, what: "the create operation to note the recovery" });
    assert.deepEqual([create.status?.phase, create.status?.error?.code], ["Failed", "QuotaExceeded"]);
    assert.equal(create.status?.message, "Cluster big failed (QuotaExceeded), then recovered: the change is applied and every node is Ready");
    await deleteAndCheckNothingLeft("big");
  });

  it("reaches Running through transient errors and an instance death, with exactly the declared instances", async () => {
    await sim.admin.setFaults({ errors: { "*": { InternalError: 0.1 } } });
    try {
      apply(manifest("rough", { region: "sim-west-1", pools: [{ name: "work", replicas: 2 }] }));
      await eventually(() => (cluster("rough").status?.workers?.ready ?? 0) >= 1, { timeoutMs: 60_000, what: "a first worker" });
      // The test's own look at the cloud meets the injected faults too: it is retried like any other call.
      const victim = await eventually(async () => live(await sim.resourcesOf("default/rough")).find((r) => r.kind === "instance" && r.tags["slipway.dev/role"] !== undefined && /work/.test(r.tags["slipway.dev/owner"] ?? "")), {
        what: "a worker instance to kill",
      });
      await sim.admin.killInstance(victim.id);
      await eventually(async () => {
        const c = cluster("rough");
        const instances = live(await sim.resourcesOf("default/rough")).filter((r) => r.kind === "instance");
        return c.status?.phase === "Running" && instances.length === 3 && !instances.some((i) => i.id === victim.id);
      }, { timeoutMs: 90_000, what: "the cluster to recover with 3 live instances" });
    } finally {
      await sim.admin.setFaults({});
    }
    await deleteAndCheckNothingLeft("rough");
  });

  it("survives kill -9 of the control plane at any moment: no duplicate instance, Running, nothing left after delete", async () => {
    apply(manifest("sturdy", { cp: 3, pools: [{ name: "work", replicas: 2 }] }));
    // Seeded moments, spread over the creation.
    const moments = [150, 900, 400, 1300];
    for (const ms of moments) {
      await new Promise((r) => setTimeout(r, ms));
      await plane.stop("SIGKILL");
      plane = await startSlipway({ dataDir: plane.dataDir, port: plane.port, args: upArgs() });
    }
    await waitPhase("sturdy", "Running", 90_000);
    const instances = (await sim.resourcesOf("default/sturdy")).filter((r) => r.kind === "instance");
    const perOwner = new Map<string, number>();
    for (const i of instances) perOwner.set(i.tags["slipway.dev/owner"] ?? "", (perOwner.get(i.tags["slipway.dev/owner"] ?? "") ?? 0) + 1);
    assert.deepEqual([...perOwner.values()].filter((n) => n > 1), [], `instances per machine: ${JSON.stringify([...perOwner])}`);
    assert.equal(live(instances).length, 5);
    await deleteAndCheckNothingLeft("sturdy");
  });
});
