// One cluster across two clouds: two `slipway sim-cloud serve` processes on one public network, each its
// own Connection (endpoint and credentials), the control plane in cloud A and a worker pool in cloud B,
// driven with the real kubectl. Machines get public addresses, each cloud's security group admits the
// Kubernetes ports from the other cloud's node addresses only, and a join the rules do not admit waits
// on the named endpoint until they do.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:tls";
import { parse } from "yaml";
import { join } from "node:path";
import { StopWaiting, eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "./support/simcloud.ts";
import type { CloudResource, SecurityGroup, SecurityGroupRule } from "../src/simcloud/types.ts";

interface MachineView {
  metadata: { name: string };
  spec: { role: string; connection: string };
  status?: { phase?: string; addresses?: { type: string; address: string }[]; conditions?: { type: string; status: string; message?: string }[] };
}

const live = (resources: CloudResource[]) => resources.filter((r) => !["terminated", "deleted"].includes(r.state));
const external = (m: MachineView) => m.status?.addresses?.find((a) => a.type === "ExternalIP")?.address;
const internal = (m: MachineView) => m.status?.addresses?.find((a) => a.type === "InternalIP")?.address;

/** The addresses of the certificate the API server at `server` (https://host:port) presents. */
function servedIpAddresses(server: string, serverName: string | undefined): Promise<string[]> {
  const url = new URL(server);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false, ...(serverName ? { servername: serverName } : {}) }, () => {
      const names = socket.getPeerCertificate().subjectaltname ?? "";
      socket.end();
      resolve([...names.matchAll(/IP Address:([\d.]+)/g)].map((m) => m[1]!));
    });
    socket.once("error", reject);
  });
}
const show = (rules: SecurityGroupRule[]) => rules.filter((r) => r.cidr.endsWith("/32")).map((r) => `${r.protocol}/${r.fromPort} ${r.cidr}`).sort();

describe("a cluster across two clouds", () => {
  let a: RunningSimCloud;
  let b: RunningSimCloud;
  let plane: RunningSlipway;
  let kc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const machines = () => (JSON.parse(ok("get", "machines", "-o", "json")) as { items: MachineView[] }).items;
  const groupOf = async (sim: RunningSimCloud) => live(await sim.resourcesOf("default/across")).find((r) => r.kind === "securityGroup") as SecurityGroup;
  const waitRunning = (what: string, check: (c: { workers?: { ready: number } }) => boolean = () => true) =>
    eventually(() => {
      const c = JSON.parse(ok("get", "cluster", "across", "-o", "json")) as { status?: { phase?: string; reason?: string; message?: string; workers?: { ready: number } } };
      if (c.status?.phase === "Failed") throw new StopWaiting(`cluster failed: ${c.status.reason}: ${c.status.message}`);
      return c.status?.phase === "Running" && check(c.status) ? c : undefined;
    }, { timeoutMs: 60_000, intervalMs: 250, what });
  const workloadKubeconfig = () => {
    const file = join(plane.dataDir, "across.kubeconfig");
    writeFileSync(file, Buffer.from(ok("get", "secret", "across-kubeconfig", "-o", "jsonpath={.data.value}"), "base64"));
    return file;
  };
  const readyNodes = () => {
    const nodes = kubectl(workloadKubeconfig(), ["get", "nodes", "--no-headers"]);
    assert.equal(nodes.status, 0, nodes.stderr);
    return nodes.stdout.trim().split("\n").filter((line) => /\sReady\s/.test(line)).length;
  };

  before(async () => {
    // Each cloud hands out public addresses of its own; cloud B's machines reach cloud A's public side.
    a = await startSimCloud({ profile: "fast", seed: 31, args: ["--public-range", "203.0.113.0/24"] });
    [b, plane] = await Promise.all([
      startSimCloud({ profile: "fast", seed: 32, timeScale: 0.1, args: ["--public-range", "198.51.100.0/24", "--peer", a.url] }),
      startSlipway({ args: ["--sim-endpoint", a.url, "--sim-token", SIM_TOKEN, "--poll-interval", "200ms"] }),
    ]);
    kc = plane.kubeconfig;
  });

  after(async () => {
    await plane?.stop("SIGTERM");
    await b?.stop();
    await a?.stop();
    if (plane) removeDir(plane.dataDir);
  });

  it("reaches Running with the control plane in cloud A and a pool in cloud B, opening only the Kubernetes ports to the other cloud's addresses", async () => {
    kubectlOk(kc, ["apply", "-f", "-"], [
      `apiVersion: v1\nkind: Secret\nmetadata:\n  name: cloud-b\nstringData:\n  token: ${SIM_TOKEN}\n`,
      `apiVersion: slipway.dev/v1alpha1\nkind: Connection\nmetadata:\n  name: cloud-a\nspec:\n  provider: sim\n  region: sim-east-1\n  endpoint: ${a.url}\n`,
      `apiVersion: slipway.dev/v1alpha1\nkind: Connection\nmetadata:\n  name: cloud-b\nspec:\n  provider: sim\n  region: sim-west-1\n  endpoint: ${b.url}\n  credentialsRef:\n    name: cloud-b\n`,
      `apiVersion: slipway.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: across\nspec:\n  controlPlane:\n    connection: cloud-a\n    machineType: s1.medium\n    replicas: 1\n  workers:\n    - name: b\n      connection: cloud-b\n      machineType: s1.small\n      replicas: 1\n`,
    ].join("---\n"));
    await waitRunning("cluster across to be Running");
    assert.equal(readyNodes(), 2);

    const [cp] = machines().filter((m) => m.spec.role === "control-plane");
    const [worker] = machines().filter((m) => m.spec.role === "worker");
    assert.match(external(cp!) ?? "", /^203\.0\.113\./, JSON.stringify(cp?.status?.addresses));
    assert.match(external(worker!) ?? "", /^198\.51\.100\./, JSON.stringify(worker?.status?.addresses));
    // Cloud A (the control plane) admits the worker on the API, the kubelet and calico's BGP; cloud B
    // admits the control-plane machine on the kubelet and BGP only. Nothing else names an address.
    assert.deepEqual(show((await groupOf(a)).rules), [`tcp/10250 ${external(worker!)}/32`, `tcp/179 ${external(worker!)}/32`, `tcp/6443 ${external(worker!)}/32`]);
    assert.deepEqual(show((await groupOf(b)).rules), [`tcp/10250 ${external(cp!)}/32`, `tcp/179 ${external(cp!)}/32`]);

    // Each node reports its private address as INTERNAL-IP and its public one as EXTERNAL-IP.
    const file = workloadKubeconfig();
    const wide = kubectl(file, ["get", "nodes", "-o", "wide", "--no-headers"]);
    assert.equal(wide.status, 0, wide.stderr);
    const columns = (name: string) => wide.stdout.split("\n").find((line) => line.startsWith(`${name} `))?.trim().split(/\s+/) ?? [];
    // NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP ...
    assert.deepEqual(columns(worker!.metadata.name).slice(5, 7), [internal(worker!), external(worker!)], wide.stdout);
    assert.deepEqual(columns(cp!.metadata.name).slice(5, 7), [internal(cp!), external(cp!)], wide.stdout);
    // The API server advertises the control-plane machine's private address; its certificate holds the public one too.
    const config = parse(readFileSync(file, "utf8")) as { clusters: { cluster: { server: string; "tls-server-name"?: string } }[] };
    const served = await servedIpAddresses(config.clusters[0]!.cluster.server, config.clusters[0]!.cluster["tls-server-name"]);
    assert.ok(served.includes(internal(cp!)!) && served.includes(external(cp!)!), `certificate addresses ${served.join(", ")}`);
  });

  it("waits on the named endpoint while cloud A's rules no longer admit a new worker, and joins once they are put back", async () => {
    const group = await groupOf(a);
    // Cloud B boots the next machine slowly, so that its join comes after the rules are taken away.
    await b.admin.setFaults({ slowBoot: { probability: 1, factor: 150 } });
    ok("patch", "cluster", "across", "--type", "merge", "-p", JSON.stringify({ spec: { workers: [{ name: "b", connection: "cloud-b", machineType: "s1.small", replicas: 2 }] } }));
    const added = await eventually(() => machines().filter((m) => m.spec.role === "worker").map(external).filter((ip): ip is string => ip !== undefined).length === 2 && machines().find((m) => m.spec.role === "worker" && m.status?.phase !== "Running"), { timeoutMs: 30_000, what: "the second worker with a public address" });
    const address = external(added)!;
    const complete = await eventually(async () => {
      const current = await a.api.getSecurityGroup(group.region, group.id);
      return current.rules.some((r) => r.cidr === `${address}/32`) ? current.rules : undefined;
    }, { timeoutMs: 30_000, what: `cloud A's rules admitting ${address}` });

    // By hand: nothing admits cloud B's nodes on cloud A's API any more (their own rules, nor anywhere).
    const stripped = complete.filter((r) => !r.cidr.endsWith("/32") && !(r.cidr === "0.0.0.0/0" && r.fromPort === 6443));
    await a.api.setSecurityGroupRules(group.region, group.id, stripped);
    await b.admin.setFaults({});
    const waiting = await eventually(() => {
      const m = machines().find((x) => x.metadata.name === added.metadata.name);
      const joined = m?.status?.conditions?.find((c) => c.type === "NodeJoined");
      return joined?.message?.includes("kubeadm cannot reach the control-plane endpoint") ? joined.message : undefined;
    }, { timeoutMs: 45_000, what: "the new worker's join to wait on the endpoint" });
    assert.match(waiting, /dial tcp api\.across\.sim-east-1\.\S+:6443: i\/o timeout/);

    await a.api.setSecurityGroupRules(group.region, group.id, complete);
    await waitRunning("both workers Ready again", (s) => s.workers?.ready === 2);
    assert.equal(readyNodes(), 3);

    // A machine going takes its address out of the other cloud's rules.
    ok("patch", "cluster", "across", "--type", "merge", "-p", JSON.stringify({ spec: { workers: [{ name: "b", connection: "cloud-b", machineType: "s1.small", replicas: 1 }] } }));
    await eventually(() => machines().filter((m) => m.spec.role === "worker").length === 1, { timeoutMs: 30_000, what: "one worker left" });
    const [left] = machines().filter((m) => m.spec.role === "worker");
    await eventually(async () => {
      const cidrs = (await a.api.getSecurityGroup(group.region, group.id)).rules.filter((r) => r.cidr.endsWith("/32")).map((r) => r.cidr);
      return cidrs.length === 3 && cidrs.every((cidr) => cidr === `${external(left!)}/32`);
    }, { timeoutMs: 30_000, what: "cloud A's rules admitting the remaining worker only" });
  });

  it("deletes the cluster leaving nothing tagged in either cloud", async () => {
    ok("delete", "cluster", "across", "--timeout=120s");
    assert.deepEqual(live(await a.resourcesOf("default/across")).map((r) => `${r.kind} ${r.id}`), []);
    assert.deepEqual(live(await b.resourcesOf("default/across")).map((r) => `${r.kind} ${r.id}`), []);
  });
});
