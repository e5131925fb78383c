// Bringing one's own hosts, against a real `slipway up`, real kubectl and real sshd hosts (network
// namespaces, see src/providers/ssh/testing/lab.ts): Hosts are checked and shown with their facts and
// pinned host keys; a wrong key, an address where nothing answers and a changed host key each show
// their reason; a cluster that needs more hosts than can serve is refused naming every host and why,
// and nothing on any host changes. Then a cluster on three hosts (one control plane behind haproxy on its
// host, two workers) reaches Running, real kubectl lists its three Ready nodes through the cluster's
// kubeconfig, and deleting the cluster leaves no file, unit or process of Slipway's on any host (looked at
// over SSH). The lab's stand-in kubeadm emulates the cluster (src/providers/ssh/testing/stand-ins.ts).
// Last, a mixed cluster: its control plane on a host, a pool in the sim cloud, whose machine joins the
// host's API over the network (the sim cloud is told the lab's range is reachable from it), and to which
// a pool of hosts applied on its own (MachinePool → HostMachinePool, BootstrapConfig) is added: adopted,
// one host per replica, all or nothing, released and cleaned with the cluster.
// Skips (saying why) where it cannot run: it needs root and sshd.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { withSession } from "../src/providers/ssh/session.ts";
import { SshLab, labUnavailable, type LabHost } from "../src/providers/ssh/testing/lab.ts";
import { eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "./support/simcloud.ts";

const unavailable = labUnavailable();
if (unavailable) console.log(`# skipping the SSH hosts end-to-end test: ${unavailable}`);

function secret(name: string, privateKey: string): string {
  return `apiVersion: v1
kind: Secret
metadata:
  name: ${name}
type: kubernetes.io/ssh-auth
data:
  ssh-privatekey: ${Buffer.from(privateKey).toString("base64")}
`;
}

function host(name: string, address: string, keySecret: string): string {
  return `apiVersion: slipway.dev/v1alpha1
kind: Host
metadata:
  name: ${name}
  labels:
    slipway.dev/connection: rack
spec:
  address: ${address}
  port: 22
  user: root
  sshKeySecretRef:
    name: ${keySecret}
`;
}

/** The command lines of the processes in the host's network namespace (the lab's hosts share one process namespace). */
const PROCESSES_OF_THIS_HOST = `here=$(readlink /proc/self/ns/net); for p in /proc/[0-9]*; do [ "$(readlink $p/ns/net 2>/dev/null)" = "$here" ] && { tr '\\0' ' ' < $p/cmdline; echo; }; done 2>/dev/null`;

function connection(name: string, provider: string, region: string): string {
  return `apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata:
  name: ${name}
spec:
  provider: ${provider}
  region: ${region}
`;
}

const CONNECTION = connection("rack", "ssh", "rack-1");

/** A cluster whose control plane is one host of the rack, with one pool. */
function cluster(name: string, pool: { name: string; connection: string; machineType: string; replicas: number }): string {
  return `apiVersion: slipway.dev/v1alpha1
kind: Cluster
metadata:
  name: ${name}
spec:
  kubernetesVersion: v1.31.2
  controlPlane:
    connection: rack
    machineType: host
    replicas: 1
  workers:
    - name: ${pool.name}
      connection: ${pool.connection}
      machineType: ${pool.machineType}
      replicas: ${pool.replicas}
`;
}

/** A pool of the rack's hosts h2 and h3 for the cluster "mixed", applied on its own. */
const HOST_POOL = JSON.stringify({
  apiVersion: "v1",
  kind: "List",
  items: [
    { apiVersion: "slipway.dev/v1alpha1", kind: "BootstrapConfig", metadata: { name: "racked-join" }, spec: {} },
    { apiVersion: "slipway.dev/v1alpha1", kind: "HostMachinePool", metadata: { name: "racked-hosts" }, spec: { hosts: ["h2", "h3"] } },
    {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "MachinePool",
      metadata: { name: "racked" },
      spec: {
        clusterName: "mixed",
        connection: "rack",
        machineType: "host",
        replicas: 1,
        template: {
          infrastructureRef: { apiVersion: "slipway.dev/v1alpha1", kind: "HostMachinePool", name: "racked-hosts" },
          bootstrap: { configRef: { apiVersion: "slipway.dev/v1alpha1", kind: "BootstrapConfig", name: "racked-join" } },
        },
      },
    },
  ],
});

const CLUSTER = cluster("onprem", { name: "pool-a", connection: "rack", machineType: "host", replicas: 2 });

describe("bring your own hosts over SSH", { skip: unavailable }, () => {
  let lab: SshLab;
  let server: RunningSlipway;
  let sim: RunningSimCloud;
  let kc: string;
  const simArgs = () => ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "200ms"];
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const reachable = (name: string) => ok("get", "host", name, "-o", 'jsonpath={.status.conditions[?(@.type=="Reachable")].status}/{.status.conditions[?(@.type=="Reachable")].reason}');

  before(async () => {
    lab = await SshLab.start(3, { emulateKubernetes: true });
    // The sim cloud's machines reach the lab's hosts, as a cloud's reach one's own hosts through its NAT gateway.
    sim = await startSimCloud({ profile: "fast", args: ["--outside-network", `${lab.subnet}.0/24`] });
    server = await startSlipway({ args: simArgs() });
    kc = server.kubeconfig;
  });
  after(async () => {
    try {
      if (server) assert.equal(await server.stop("SIGTERM"), 0, "slipway up exits cleanly");
      if (server) removeDir(server.dataDir);
    } finally {
      await sim?.stop();
      await lab?.stop();
    }
  });

  it("checks each Host, pins its key and shows its facts in kubectl get hosts", async () => {
    const { privateKey: wrongKey } = await SshLab.keyPair(lab.dir, "not-authorized");
    const hosts = lab.hosts.map((h, i) => host(`h${i + 1}`, h.address, "lab-key"));
    const manifest = [secret("lab-key", lab.privateKey), secret("wrong-key", wrongKey), CONNECTION, ...hosts, host("h-wrong-key", lab.hosts[0]!.address, "wrong-key"), host("h-nowhere", `${lab.subnet}.99`, "lab-key")].join("---\n");
    kubectlOk(kc, ["apply", "-f", "-"], manifest);
    for (const [i, h] of lab.hosts.entries()) {
      await eventually(() => reachable(`h${i + 1}`) === "True/LoggedIn", { what: `h${i + 1} to be reachable`, timeoutMs: 20_000 });
      assert.equal(ok("get", "host", `h${i + 1}`, "-o", "jsonpath={.status.hostKeyFingerprint}"), h.hostKeyFingerprint);
    }
    const table = ok("get", "hosts");
    assert.match(table.split("\n")[0]!, /^NAME\s+ADDRESS\s+REACHABLE\s+OS\s+CLUSTER\s+AGE$/);
    const h1 = table.split("\n").find((l) => l.startsWith("h1 "));
    assert.match(h1 ?? "", new RegExp(`^h1\\s+${lab.hosts[0]!.address.replace(/\./g, "\\.")}\\s+True\\s+\\S`));
    assert.ok(!ok("get", "hosts", "-o", "yaml").includes("PRIVATE KEY"), "no key in the Hosts");
    assert.equal(ok("get", "connection", "rack", "-o", "jsonpath={.status.phase}"), "Ready");

    await eventually(() => reachable("h-wrong-key") === "False/AuthenticationFailed", { what: "the wrong key to be named", timeoutMs: 20_000 });
    await eventually(() => reachable("h-nowhere") === "False/Unreachable", { what: "the unreachable host to be named", timeoutMs: 30_000 });
  });

  it("refuses a host whose key changed, and a cluster that needs more hosts than can serve, changing nothing", async () => {
    const changed = await lab.replaceHostKey(lab.hosts[2]!);
    ok("annotate", "host", "h3", "example.com/poke=1");
    await eventually(() => reachable("h3") === "False/HostKeyChanged", { what: "the changed key to be refused", timeoutMs: 20_000 });
    const why = ok("get", "host", "h3", "-o", 'jsonpath={.status.conditions[?(@.type=="Reachable")].message}');
    assert.ok(why.includes(changed), why);

    kubectlOk(kc, ["apply", "-f", "-"], CLUSTER);
    await eventually(() => ok("get", "cluster", "onprem", "-o", "jsonpath={.status.phase}") === "Failed", { what: "the cluster to be refused", timeoutMs: 20_000 });
    const message = ok("get", "cluster", "onprem", "-o", "jsonpath={.status.message}");
    assert.equal(ok("get", "cluster", "onprem", "-o", "jsonpath={.status.reason}"), "ValidationFailed");
    assert.ok(message.includes('the cluster needs 3 hosts in connection "rack", 2 can be used'), message);
    assert.ok(message.includes(`host h3 (${lab.hosts[2]!.address}): HostKeyChanged:`), message);
    assert.ok(message.includes(`host h-wrong-key (${lab.hosts[0]!.address}): AuthenticationFailed:`), message);
    assert.ok(message.includes(`host h-nowhere (${lab.subnet}.99): Unreachable:`), message);

    assert.equal(ok("get", "hosts", "-o", "jsonpath={.items[*].status.clusterRef.name}").trim(), "", "no host was claimed");
    for (const h of lab.hosts) assert.deepEqual(await lab.writtenFiles(h), [], `nothing changed on ${h.name}`);

    ok("delete", "cluster", "onprem", "--wait=true", "--timeout=60s");
    ok("delete", "hosts", "--all", "--wait=true", "--timeout=60s");
    assert.equal(kubectl(kc, ["get", "hosts", "-o", "name"]).stdout.trim(), "");
  });

  it("builds a cluster on three hosts that kubectl reaches through haproxy, across a kill -9 of slipway up, and deleting it leaves the hosts as found", async () => {
    kubectlOk(kc, ["apply", "-f", "-"], lab.hosts.map((h, i) => host(`h${i + 1}`, h.address, "lab-key")).join("---\n"));
    for (const i of [1, 2, 3]) await eventually(() => reachable(`h${i}`) === "True/LoggedIn", { what: `h${i} to be reachable`, timeoutMs: 20_000 });
    kubectlOk(kc, ["apply", "-f", "-"], CLUSTER);
    // The first host serves the endpoint. Slipway is killed while it bootstraps that host over SSH, and
    // started again: the bootstrap resumes from the scripts on the host.
    const leader = lab.hosts[0]!;
    await eventually(async () => (await lab.calls(leader)).length > 0, { what: "the bootstrap of the leader host to start", timeoutMs: 60_000, intervalMs: 100 });
    assert.equal(await server.stop("SIGKILL"), null, "slipway up was killed");
    server = await startSlipway({ dataDir: server.dataDir, port: server.port, args: simArgs() });
    const phase = () => ok("get", "cluster", "onprem", "-o", "jsonpath={.status.phase}/{.status.reason}/{.status.message}");
    await eventually(() => phase().startsWith("Running/"), { what: "the cluster to run", timeoutMs: 240_000, intervalMs: 1000 });

    // haproxy on the leader's port 8443 is in front of its API server.
    assert.equal(ok("get", "host", "h1", "-o", "jsonpath={.status.clusterRef.name}"), "onprem");
    assert.equal(ok("get", "cluster", "onprem", "-o", "jsonpath={.status.controlPlaneEndpoint.host}:{.status.controlPlaneEndpoint.port}"), `${leader.address}:8443`);
    const kubeconfig = join(server.dataDir, "onprem.kubeconfig");
    writeFileSync(kubeconfig, Buffer.from(ok("get", "secret", "onprem-kubeconfig", "-o", "jsonpath={.data.value}"), "base64"));
    assert.ok(readFileSync(kubeconfig, "utf8").includes(`server: https://${leader.address}:8443`), "the kubeconfig reaches the cluster through haproxy");
    const nodes = await eventually(
      () => {
        const out = kubectl(kubeconfig, ["get", "nodes", "--no-headers"]).stdout.trim().split("\n").filter((l) => l.length > 0);
        return out.length === 3 && out.every((l) => /\sReady\s/.test(l)) ? out : undefined;
      },
      { what: "three Ready nodes", timeoutMs: 60_000 },
    );
    assert.deepEqual(nodes.map((l) => l.split(/\s+/)[0]).sort().length, 3, nodes.join("\n"));
    const addresses = kubectlOk(kubeconfig, ["get", "nodes", "-o", 'jsonpath={.items[*].status.addresses[?(@.type=="InternalIP")].address}']).split(" ").sort();
    assert.deepEqual(addresses, lab.hosts.map((h) => h.address).sort(), "each node is one of the hosts");
    assert.equal((await lab.calls(leader)).filter((c) => c.startsWith("kubeadm init")).length, 1, "the leader ran kubeadm init once, across the restart");
    for (const h of lab.hosts.slice(1)) assert.ok((await lab.calls(h)).some((c) => c.startsWith("kubeadm join")), `${h.name} joined`);

    const onHost = (h: LabHost, script: string) =>
      withSession({ address: h.address, port: h.port, user: h.user, privateKey: lab.privateKey, hostKeyFingerprint: h.hostKeyFingerprint }, (session) => session.run(`${script}; true`));
    const slipwayProcesses = `${PROCESSES_OF_THIS_HOST} | grep -E 'haproxy|kubeadm|kubelet|containerd' | grep -v -e sshd -e grep`;
    const running = await onHost(leader, slipwayProcesses);
    assert.match(running, /haproxy -W -db -f \/var\/lib\/slipway\/haproxy\/haproxy.cfg/, "haproxy runs on the leader");
    assert.match(running, /kubeadm-emulation\.ts serve/, "the cluster's API server runs on the leader");

    ok("delete", "cluster", "onprem", "--wait=true", "--timeout=180s");
    assert.equal(ok("get", "hosts", "-o", "jsonpath={.items[*].status.clusterRef.name}").trim(), "", "every host is released");
    for (const h of lab.hosts) {
      const left = await onHost(h, `ls -d /var/lib/slipway /etc/kubernetes /var/lib/kubelet /run/kubeadm 2>/dev/null; ${slipwayProcesses}`);
      assert.equal(left.trim(), "", `no file, unit or process of Slipway's is left on ${h.name}`);
      assert.deepEqual(await lab.writtenFiles(h), [], `${h.name} is as it was found`);
    }
  });

  it("builds a mixed cluster, its control plane on a host and a pool in the sim cloud, whose machine joins the host's API, and adds a pool of hosts applied on its own", async () => {
    const leader = lab.hosts[0]!;
    const mixed = [connection("cloud", "sim", "sim-east-1"), cluster("mixed", { name: "cloud", connection: "cloud", machineType: "s1.small", replicas: 1 })].join("---\n");
    kubectlOk(kc, ["apply", "-f", "-"], mixed);
    const phase = () => ok("get", "cluster", "mixed", "-o", "jsonpath={.status.phase}/{.status.reason}/{.status.message}");
    await eventually(() => phase().startsWith("Running/"), { what: "the mixed cluster to run", timeoutMs: 120_000, intervalMs: 500 });
    assert.match(ok("get", "cluster", "mixed", "-o", "jsonpath={.status.controlPlaneEndpoint.host}"), new RegExp(`^${leader.address.replace(/\./g, "\\.")}$`));
    const kubeconfig = join(server.dataDir, "mixed.kubeconfig");
    writeFileSync(kubeconfig, Buffer.from(ok("get", "secret", "mixed-kubeconfig", "-o", "jsonpath={.data.value}"), "base64"));
    // Two Ready nodes in the host's API: the host, and the sim cloud's machine with its provider ID.
    const nodes = JSON.parse(kubectlOk(kubeconfig, ["get", "nodes", "-o", "json"])) as { items: { metadata: { name: string }; spec?: { providerID?: string }; status?: { conditions?: { type: string; status: string }[] } }[] };
    assert.equal(nodes.items.length, 2, nodes.items.map((n) => n.metadata.name).join(", "));
    for (const node of nodes.items) assert.equal(node.status?.conditions?.find((c) => c.type === "Ready")?.status, "True", node.metadata.name);
    const instances = (await sim.resourcesOf("default/mixed")).filter((r) => r.kind === "instance" && r.state !== "terminated");
    assert.equal(instances.length, 1);
    assert.deepEqual(nodes.items.map((n) => n.spec?.providerID ?? "").filter((id) => id.startsWith("sim://")), [`sim://sim-east-1/${instances[0]!.id}`]);

    // A pool of hosts applied on its own: a MachinePool whose template names a HostMachinePool (the other
    // two hosts) and a BootstrapConfig. It claims one host per replica, all or nothing; each host joins
    // under its own host name (the lab's, not the Host object's name) and has no provider ID of its own.
    kubectlOk(kc, ["apply", "-f", "-"], HOST_POOL);
    const pool = () => JSON.parse(ok("get", "machinepool", "racked", "-o", "json")) as { metadata: { ownerReferences?: { kind: string; name: string }[] }; spec: { providerIDList?: string[] }; status?: { phase?: string; readyReplicas?: number } };
    const hostPool = () => JSON.parse(ok("get", "hostmachinepool", "racked-hosts", "-o", "json")) as { metadata: { ownerReferences?: { kind: string; name: string }[] }; status?: { available?: number; hostNames?: string[]; providerIDList?: string[]; reason?: string; message?: string } };
    const readyNodes = () => (JSON.parse(kubectlOk(kubeconfig, ["get", "nodes", "-o", "json"])) as typeof nodes).items.filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")).map((n) => n.metadata.name).sort();
    const labName = (hostObject: string) => lab.hosts[Number(hostObject.slice(1)) - 1]!.name;
    // What the pool, its hosts and machines say, should it not get there (asked only on a timeout).
    const poolState = () =>
      [
        kubectl(kc, ["get", "machinepool,hostmachinepool,machine,host", "-o", "wide"]).stdout,
        kubectl(kc, ["get", "machinepool", "racked", "-o", "jsonpath={.status}"]).stdout,
        kubectl(kc, ["get", "hostmachinepool", "racked-hosts", "-o", "jsonpath={.status}"]).stdout,
        kubectl(kc, ["get", "events", "--sort-by=.lastTimestamp"]).stdout.split("\n").slice(-40).join("\n"),
        kubectl(kubeconfig, ["get", "nodes", "-o", "wide"]).stdout,
        server.output().split("\n").filter((l) => /"level":(40|50)/.test(l)).slice(-20).join("\n"),
      ].join("\n");
    await eventually(() => pool().status?.phase === "Running" && pool().status?.readyReplicas === 1, { what: "the pool of hosts to run one replica", timeoutMs: 120_000, intervalMs: 500, describe: poolState });
    assert.deepEqual(pool().metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`), ["Cluster/mixed"], "the pool is adopted by its cluster");
    assert.deepEqual(hostPool().metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`), ["MachinePool/racked"], "the HostMachinePool is owned by its pool");
    const [held = ""] = hostPool().status?.hostNames ?? [];
    assert.ok(held === "h2" || held === "h3", `one of the selected hosts is held: ${held}`);
    assert.equal(hostPool().status?.available, 1);
    assert.ok(readyNodes().includes(labName(held)), `the node of ${held} is Ready under its host name: ${readyNodes().join(", ")}`);
    assert.equal(ok("get", "machine", `racked-${held}`, "-o", "jsonpath={.status.nodeName}"), labName(held));
    assert.deepEqual(pool().spec.providerIDList, hostPool().status?.providerIDList);
    assert.equal(pool().spec.providerIDList?.length, 1);

    // More replicas than selected hosts: reported by the HostMachinePool naming the field, and nothing more is claimed.
    ok("scale", "machinepool", "racked", "--replicas", "3");
    await eventually(() => hostPool().status?.reason === "InsufficientHosts", { what: "the HostMachinePool to report too few hosts", timeoutMs: 30_000 });
    assert.match(hostPool().status?.message ?? "", /spec\.replicas of MachinePool racked \(3\) exceeds the hosts available/);
    assert.deepEqual(hostPool().status?.hostNames, [held], "no host is claimed while the pool asks for more than there are");
    ok("scale", "machinepool", "racked", "--replicas", "2");
    await eventually(() => pool().status?.readyReplicas === 2, { what: "the pool to run on both selected hosts", timeoutMs: 120_000, intervalMs: 500, describe: poolState });
    assert.deepEqual(hostPool().status?.hostNames, ["h2", "h3"]);
    assert.deepEqual(readyNodes().filter((n) => n.startsWith("host-")).sort(), [lab.hosts[1]!.name, lab.hosts[2]!.name]);

    ok("delete", "cluster", "mixed", "--wait=true", "--timeout=180s");
    assert.deepEqual((await sim.resourcesOf("default/mixed")).filter((r) => !["terminated", "deleted"].includes(r.state)).map((r) => `${r.kind} ${r.id}`), [], "nothing is left in the sim cloud");
    assert.equal(kubectl(kc, ["get", "machinepool", "racked"]).status, 1, "the pool went with its cluster");
    assert.equal(ok("get", "hosts", "-o", "jsonpath={.items[*].status.clusterRef.name}").trim(), "", "every host is released");
    for (const h of lab.hosts) assert.deepEqual(await lab.writtenFiles(h), [], `${h.name} is as it was found`);
  });
});
