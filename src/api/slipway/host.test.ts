import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { hostKind, type HostObject } from "./host.ts";
import { admit, cell, manifest } from "../testing.ts";

function host(spec: Record<string, unknown>, status?: HostObject["status"]): HostObject {
  return { ...manifest(hostKind, "node-1", spec), ...(status ? { status } : {}) };
}

describe("Host", () => {
  it("defaults the port, the user and the Secret's key", () => {
    const { object, schemaErrors, errors } = admit(hostKind, host({ address: "192.0.2.10", sshKeySecretRef: { name: "rack-key" } }));
    assert.deepEqual([schemaErrors, errors], [[], []]);
    assert.deepEqual(object.spec, { address: "192.0.2.10", port: 22, user: "root", sshKeySecretRef: { name: "rack-key", key: "ssh-privatekey" } });
  });

  it("requires an address and a key Secret, a port in range and an address that is one", () => {
    assert.deepEqual(admit(hostKind, host({ sshKeySecretRef: { name: "k" } })).schemaErrors.map(([p]) => p), ["/spec/address"]);
    assert.deepEqual(admit(hostKind, host({ address: "192.0.2.10" })).schemaErrors.map(([p]) => p), ["/spec/sshKeySecretRef"]);
    assert.deepEqual(admit(hostKind, host({ address: "192.0.2.10", port: 70000, sshKeySecretRef: { name: "k" } })).schemaErrors.map(([p]) => p), ["/spec/port"]);
    assert.deepEqual(admit(hostKind, host({ address: "-oProxyCommand=x", sshKeySecretRef: { name: "k" } })).errors.map((e) => e.field), ["spec.address"]);
  });

  it("keeps a host where it is while a cluster uses it", () => {
    const used = admit(hostKind, host({ address: "192.0.2.10", sshKeySecretRef: { name: "k" } }, { clusterRef: { name: "demo" } })).object;
    const { errors } = admit(hostKind, host({ address: "192.0.2.11", sshKeySecretRef: { name: "k" } }), used);
    assert.deepEqual(errors.map((e) => [e.field, e.message]), [["spec.address", 'Invalid value: "192.0.2.11": field is immutable: the host is used by cluster demo']]);
    const free = admit(hostKind, host({ address: "192.0.2.10", sshKeySecretRef: { name: "k" } })).object;
    assert.deepEqual(admit(hostKind, host({ address: "192.0.2.11", sshKeySecretRef: { name: "k" } }), free).errors, []);
  });

  it("shows reachability, the OS and the cluster in its columns", () => {
    const h = host({ address: "192.0.2.10", sshKeySecretRef: { name: "k" } }, {
      conditions: [{ type: "Reachable", status: "True", reason: "LoggedIn", message: "", lastTransitionTime: "2026-01-01T00:00:00Z" }],
      facts: { os: "Debian GNU/Linux 12 (bookworm)", kernel: "6.1.0", architecture: "x86_64", cpus: 4, memoryMiB: 8000 },
      clusterRef: { name: "demo" },
    });
    assert.deepEqual(["ADDRESS", "REACHABLE", "OS", "CLUSTER"].map((c) => cell(hostKind, c, h)), ["192.0.2.10", "True", "Debian GNU/Linux 12 (bookworm)", "demo"]);
  });
});
