// Clusters Slipway built and a cluster it only knows (registered by its kubeconfig), and what is
// delivered to them: a ResourceSync applies manifests to each, puts back what is changed or deleted by
// hand, retries a cluster that cannot be reached without holding the others back, prunes a cluster that
// leaves its targets and everything when it is deleted. A sim cloud in its own process, `slipway up`
// against it, kubectl on the control plane and on each cluster; the registered cluster is reached through
// a proxy the test can cut.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { REPO, SLIPWAY_BIN, StopWaiting, eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "./support/simcloud.ts";
import { startProxy, type CuttableProxy } from "./support/proxy.ts";

interface ClusterSyncView {
  name: string;
  state: string;
  message?: string;
  appliedGeneration?: number;
  drifts?: number;
  resources?: { kind: string; name: string; state: string; message?: string }[];
}

interface SyncView {
  metadata: { generation: number };
  status?: { phase?: string; observedGeneration?: number; targets?: number; synced?: number; message?: string; clusters?: ClusterSyncView[] };
}

const connections = ["east:sim-east-1", "west:sim-west-1"]
  .map((c) => c.split(":"))
  .map(([name, region]) => `apiVersion: slipway.dev/v1alpha1\nkind: Connection\nmetadata:\n  name: ${name}\nspec:\n  provider: sim\n  region: ${region}\n`);

function clusterManifest(name: string, connection: string): string {
  return `apiVersion: slipway.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\nspec:\n  controlPlane:\n    connection: ${connection}\n    machineType: s1.medium\n`;
}

describe("clusters Slipway did not build, and resources delivered to clusters", () => {
  let sim: RunningSimCloud;
  let plane: RunningSlipway;
  let proxy: CuttableProxy;
  let kc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const apply = (text: string) => void kubectlOk(kc, ["apply", "-f", "-"], text);
  const sync = (name: string) => JSON.parse(ok("get", "resourcesync", name, "-o", "json")) as SyncView;
  const entry = (name: string, cluster: string) => sync(name).status?.clusters?.find((c) => c.name === cluster);
  /** A kubeconfig file for a built cluster, from its Secret. */
  const kubeconfigOf = (cluster: string): string => {
    const file = join(plane.dataDir, `${cluster}.kubeconfig`);
    writeFileSync(file, Buffer.from(ok("get", "secret", `${cluster}-kubeconfig`, "-o", "jsonpath={.data.value}"), "base64"));
    return file;
  };
  const on = (cluster: string, ...args: string[]) => kubectl(cluster === "ext" ? join(plane.dataDir, "ext.kubeconfig") : kubeconfigOf(cluster), args);
  const has = (cluster: string, kind: string, name: string, namespace = "demo") => on(cluster, "get", kind, name, "-n", namespace, "-o", "name").status === 0;
  const slipway = (...args: string[]): string => {
    const result = spawnSync(process.execPath, [SLIPWAY_BIN, "--kubeconfig", kc, ...args], { cwd: REPO, encoding: "utf8", timeout: 60_000 });
    assert.equal(result.status, 0, `slipway ${args.join(" ")}: ${result.stderr}`);
    return result.stdout;
  };

  before(async () => {
    sim = await startSimCloud({ profile: "instant", seed: 41 });
    plane = await startSlipway({ args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "100ms", "--resync-interval", "1s"] });
    kc = plane.kubeconfig;
    apply([...connections, clusterManifest("one", "east"), clusterManifest("two", "west"), clusterManifest("backing", "east")].join("---\n"));
    await eventually(() => ["one", "two", "backing"].every((c) => ok("get", "cluster", c, "-o", "jsonpath={.status.phase}") === "Running"), {
      timeoutMs: 120_000,
      intervalMs: 250,
      what: "three clusters Running",
    });
    // "ext" is a cluster Slipway only knows: its kubeconfig (the backing cluster's API, through a proxy) in a Secret.
    const backing = parse(Buffer.from(ok("get", "secret", "backing-kubeconfig", "-o", "jsonpath={.data.value}"), "base64").toString("utf8")) as {
      clusters: { cluster: { server: string } }[];
    };
    const server = new URL(backing.clusters[0]!.cluster.server);
    proxy = await startProxy({ host: server.hostname, port: Number(server.port) });
    backing.clusters[0]!.cluster.server = `https://127.0.0.1:${proxy.port}${server.pathname === "/" ? "" : server.pathname}`;
    const extKubeconfig = stringify(backing);
    writeFileSync(join(plane.dataDir, "ext.kubeconfig"), extKubeconfig);
    ok("create", "secret", "generic", "ext-kubeconfig", `--from-file=value=${join(plane.dataDir, "ext.kubeconfig")}`);
    apply(
      "apiVersion: slipway.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: ext\n  labels:\n    tier: external\nspec:\n  registration:\n    kubeconfigSecretRef:\n      name: ext-kubeconfig\n",
    );
  });

  after(async () => {
    await proxy?.close();
    await plane?.stop("SIGTERM");
    await sim?.stop();
    if (plane) removeDir(plane.dataDir);
  });

  it("shows a registered cluster with its reachability, version and nodes, and never builds anything for it", async () => {
    await eventually(() => ok("get", "cluster", "ext", "-o", "jsonpath={.status.phase}") === "Running", { timeoutMs: 30_000, what: "ext Running" });
    const row = ok("get", "cluster", "ext", "--no-headers").trim().split(/\s+/);
    // NAME PHASE CONTROL-PLANE WORKERS VERSION AGE
    assert.deepEqual(row.slice(0, 5), ["ext", "Running", "1/1", "0/0", "v1.31.2"]);
    assert.match(ok("get", "cluster", "ext", "-o", "jsonpath={.status.conditions[?(@.type=='Reachable')].status}"), /True/);
    assert.equal((await sim.resourcesOf("default/ext")).length, 0, "nothing built in the cloud for a registered cluster");
    const refused = kubectl(kc, ["apply", "-f", "-"], "apiVersion: slipway.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: both\nspec:\n  registration:\n    kubeconfigSecretRef:\n      name: ext-kubeconfig\n  workers:\n    - name: w\n      connection: east\n      machineType: s1.small\n");
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /spec\.workers: Invalid value: .*a registered cluster's machines are not Slipway's/);
  });

  it("applies a set to the clusters named and selected, and puts back what is deleted by hand", async () => {
    apply(`apiVersion: slipway.dev/v1alpha1
kind: ResourceSync
metadata:
  name: demo
spec:
  clusters:
    - name: one
    - name: two
  clusterSelector:
    matchLabels:
      tier: external
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: settings
        namespace: demo
      data:
        colour: blue
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: demo
`);
    await eventually(() => sync("demo").status?.phase === "Synced", { timeoutMs: 30_000, what: "demo Synced" });
    assert.deepEqual(sync("demo").status?.clusters?.map((c) => [c.name, c.state]), [["ext", "Applied"], ["one", "Applied"], ["two", "Applied"]]);
    for (const cluster of ["one", "two", "ext"]) assert.ok(has(cluster, "configmap", "settings"), `settings in ${cluster}`);
    assert.match(ok("get", "resourcesync", "demo", "--no-headers"), /^demo\s+Synced\s+3\/3\s+2\s/);

    const deleted = on("one", "delete", "configmap", "settings", "-n", "demo");
    assert.equal(deleted.status, 0, deleted.stderr);
    await eventually(() => has("one", "configmap", "settings"), { timeoutMs: 20_000, what: "settings put back in one" });
    await eventually(() => (entry("demo", "one")?.drifts ?? 0) >= 1, { timeoutMs: 10_000, what: "the drift counted" });
    assert.match(ok("get", "events", "--field-selector", "involvedObject.name=demo,reason=DriftCorrected"), /cluster one: ConfigMap demo\/settings was deleted in the cluster/);
    const changed = on("two", "patch", "configmap", "settings", "-n", "demo", "--type", "merge", "-p", '{"data":{"colour":"red"}}');
    assert.equal(changed.status, 0, changed.stderr);
    await eventually(() => on("two", "get", "configmap", "settings", "-n", "demo", "-o", "jsonpath={.data.colour}").stdout === "blue", { timeoutMs: 20_000, what: "the colour put back in two" });
  });

  it("retries a cluster that cannot be reached on its own, and it converges when it comes back", async () => {
    await proxy.cut();
    ok("patch", "resourcesync", "demo", "--type", "json", "-p", JSON.stringify([{ op: "add", path: "/spec/resources/-", value: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "more", namespace: "demo" }, data: { a: "1" } } }]));
    const generation = sync("demo").metadata.generation;
    await eventually(() => {
      const [one, two, ext] = ["one", "two", "ext"].map((c) => entry("demo", c));
      return one?.appliedGeneration === generation && two?.appliedGeneration === generation && ext?.state === "Failed" && ext;
    }, { timeoutMs: 30_000, what: "one and two applied while ext fails" });
    const ext = entry("demo", "ext")!;
    assert.match(ext.message ?? "", /does not answer/);
    assert.equal(sync("demo").status?.phase, "Degraded");
    assert.ok(has("one", "configmap", "more") && has("two", "configmap", "more"));
    await eventually(() => ok("get", "cluster", "ext", "-o", "jsonpath={.status.reason}") === "Unreachable", { timeoutMs: 30_000, what: "ext Unreachable" });

    await proxy.restore();
    await eventually(() => {
      const view = sync("demo");
      if (view.status?.phase === "Synced") return true;
      if (view.status?.phase === "Suspended") throw new StopWaiting("suspended");
      return false;
    }, { timeoutMs: 60_000, what: "demo Synced again" });
    assert.ok(has("ext", "configmap", "more"), "ext got what it missed");
    await eventually(() => ok("get", "cluster", "ext", "-o", "jsonpath={.status.phase}") === "Running", { timeoutMs: 40_000, what: "ext Running again" });
  });

  it("prunes a cluster that leaves the targets, and every cluster when it is deleted, and nothing else", async () => {
    // Something of the user's in the same namespace, not the set's: never pruned.
    assert.equal(on("one", "create", "configmap", "mine", "-n", "default", "--from-literal=x=1").status, 0);
    ok("patch", "resourcesync", "demo", "--type", "merge", "-p", JSON.stringify({ spec: { clusters: [{ name: "one" }] } }));
    await eventually(() => on("two", "get", "namespace", "demo").status !== 0, { timeoutMs: 30_000, what: "demo pruned from two" });
    assert.ok(has("one", "configmap", "settings"));
    await eventually(() => sync("demo").status?.clusters?.map((c) => c.name).join(",") === "ext,one", { timeoutMs: 10_000, what: "two dropped from status" });

    ok("patch", "resourcesync", "demo", "--type", "json", "-p", JSON.stringify([{ op: "remove", path: "/spec/resources/0" }]));
    await eventually(() => !has("one", "configmap", "settings"), { timeoutMs: 20_000, what: "settings pruned once it left the set" });
    assert.ok(has("one", "configmap", "more"));

    ok("delete", "resourcesync", "demo", "--timeout=60s");
    for (const cluster of ["one", "ext"]) assert.notEqual(on(cluster, "get", "namespace", "demo").status, 0, `demo gone from ${cluster}`);
    assert.ok(has("one", "configmap", "mine", "default"), "the user's own object is untouched");
  });

  it("instantiates a logical cloud on built and registered clusters: namespace, quota, users who can do what their role allows there and nowhere else", async () => {
    apply(`apiVersion: slipway.dev/v1alpha1
kind: LogicalCloud
metadata:
  name: team-a
spec:
  namespace: team
  clusters:
    - name: one
    - name: two
    - name: ext
  users:
    - name: alice
      role: edit
    - name: bob
      role: view
  quota:
    pods: 5
`);
    await eventually(() => ok("get", "logicalcloud", "team-a", "-o", "jsonpath={.status.phase}") === "Ready", { timeoutMs: 60_000, what: "team-a Ready" });
    assert.match(ok("get", "lc", "team-a", "--no-headers"), /^team-a\s+team\s+Ready\s+3\/3\s+2\s/);
    const userConfig = (user: string) => {
      const file = join(plane.dataDir, `${user}.kubeconfig`);
      writeFileSync(file, Buffer.from(ok("get", "secret", `team-a-${user}-kubeconfig`, "-o", "jsonpath={.data.value}"), "base64"));
      return file;
    };
    const alice = userConfig("alice");
    const bob = userConfig("bob");
    assert.deepEqual(kubectlOk(alice, ["config", "get-contexts", "-o", "name"]).trim().split("\n").sort(), ["ext", "one", "two"]);
    const pod = (name: string) => `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n    - name: app\n      image: nginx:1.27\n`;
    for (const cluster of ["one", "two", "ext"]) {
      for (let i = 0; i < 5; i++) kubectlOk(alice, ["--context", cluster, "create", "-f", "-"], pod(`web-${i}`));
      const sixth = kubectl(alice, ["--context", cluster, "create", "-f", "-"], pod("web-5"));
      assert.notEqual(sixth.status, 0, `the sixth pod in ${cluster}`);
      assert.match(sixth.stderr, /pods "web-5" is forbidden: exceeded quota: team-a-quota, requested: pods=1, used: pods=5, limited: pods=5/);
      assert.match(kubectlOk(bob, ["--context", cluster, "get", "pods"]), /web-4/);
      const bobCreates = kubectl(bob, ["--context", cluster, "create", "-f", "-"], pod("bob-0"));
      assert.match(bobCreates.stderr, /User "bob" cannot create resource "pods" in API group "" in the namespace "team"/);
      for (const user of [alice, bob]) {
        assert.match(kubectl(user, ["--context", cluster, "get", "pods", "-n", "default"]).stderr, /cannot list resource "pods" in API group "" in the namespace "default"/);
        assert.match(kubectl(user, ["--context", cluster, "get", "nodes"]).stderr, /cannot list resource "nodes" in API group "" at the cluster scope/);
      }
    }
    // The shared trust: the logical cloud's CA in its mesh namespace, its bundle in the namespace, its DNS block.
    assert.match(kubectlOk(alice, ["--context", "one", "get", "configmap", "team-a-trust-bundle", "-o", "jsonpath={.data.root-cert\\.pem}"]), /BEGIN CERTIFICATE/);
    assert.equal(on("two", "get", "secret", "cacerts", "-n", "slipway-mesh-team-a", "-o", "jsonpath={.data.ca-key\\.pem}").status, 0);
    assert.match(on("ext", "get", "configmap", "slipway-logicalcloud-team-a", "-n", "kube-system", "-o", "jsonpath={.data.team-a\\.server}").stdout, /team-a\.logicalcloud\.local:53 \{[\s\S]*forward \./);
    assert.notEqual(kubectl(alice, ["--context", "one", "get", "secret", "cacerts", "-n", "slipway-mesh-team-a"]).status, 0, "users cannot read the mesh CA");
    assert.doesNotMatch(ok("get", "resourcesync", "team-a-one", "-o", "yaml"), /BEGIN .*PRIVATE KEY/, "no key inline in a ResourceSync");

    // The CLI: the list, the tree, and a user's kubeconfig.
    assert.match(slipway("get", "logicalclouds"), /team-a\s+team\s+Ready\s+3\/3\s+2/);
    const tree = slipway("describe", "logicalcloud", "team-a");
    assert.match(tree, /LogicalCloud\/team-a \(namespace team\)\s+True\s+Ready/);
    assert.match(tree, /├─Cluster\/ext\s+True\s+Ready/);
    assert.match(tree, /│ ├─Namespace\/team\s+True\s+Applied/);
    assert.match(tree, /ResourceQuota\/team\/team-a-quota\s+True\s+Applied/);
    assert.match(tree, /alice\s+ext,one,two\s+slipway kubeconfig --logical-cloud team-a --user alice/);
    const printed = join(plane.dataDir, "alice-cli.kubeconfig");
    writeFileSync(printed, slipway("kubeconfig", "--logical-cloud", "team-a", "--user", "alice"));
    assert.match(kubectlOk(printed, ["--context", "two", "get", "pods"]), /web-0/);
  });

  it("brings a new member in, takes a removed one's namespace and users' access away, and leaves nothing when deleted", async () => {
    apply(clusterManifest("four", "west"));
    await eventually(() => ok("get", "cluster", "four", "-o", "jsonpath={.status.phase}") === "Running", { timeoutMs: 120_000, intervalMs: 250, what: "four Running" });
    ok("patch", "logicalcloud", "team-a", "--type", "merge", "-p", JSON.stringify({ spec: { clusters: [{ name: "one" }, { name: "ext" }, { name: "four" }] } }));
    await eventually(() => {
      const lc = JSON.parse(ok("get", "logicalcloud", "team-a", "-o", "json")) as { status?: { phase?: string; clusters?: { name: string; state: string }[] } };
      return lc.status?.phase === "Ready" && lc.status.clusters?.map((c) => c.name).join(",") === "ext,four,one";
    }, { timeoutMs: 60_000, what: "team-a Ready on ext, four and one" });
    const alice = join(plane.dataDir, "alice.kubeconfig");
    const oldAlice = join(plane.dataDir, "alice-before.kubeconfig");
    writeFileSync(oldAlice, Buffer.from(ok("get", "secret", "team-a-alice-kubeconfig", "-o", "jsonpath={.data.value}"), "base64"));
    assert.deepEqual(kubectlOk(oldAlice, ["config", "get-contexts", "-o", "name"]).trim().split("\n").sort(), ["ext", "four", "one"]);
    assert.equal(kubectl(oldAlice, ["--context", "four", "get", "pods"]).status, 0);
    // Two is no member any more: the namespace is gone there, and alice's old credentials for it with it.
    await eventually(() => on("two", "get", "namespace", "team").status !== 0, { timeoutMs: 30_000, what: "team gone from two" });
    assert.match(kubectl(alice, ["--context", "two", "get", "pods"]).stderr, /forbidden/);

    ok("delete", "logicalcloud", "team-a", "--timeout=90s");
    for (const cluster of ["one", "ext", "four"]) {
      assert.notEqual(on(cluster, "get", "namespace", "team").status, 0, `team gone from ${cluster}`);
      assert.notEqual(on(cluster, "get", "namespace", "slipway-mesh-team-a").status, 0, `the mesh namespace gone from ${cluster}`);
      assert.notEqual(on(cluster, "get", "configmap", "slipway-logicalcloud-team-a", "-n", "kube-system").status, 0, `the DNS block gone from ${cluster}`);
      assert.equal(on(cluster, "get", "csr", "-o", "name").stdout.trim(), "", `no signing request left in ${cluster}`);
    }
    await eventually(() => ok("get", "resourcesyncs,secrets", "-l", "slipway.dev/logicalcloud=team-a", "-o", "name").trim() === "", { timeoutMs: 30_000, what: "the logical cloud's objects gone" });
  });

  it("refuses a logical cloud it could not make, naming the field, and reports members it cannot find", async () => {
    const refusal = (spec: string) => kubectl(kc, ["apply", "-f", "-"], `apiVersion: slipway.dev/v1alpha1\nkind: LogicalCloud\nmetadata:\n  name: bad\nspec:\n${spec}`);
    const cases: [string, RegExp][] = [
      ["  namespace: Team_A\n  clusters: [{name: one}]\n", /spec\.namespace: Invalid value: "Team_A"/],
      ["  namespace: team\n  clusters: [{name: one}]\n  users: [{name: carol, rules: [{apiGroups: [\"\"], resources: [], verbs: [Get]}]}]\n", /spec\.users\[0\]\.rules\[0\]\.verbs\[0\]: Invalid value: "Get"[\s\S]*spec\.users\[0\]\.rules\[0\]\.resources: Required value/],
      ["  namespace: team\n  clusters: [{name: one}]\n  quota: {pods: 5, gpus: 1}\n", /spec\.quota\[gpus\]/],
      ["  namespace: team\n  clusters: [{name: one}]\n  quota: {pods: lots}\n", /spec\.quota\[pods\]/],
    ];
    for (const [spec, message] of cases) {
      const result = refusal(spec);
      assert.notEqual(result.status, 0, spec);
      assert.match(result.stderr, message);
    }
    assert.notEqual(kubectl(kc, ["get", "logicalcloud", "bad"]).status, 0, "nothing stored");
    apply("apiVersion: slipway.dev/v1alpha1\nkind: LogicalCloud\nmetadata:\n  name: lost\nspec:\n  namespace: lost\n  clusters: [{name: one}, {name: nowhere}]\n  users: [{name: dora, role: view}]\n");
    await eventually(() => ok("get", "logicalcloud", "lost", "-o", "jsonpath={.status.phase}") === "Degraded", { timeoutMs: 30_000, what: "lost Degraded" });
    assert.match(ok("get", "logicalcloud", "lost", "-o", "jsonpath={.status.message}"), /nowhere: spec\.clusters\[1\]\.name: cluster nowhere does not exist/);
    ok("delete", "logicalcloud", "lost", "--timeout=60s");
  });

  it("refuses a set it could not apply whole, naming the field, and reports clusters it cannot find", async () => {
    const bad = kubectl(kc, ["apply", "-f", "-"], `apiVersion: slipway.dev/v1alpha1
kind: ResourceSync
metadata:
  name: bad
spec:
  clusters:
    - name: one
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: Not_A_Label
    - apiVersion: v1
      kind: ConfigMap
      data: {}
`);
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /spec\.resources\[0\]\.metadata\.name/);
    assert.match(bad.stderr, /spec\.resources\[1\]\.metadata\.name: Required value/);
    assert.equal(kubectl(kc, ["get", "resourcesync", "bad"]).status, 1, "nothing stored");

    apply("apiVersion: slipway.dev/v1alpha1\nkind: ResourceSync\nmetadata:\n  name: lost\nspec:\n  clusters:\n    - name: one\n    - name: nowhere\n  resourcesFrom:\n    - kind: ConfigMap\n      name: lost-manifests\n");
    await eventually(() => sync("lost").status?.message?.includes("spec.resourcesFrom[0]: ConfigMap lost-manifests does not exist"), { timeoutMs: 10_000, what: "the missing source named" });
    ok("create", "configmap", "lost-manifests", "--from-literal=objects.yaml=apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-source\n  namespace: default\ndata:\n  k: v\n");
    await eventually(() => entry("lost", "nowhere")?.state === "Failed" && entry("lost", "one")?.state === "Applied", { timeoutMs: 30_000, what: "one applied, nowhere failed" });
    assert.match(entry("lost", "nowhere")?.message ?? "", /spec\.clusters\[1\]\.name: cluster nowhere does not exist/);
    assert.ok(has("one", "configmap", "from-source", "default"));
    ok("delete", "resourcesync", "lost", "--timeout=60s");
    assert.ok(!has("one", "configmap", "from-source", "default"));
  });
});
