import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterSpec } from "../../api/slipway/cluster.ts";
import type { HostRecord } from "../../providers/ssh/hosts.ts";
import { hostPreflight } from "./host-preflight.ts";

const spec = (cp: number, workers: number, machineType = "host"): ClusterSpec =>
  ({
    kubernetesVersion: "v1.31.2",
    controlPlane: { connection: "rack", machineType, replicas: cp },
    workers: [{ name: "pool", connection: "rack", machineType, replicas: workers }],
  }) as ClusterSpec;

function host(name: string, extra: Partial<HostRecord> = {}): HostRecord {
  return {
    name,
    target: { address: `10.250.1.${name.length + 10}`, port: 22, user: "root", privateKey: "k", hostKeyFingerprint: "SHA256:x" },
    reachable: true,
    facts: { os: "Debian", kernel: "6", architecture: "x86_64", cpus: 4, memoryMiB: 8192 },
    ...extra,
  };
}

describe("host preflight", () => {
  it("accepts a cluster that fits the free, reachable hosts, counting hosts it already holds", () => {
    const mine = host("h3", { claim: { token: "t", tags: { "slipway.dev/cluster": "demo" }, claimedAt: "" } });
    assert.deepEqual(hostPreflight(spec(1, 2), "demo", "rack", [host("h1"), host("h2"), mine]), []);
  });

  it("names every host that cannot serve, with its reason, when too few can", () => {
    const hosts = [
      host("h1", { claim: { token: "t", tags: { "slipway.dev/cluster": "other" }, claimedAt: "" } }),
      host("h2", { reachable: false, unreachableReason: "AuthenticationFailed", unreachableMessage: "root@10.250.1.12:22 refused the SSH key" }),
      host("h3", { reachable: false, unreachableReason: "HostKeyChanged", unreachableMessage: "presented another key" }),
      host("h4", { target: { address: "10.250.1.14", port: 22, user: "root" }, keyProblem: 'Secret "k" named by spec.sshKeySecretRef does not exist' }),
      host("h5"),
    ];
    const problems = hostPreflight(spec(1, 2), "demo", "rack", hosts);
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.field, 'connection "rack"');
    assert.equal(
      problems[0]!.message,
      'the cluster needs 3 hosts in connection "rack", 1 can be used; host h1 (10.250.1.12): used by cluster other; host h2 (10.250.1.12): AuthenticationFailed: root@10.250.1.12:22 refused the SSH key; host h3 (10.250.1.12): HostKeyChanged: presented another key; host h4 (10.250.1.14): Secret "k" named by spec.sshKeySecretRef does not exist',
    );
  });

  it("counts a Host naming a machine another Host of a cluster holds as used, naming that Host", () => {
    const twin = host("h2", { heldAs: "Host h9 of cluster other" });
    const problems = hostPreflight(spec(1, 1), "demo", "rack", [host("h1"), twin]);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!.message, /host h2 \(10\.250\.1\.12\): the same machine \(10\.250\.1\.12:22\) is used as Host h9 of cluster other/);
  });

  it("refuses another machine type, a connection without hosts, and control-plane hosts below kubeadm's minimum", () => {
    assert.match(hostPreflight(spec(1, 0, "s1.large"), "demo", "rack", [host("h1")])[0]!.message, /machine type "s1.large" is not offered in connection "rack" \(offered: host/);
    assert.deepEqual(hostPreflight(spec(1, 0), "demo", "rack", []).map((p) => p.message), ["no Host is labelled slipway.dev/connection=rack"]);
    const small = host("h1", { facts: { os: "Debian", kernel: "6", architecture: "x86_64", cpus: 1, memoryMiB: 1024 } });
    const problems = hostPreflight(spec(1, 0), "demo", "rack", [small]);
    assert.equal(problems[0]!.field, "spec.controlPlane");
    assert.match(problems[0]!.message, /kubeadm's minimum of 2 CPUs and 1700 MiB, 0 of the usable hosts meet it: host h1 has 1 CPUs, 1024 MiB/);
  });
});
