// The Host controller and the ssh provider over the API, on real sshd hosts (the lab): a Host is
// checked (host key pinned, facts read) and shows in its printer columns; a wrong key, an address where
// nothing answers and a changed host key each say why in the Reachable condition; claims through an ssh
// Connection never give one host to two clusters, say which cluster holds which host, and deleting the
// machine cleans the host and frees it; a Host in use waits for its cluster before it goes.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { release } from "node:os";
import { secretKind } from "../../api/core.ts";
import type { ClusterObject, ConnectionObject, HostObject, SecretObject } from "../../api/kinds.ts";
import { apiVersionOf } from "../../api/registry.ts";
import { LABEL_CONNECTION, connectionKind } from "../../api/slipway/connection.ts";
import { hostKind } from "../../api/slipway/host.ts";
import { toTable } from "../../apiserver/table.ts";
import { isProviderError, type InstanceInfo, type Machines } from "../../providers/provider.ts";
import { HOST_MACHINE_TYPE } from "../../providers/ssh/index.ts";
import { SshLab, labUnavailable, type LabHost } from "../../providers/ssh/testing/lab.ts";
import { controllerTestEnv, type ControllerTestEnv } from "../testing.ts";
import { registerHostController } from "./controller.ts";
import { registerClusterController } from "../cluster/controller.ts";
import { registerConnectionController } from "../connection/controller.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { ANNOTATION_TRUST_HOST_KEY } from "./phases.ts";

const NS = "default";
const USER_DATA = "#cloud-config\nwrite_files:\n  - path: /etc/slipway-test/marker\n    content: hello\nruncmd:\n  - mkdir -p /var/lib/slipway-test-data\n";

function secret(name: string, privateKey: string): SecretObject {
  return { apiVersion: "v1", kind: "Secret", metadata: { name, namespace: NS }, type: "kubernetes.io/ssh-auth", data: { "ssh-privatekey": Buffer.from(privateKey).toString("base64") } };
}

function hostObject(name: string, address: string, keySecret: string, connection = "rack"): HostObject {
  return {
    apiVersion: apiVersionOf(hostKind),
    kind: "Host",
    metadata: { name, namespace: NS, labels: { [LABEL_CONNECTION]: connection } },
    spec: { address, port: 22, user: "root", sshKeySecretRef: { name: keySecret } },
  };
}

function reachableOf(host: HostObject | undefined) {
  return host?.status?.conditions?.find((c) => c.type === "Reachable");
}

describe("Host controller and ssh claims on real hosts", { skip: labUnavailable() }, () => {
  let lab: SshLab;
  let env: ControllerTestEnv;
  let rack: ConnectionObject;
  const hosts = () => env.client.of<HostObject>(hostKind);
  const waitReachable = (name: string, status: "True" | "False", reason?: string) =>
    env.waitFor(hostKind, NS, name, (h) => reachableOf(h)?.status === status && (reason === undefined || reachableOf(h)?.reason === reason), 20_000);

  before(async () => {
    lab = await SshLab.start(3);
    env = await controllerTestEnv();
    registerHostController(env.manager, { retryMs: 200, recheckMs: 60_000 });
    registerConnectionController(env.manager, { providers: env.providers }, { recheckMs: 200 });
    registerClusterController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20, revalidateMs: 60_000 });
    await env.start();
    await env.client.of(secretKind).create(secret("lab-key", lab.privateKey));
    rack = await env.client.of(connectionKind).create({ apiVersion: apiVersionOf(connectionKind), kind: "Connection", metadata: { name: "rack", namespace: NS }, spec: { provider: "ssh", region: "rack-1" } });
  });
  after(async () => {
    await env?.close();
    await lab?.stop();
  });

  const labHost = (i: number): LabHost => lab.hosts[i]!;

  it("pins the host key at first contact, reads the facts and shows them in its columns", async () => {
    for (const [i, host] of lab.hosts.entries()) await hosts().create(hostObject(`h${i + 1}`, host.address, "lab-key"));
    for (const [i, host] of lab.hosts.entries()) {
      const checked = await waitReachable(`h${i + 1}`, "True");
      assert.equal(checked?.status?.hostKeyFingerprint, host.hostKeyFingerprint);
      assert.equal(checked?.status?.facts?.kernel, release());
      assert.ok((checked?.status?.facts?.cpus ?? 0) >= 1);
    }
    const table = toTable(hostKind as never, [(await hosts().get(NS, "h1")) as never], { includeObject: "None" });
    assert.deepEqual(table.columnDefinitions.slice(0, 6).map((c) => c.name), ["Name", "ADDRESS", "REACHABLE", "OS", "CLUSTER", "AGE"]);
    const cells = table.rows[0]!.cells;
    assert.deepEqual(cells.slice(0, 3), ["h1", labHost(0).address, "True"]);
    assert.ok(String(cells[3]).length > 0, "OS column filled");
  });

  it("names a wrong key, a missing Secret and a host that does not answer", async () => {
    const { privateKey: wrong } = await SshLab.keyPair(lab.dir, "other-key");
    await env.client.of(secretKind).create(secret("wrong-key", wrong));
    await hosts().create(hostObject("wrong", labHost(0).address, "wrong-key", "elsewhere"));
    await hosts().create(hostObject("nosecret", labHost(0).address, "no-such-secret", "elsewhere"));
    await hosts().create(hostObject("nowhere", `${lab.subnet}.99`, "lab-key", "elsewhere"));
    const wrongHost = await waitReachable("wrong", "False", "AuthenticationFailed");
    assert.match(reachableOf(wrongHost)?.message ?? "", new RegExp(`root@${labHost(0).address.replace(/\./g, "\\.")}:22 refused the SSH key`));
    assert.ok(!JSON.stringify(wrongHost).includes("PRIVATE KEY"), "no key in the Host");
    const noSecret = await waitReachable("nosecret", "False", "SecretNotFound");
    assert.match(reachableOf(noSecret)?.message ?? "", /Secret "no-such-secret" named by spec.sshKeySecretRef does not exist/);
    const nowhere = await waitReachable("nowhere", "False", "Unreachable");
    assert.match(reachableOf(nowhere)?.message ?? "", new RegExp(`${lab.subnet.replace(/\./g, "\\.")}\\.99:22 cannot be reached`));
    for (const name of ["wrong", "nosecret", "nowhere"]) await hosts().delete(NS, name);
  });

  it("claims each host for one cluster only, names who holds what when none is free, and cleans and frees a host on delete", async () => {
    const machines = await env.providers.capability(rack, "machines");
    const spec = { zone: "rack-1", machineType: HOST_MACHINE_TYPE, imageId: "host", userData: USER_DATA };
    const a = await machines.create("instance", spec, { token: "cluster-a-cp-0", tags: { "slipway.dev/cluster": "a", "slipway.dev/owner": "m-a" } });
    const b = await machines.create("instance", spec, { token: "cluster-b-cp-0", tags: { "slipway.dev/cluster": "b", "slipway.dev/owner": "m-b" } });
    const c = await machines.create("instance", spec, { token: "cluster-c-cp-0", tags: { "slipway.dev/cluster": "c", "slipway.dev/owner": "m-c" } });
    assert.equal(new Set([a.id, b.id, c.id]).size, 3, "three clusters get three different hosts");
    assert.equal((await machines.create("instance", spec, { token: "cluster-a-cp-0", tags: { "slipway.dev/cluster": "a" } })).id, a.id, "a retried claim gets the same host");
    // A second Host for a machine a cluster holds does not make it free.
    await hosts().create(hostObject("twin", labHost(0).address, "lab-key"));
    await waitReachable("twin", "True");
    await assert.rejects(machines.create("instance", spec, { token: "cluster-d-cp-0", tags: { "slipway.dev/cluster": "d" } }), (e: unknown) => {
      assert.ok(isProviderError(e, "capacity"));
      assert.match(e.message, /h1: used by cluster a; h2: used by cluster b; h3: used by cluster c; twin: the same machine is used as Host h1 of cluster a/);
      return true;
    });
    await hosts().delete(NS, "twin");
    const held = await env.waitFor(hostKind, NS, a.id, (h) => h?.status?.conditions?.some((c) => c.type === "Claimed" && c.reason === "InUse") ?? false);
    assert.equal(held?.status?.clusterRef?.name, "a");
    const ready = await waitInstance(machines, a.id, "ready");
    assert.equal(ready.privateIp, labHost(0).address);
    assert.deepEqual((await lab.writtenFiles(labHost(0))).filter((f) => f.startsWith("/etc/slipway-test")), ["/etc/slipway-test/marker"]);
    assert.ok((await machines.consoleOutput(a.id)).some((l) => l.startsWith("write-files")));

    // A host in use stays until its cluster is done with it.
    await hosts().delete(NS, b.id);
    const waiting = await hosts().get(NS, b.id);
    assert.ok(waiting.metadata.deletionTimestamp, "being deleted");
    for (const id of [a.id, b.id, c.id]) await machines.delete("instance", id);
    for (const [i, id] of [a.id, b.id, c.id].entries()) {
      await waitInstance(machines, id, "gone");
      assert.deepEqual(await lab.writtenFiles(labHost(i)), [], `${id} is as it was found`);
    }
    await env.waitFor(hostKind, NS, b.id, (h) => h === undefined, 20_000);
    const freed = await env.waitFor(hostKind, NS, a.id, (h) => h?.status?.conditions?.some((c) => c.type === "Claimed" && c.status === "False") ?? false);
    assert.equal(freed?.status?.clusterRef, undefined);
  });

  it("refuses a host whose key changed, until the new key is trusted", async () => {
    const host = labHost(2);
    const before = (await hosts().get(NS, "h3")).status?.hostKeyFingerprint;
    const changed = await lab.replaceHostKey(host);
    await hosts().patch(NS, "h3", "merge", { metadata: { annotations: { "slipway.dev/check": "now" } } });
    const refused = await waitReachable("h3", "False", "HostKeyChanged");
    assert.ok(reachableOf(refused)?.message?.includes(changed) && reachableOf(refused)?.message?.includes(before ?? "?"), reachableOf(refused)?.message);
    assert.equal(refused?.status?.hostKeyFingerprint, before, "the pinned key stays");

    // A cluster that needs the hosts is refused before anything changes, naming each host and why.
    const machines = await env.providers.capability(rack, "machines");
    const spec = { zone: "rack-1", machineType: HOST_MACHINE_TYPE, imageId: "host", userData: USER_DATA };
    const other = await machines.create("instance", spec, { token: "other-cp-0", tags: { "slipway.dev/cluster": "other" } });
    await env.client.of(clusterKind).create({
      apiVersion: apiVersionOf(clusterKind),
      kind: "Cluster",
      metadata: { name: "demo", namespace: NS },
      spec: { controlPlane: { connection: "rack", machineType: "host" }, workers: [{ name: "pool", connection: "rack", machineType: "host", replicas: 1 }] },
    } as ClusterObject);
    const failed = await env.waitFor(clusterKind, NS, "demo", (c) => c?.status?.phase === "Failed", 20_000);
    const message = failed?.status?.message ?? "";
    assert.equal(failed?.status?.reason, "ValidationFailed");
    assert.ok(message.includes(`the cluster needs 2 hosts in connection "rack", 0 can be used`), message);
    assert.ok(message.includes(`host ${other.id} (${other.privateIp}): used by cluster other`), message);
    assert.ok(message.includes(`host h3 (${host.address}): HostKeyChanged: root@${host.address}:22 presented host key ${changed}`), message);
    const claimed = (await hosts().list(NS)).items.filter((h) => h.status?.claim).map((h) => h.metadata.name);
    assert.deepEqual(claimed, [other.id], "nothing was claimed for the refused cluster");
    // The Connection counts its hosts (rechecked every 200 ms here).
    await env.waitFor(connectionKind, NS, "rack", (c) => c?.status?.phase === "Ready" && c.status.conditions?.[0]?.message === "2 hosts labelled with the connection, 1 reachable");
    await env.client.of(clusterKind).delete(NS, "demo");
    await machines.delete("instance", other.id);
    await waitInstance(machines, other.id, "gone");

    await hosts().patch(NS, "h3", "merge", { metadata: { annotations: { [ANNOTATION_TRUST_HOST_KEY]: changed } } });
    const trusted = await waitReachable("h3", "True");
    assert.equal(trusted?.status?.hostKeyFingerprint, changed);
  });

  async function waitInstance(machines: Machines, id: string, state: "ready" | "gone"): Promise<Partial<InstanceInfo>> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const info = await machines.get("instance", id);
      if (state === "gone" ? info === undefined : info?.state === "ready") return info ?? { state: "gone" };
      if (info?.state === "failed") throw new Error(`instance ${id} failed: ${info.reason?.message}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`instance ${id} did not become ${state}`);
  }
});
