import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SecretObject } from "../api/kinds.ts";
import { secretKind } from "../api/core.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { defaultRegistry } from "../api/kinds.ts";
import { renderKubeconfig } from "../bootstrap/kubeconfig.ts";
import { createCertificateAuthority } from "../bootstrap/pki.ts";
import { Client } from "../runtime/client.ts";
import { ManualClock } from "../runtime/testing.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { ensureDefaultNamespaces } from "../controlplane/namespaces.ts";
import { WorkloadClients } from "./workload.ts";

describe("WorkloadClients", () => {
  it("hands out one client per kubeconfig version, reading the Secret again only after the recheck period", async () => {
    const objects = new ObjectService(defaultRegistry(), SqliteStore.open(":memory:"));
    await ensureDefaultNamespaces(objects);
    const secrets = new Client(objects).of<SecretObject>(secretKind);
    const clock = new ManualClock();
    const workloads = new WorkloadClients(new Client(objects), { clock, recheckMs: 30_000 });
    const ca = await createCertificateAuthority({ commonName: "kubernetes" });
    const kubeconfig = (server: string) =>
      Buffer.from(renderKubeconfig({ clusterName: "demo", server, caCertPem: ca.certPem, user: "admin", token: "t" })).toString("base64");

    assert.equal(await workloads.forCluster("default", "demo"), undefined, "no kubeconfig yet");
    const created = await secrets.create({ apiVersion: "v1", kind: "Secret", metadata: { name: "demo-kubeconfig", namespace: "default" }, type: "Opaque", data: { value: kubeconfig("https://127.0.0.1:1") } } as SecretObject);
    const first = await workloads.forCluster("default", "demo");
    assert.ok(first);
    assert.equal(await workloads.forCluster("default", "demo"), first, "the same client while the Secret is unchanged");

    await secrets.update({ ...created, data: { value: kubeconfig("https://127.0.0.1:2") } });
    assert.equal(await workloads.forCluster("default", "demo"), first, "within the recheck period the Secret is not read");
    clock.advance(30_000);
    const second = await workloads.forCluster("default", "demo");
    assert.ok(second && second !== first, "a changed Secret gives a new client once the period is over");

    clock.advance(120_000);
    await workloads.forCluster("default", "other");
    assert.equal(workloads.size, 0, "a client not used for the idle period is closed");
    const third = await workloads.forCluster("default", "demo");
    assert.ok(third && third !== second, "and made again when asked for");

    // A watch through the client (the machines' node watch) keeps it open, however long nobody asks for it.
    workloads.hold("default", "demo");
    clock.advance(120_000);
    await workloads.forCluster("default", "other");
    assert.equal(workloads.size, 1, "a held client is not closed as idle");
    clock.advance(29_000);
    assert.equal(await workloads.forCluster("default", "demo"), third);
    workloads.release("default", "demo");
    clock.advance(120_000);
    await workloads.forCluster("default", "other");
    assert.equal(workloads.size, 0, "once released, it is closed when idle again");
    clock.advance(30_000);

    await secrets.delete("default", "demo-kubeconfig");
    assert.equal(await workloads.forCluster("default", "demo"), undefined, "a deleted Secret means no client");
    workloads.close();
  });
});
