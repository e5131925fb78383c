// Addons on a quickstart-like cluster, end to end with real processes: the metrics-server and dashboard
// bundles reach Ready (AddonsReady on the cluster, their Deployments available in the workload cluster
// as kubectl sees them); the dashboard's Deployment deleted by hand comes back with a drift Event; an
// addon depending on a missing one waits naming it; a bad addon fails alone; the dashboard is served
// through the control plane at /services/… for callers RBAC lets see the cluster; removing an addon prunes its
// objects and its entry in the cluster's status.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { parse } from "yaml";
import { REPO, SLIPWAY_BIN, eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

interface ClusterView {
  status?: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    addons?: { name: string; phase: string; version?: string; message?: string }[];
    services?: { name: string; label: string; icon?: string; url: string }[];
  };
}
interface AddonView {
  status?: { phase?: string; message?: string; version?: string; clusters?: { name: string; phase: string; message?: string }[] };
}

const CLUSTER = `apiVersion: slipway.dev/v1alpha1
kind: ClusterTemplate
metadata:
  name: standard
spec:
  kubernetesVersion: v1.31.2
  addons:
    - name: ingress-nginx
      version: 1.11.3
---
apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata:
  name: sim-east
spec:
  provider: sim
  region: sim-east-1
---
apiVersion: slipway.dev/v1alpha1
kind: Cluster
metadata:
  name: demo
  labels:
    addons: standard
spec:
  templateName: standard
  controlPlane:
    connection: sim-east
    machineType: s1.medium
  workers:
    - name: east
      connection: sim-east
      machineType: s1.large
      replicas: 2
`;

const addon = (name: string, spec: string) => `apiVersion: slipway.dev/v1alpha1\nkind: Addon\nmetadata:\n  name: ${name}\nspec:\n${spec}`;

/** GET over HTTPS with the control plane's CA, optionally with a bearer token. */
function get(url: string, ca: string, token?: string): Promise<{ code: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ code: res.statusCode ?? 0, body, type: String(res.headers["content-type"] ?? "") }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("addons and the services they expose", () => {
  let plane: RunningSlipway;
  let kc: string;
  let workload: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const apply = (text: string) => void kubectlOk(kc, ["apply", "-f", "-"], text);
  const cluster = () => JSON.parse(ok("get", "cluster", "demo", "-o", "json")) as ClusterView;
  const addonOf = (name: string) => JSON.parse(ok("get", "addon", name, "-o", "json")) as AddonView;
  const on = (...args: string[]) => kubectl(workload, args);
  const slipway = (...args: string[]): string => {
    const result = spawnSync(process.execPath, [SLIPWAY_BIN, "--kubeconfig", kc, ...args], { cwd: REPO, encoding: "utf8", timeout: 60_000 });
    assert.equal(result.status, 0, `slipway ${args.join(" ")}: ${result.stderr}`);
    return result.stdout;
  };

  before(async () => {
    plane = await startSlipway({ args: ["--sim-profile", "instant", "--poll-interval", "100ms", "--resync-interval", "1s"] });
    kc = plane.kubeconfig;
    apply(CLUSTER);
    apply(
      [
        addon("metrics", "  clusterSelector:\n    matchLabels:\n      addons: standard\n  bundle:\n    name: metrics-server\n"),
        addon("dashboard", "  clusterName: demo\n  bundle:\n    name: dashboard\n    version: 2.7.0\n  parameters:\n    title: Team Dashboard\n  dependsOn: [metrics]\n"),
      ].join("---\n"),
    );
    await eventually(() => cluster().status?.phase === "Running", { timeoutMs: 90_000, intervalMs: 250, what: "cluster demo Running" });
    workload = join(plane.dataDir, "demo.kubeconfig");
    writeFileSync(workload, Buffer.from(ok("get", "secret", "demo-kubeconfig", "-o", "jsonpath={.data.value}"), "base64"));
  });

  after(async () => {
    await plane?.stop("SIGTERM");
    if (plane) removeDir(plane.dataDir);
  });

  it("installs the bundles in dependency order until the cluster says AddonsReady", async () => {
    // The template's addon appears in the cluster's status once the addon controller has seen it.
    const addonsReady = () => {
      const status = cluster().status;
      return status?.conditions?.find((c) => c.type === "AddonsReady")?.status === "True" && (status.addons ?? []).length === 3 && status;
    };
    const status = await eventually(addonsReady, { timeoutMs: 60_000, intervalMs: 250, what: "AddonsReady=True with three addons" });
    assert.deepEqual(
      status.addons?.map((a) => [a.name, a.phase, a.version]),
      [
        ["dashboard", "Ready", "2.7.0"],
        ["demo-ingress-nginx", "Ready", "1.11.3"],
        ["metrics", "Ready", "0.7.2"],
      ],
    );
    // The template's addon was made for the cluster, and is the cluster's.
    const made = JSON.parse(ok("get", "addon", "demo-ingress-nginx", "-o", "json")) as { metadata: { ownerReferences: { kind: string; name: string }[] }; spec: unknown };
    assert.deepEqual(made.spec, { clusterName: "demo", bundle: { name: "ingress-nginx", version: "1.11.3" } });
    assert.deepEqual(made.metadata.ownerReferences.map((o) => `${o.kind}/${o.name}`), ["Cluster/demo"]);
    assert.match(on("get", "service", "ingress-nginx-controller", "-n", "ingress-nginx").stdout, /LoadBalancer/);
    const deployments = on("get", "deployments", "-A", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.availableReplicas}/{.spec.replicas} {end}");
    assert.equal(deployments.status, 0, deployments.stderr);
    assert.match(deployments.stdout, /kubernetes-dashboard=1\/1/);
    assert.match(deployments.stdout, /metrics-server=1\/1/);
    assert.match(on("get", "service", "kubernetes-dashboard", "-n", "kubernetes-dashboard").stdout, /kubernetes-dashboard\s+ClusterIP\s+10\.96\.\d+\.\d+\s+80\/TCP/);
    assert.match(slipway("get", "addons"), /dashboard\s+bundle dashboard\s+2\.7\.0\s+Ready\s+1\/1\s/);
    assert.match(slipway("get", "addons"), /metrics\s+bundle metrics-server\s+0\.7\.2\s+Ready\s+1\/1\s/);
    const described = slipway("describe", "cluster", "demo");
    assert.match(described, /AddonsReady\s+True\s+AddonsReady/);
    assert.match(described, /Addons:\n\s+ADDON\s+VERSION\s+PHASE.*\n\s+dashboard\s+2\.7\.0\s+Ready/);
    // The dashboard waited for metrics: it was installed only once metrics was Ready.
    const events = ok("get", "events", "--field-selector", "involvedObject.kind=Addon", "-o", "jsonpath={range .items[*]}{.involvedObject.name} {.reason}{\"\\n\"}{end}");
    assert.match(events, /metrics Ready/);
    assert.match(events, /dashboard Ready/);
  });

  it("serves the dashboard through the control plane to callers who may get the cluster, and to no one else", async () => {
    const services = cluster().status?.services ?? [];
    assert.equal(services.length, 1);
    const dashboard = services[0]!;
    assert.equal(dashboard.name, "dashboard");
    assert.equal(dashboard.label, "Kubernetes Dashboard");
    assert.equal(dashboard.icon, "dashboard");
    assert.equal(dashboard.url, `https://127.0.0.1:${plane.port}/services/default/demo/dashboard/`);
    assert.match(slipway("services", "demo"), new RegExp(`dashboard\\s+Kubernetes Dashboard\\s+dashboard\\s+${dashboard.url.replaceAll(".", "\\.")}`));
    const config = parse(readFileSync(kc, "utf8")) as { clusters: { cluster: { "certificate-authority-data": string } }[]; users: { user: { token: string } }[] };
    const ca = Buffer.from(config.clusters[0]!.cluster["certificate-authority-data"], "base64").toString("utf8");
    const token = config.users[0]!.user.token;
    const page = await get(dashboard.url, ca, token);
    assert.equal(page.code, 200, page.body);
    assert.match(page.type, /text\/html/);
    assert.match(page.body, /<h1>Team Dashboard<\/h1>/);
    assert.match(page.body, /Cluster <strong>demo<\/strong>/);
    const css = await get(`${dashboard.url}styles.css`, ca, token);
    assert.equal(css.code, 200);
    assert.match(css.type, /text\/css/);
    assert.equal((await get(`${dashboard.url}missing.js`, ca, token)).code, 404);
    const anonymous = await get(dashboard.url, ca);
    assert.equal(anonymous.code, 401);
    assert.doesNotMatch(anonymous.body, /Dashboard/);
    assert.equal((await get(dashboard.url, ca, "not-a-token")).code, 401);
    assert.equal((await get(`https://127.0.0.1:${plane.port}/services/default/demo/grafana/`, ca, token)).code, 404);
    // RBAC decides: a service account that may view namespace default sees the page; one of another team does not.
    ok("create", "namespace", "team-b");
    for (const namespace of ["default", "team-b"]) {
      ok("create", "serviceaccount", "viewer", "-n", namespace);
      ok("create", "rolebinding", "viewer", "-n", namespace, "--clusterrole", "view", `--serviceaccount=${namespace}:viewer`);
    }
    const allowed = await get(dashboard.url, ca, ok("create", "token", "viewer", "-n", "default").trim());
    assert.equal(allowed.code, 200);
    assert.match(allowed.body, /Team Dashboard/);
    const refused = await get(dashboard.url, ca, ok("create", "token", "viewer", "-n", "team-b").trim());
    assert.equal(refused.code, 403);
    assert.doesNotMatch(refused.body, /Dashboard/);
  });

  it("puts back the dashboard's Deployment deleted by hand, with an Event saying it drifted", async () => {
    const deleted = on("delete", "deployment", "kubernetes-dashboard", "-n", "kubernetes-dashboard");
    assert.equal(deleted.status, 0, deleted.stderr);
    await eventually(() => on("get", "deployment", "kubernetes-dashboard", "-n", "kubernetes-dashboard", "-o", "jsonpath={.status.availableReplicas}").stdout === "1", {
      timeoutMs: 30_000,
      intervalMs: 250,
      what: "the dashboard Deployment back and available",
    });
    await eventually(() => /dashboard drifted in cluster demo and was repaired: Deployment kubernetes-dashboard\/kubernetes-dashboard was deleted in the cluster/.test(ok("get", "events", "--field-selector", "involvedObject.name=dashboard,reason=Drifted")), {
      timeoutMs: 20_000,
      what: "the Drifted event",
    });
  });

  it("keeps an addon waiting on a missing one, and fails a bad addon alone", async () => {
    apply(addon("ingress", "  clusterName: demo\n  bundle:\n    name: ingress-nginx\n  dependsOn: [cert-manager]\n"));
    apply(addon("broken", "  clusterName: demo\n  manifests:\n    - apiVersion: example.com/v1\n      kind: Widget\n      metadata:\n        name: w\n"));
    apply(addon("unset", "  clusterName: demo\n  manifests:\n    - apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: owner\n      data:\n        team: ${team}\n"));
    await eventually(() => addonOf("ingress").status?.phase === "Waiting", { timeoutMs: 20_000, what: "ingress Waiting" });
    assert.match(addonOf("ingress").status?.message ?? "", /demo: waiting for addon cert-manager, which does not exist/);
    await eventually(() => addonOf("broken").status?.phase === "Failed", { timeoutMs: 20_000, what: "broken Failed" });
    assert.match(addonOf("broken").status?.message ?? "", /Widget w/);
    await eventually(() => addonOf("unset").status?.phase === "Failed", { timeoutMs: 20_000, what: "unset Failed" });
    assert.match(addonOf("unset").status?.message ?? "", /spec\.parameters: no value for \$\{team\} \(used in spec\.manifests\[0\]\)/);
    const bad = kubectl(kc, ["apply", "-f", "-"], addon("nothing", "  clusterName: demo\n"));
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /spec\.bundle: Required value: one of bundle, manifests or configMapRef/);
    // The cluster lists each with its own phase, and is not AddonsReady.
    const expected = "broken=Failed dashboard=Ready demo-ingress-nginx=Ready ingress=Waiting metrics=Ready unset=Failed";
    const listed = () => (cluster().status?.addons ?? []).map((a) => `${a.name}=${a.phase}`).join(" ");
    await eventually(() => listed() === expected, { timeoutMs: 20_000, what: `status.addons ${expected}` });
    const addonsReady = cluster().status?.conditions?.find((c) => c.type === "AddonsReady");
    assert.equal(addonsReady?.status, "False");
    assert.equal(addonsReady?.reason, "AddonFailed");
    assert.match(addonsReady?.message ?? "", /ingress: waiting for addon cert-manager, which does not exist/);
    // The others are untouched.
    assert.equal(addonOf("dashboard").status?.phase, "Ready");
    for (const name of ["ingress", "broken", "unset"]) ok("delete", "addon", name, "--wait");
    await eventually(() => cluster().status?.conditions?.find((c) => c.type === "AddonsReady")?.status === "True", { timeoutMs: 20_000, what: "AddonsReady again" });
  });

  it("removes an addon's objects from the cluster and from its status", async () => {
    ok("delete", "addon", "dashboard", "--wait");
    await eventually(() => on("get", "deployment", "kubernetes-dashboard", "-n", "kubernetes-dashboard").status !== 0, { timeoutMs: 20_000, what: "the dashboard pruned" });
    assert.notEqual(on("get", "namespace", "kubernetes-dashboard").status, 0);
    await eventually(() => (cluster().status?.addons ?? []).map((a) => a.name).join(",") === "demo-ingress-nginx,metrics", { timeoutMs: 20_000, what: "dashboard gone from status.addons" });
    assert.deepEqual(cluster().status?.services ?? [], []);
    assert.match(on("get", "deployment", "metrics-server", "-n", "kube-system").stdout, /metrics-server/);
  });
});
