// Bringing one's own hosts, against a real `slipway up`, real kubectl and real sshd hosts (network
// namespaces, see src/providers/ssh/testing/lab.ts): Hosts are checked and shown with their facts and
// pinned host keys; a wrong key, an address where nothing answers and a changed host key each show
// their reason; a cluster that needs more hosts than can serve is refused naming every host and why,
// and nothing on any host changes. Skips (saying why) where it cannot run: it needs root and sshd.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { SshLab, labUnavailable } from "../src/providers/ssh/testing/lab.ts";
import { eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

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

const CONNECTION = `apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata:
  name: rack
spec:
  provider: ssh
  region: rack-1
`;

const CLUSTER = `apiVersion: slipway.dev/v1alpha1
kind: Cluster
metadata:
  name: onprem
spec:
  kubernetesVersion: v1.31.2
  controlPlane:
    connection: rack
    machineType: host
    replicas: 1
  workers:
    - name: pool-a
      connection: rack
      machineType: host
      replicas: 2
`;

describe("bring your own hosts over SSH", { skip: unavailable }, () => {
  let lab: SshLab;
  let server: RunningSlipway;
  let kc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const reachable = (name: string) => ok("get", "host", name, "-o", 'jsonpath={.status.conditions[?(@.type=="Reachable")].status}/{.status.conditions[?(@.type=="Reachable")].reason}');

  before(async () => {
    lab = await SshLab.start(3);
    server = await startSlipway();
    kc = server.kubeconfig;
  });
  after(async () => {
    try {
      if (server) assert.equal(await server.stop("SIGTERM"), 0, "slipway up exits cleanly");
      if (server) removeDir(server.dataDir);
    } finally {
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
});
