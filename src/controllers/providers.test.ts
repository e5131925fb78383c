import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ConnectionObject, InfrastructureObject } from "../api/kinds.ts";
import { apiVersionOf } from "../api/registry.ts";
import { clusterKind } from "../api/slipway/cluster.ts";
import { connectionKind } from "../api/slipway/connection.ts";
import { infrastructureKind } from "../api/slipway/infrastructure.ts";
import { names } from "../api/slipway/names.ts";
import { fakeHostsProviderFactory } from "../providers/testing/hosts.ts";
import { getCondition } from "../runtime/conditions.ts";
import { registerClusterController } from "./cluster/controller.ts";
import { registerConnectionController } from "./connection/controller.ts";
import { controllerRef } from "./contract.ts";
import { registerInfrastructureController } from "./infrastructure/controller.ts";
import { ConnectionUnusableError } from "./providers.ts";
import { manifest } from "../api/testing.ts";
import { controllerTestEnvs, type ControllerTestEnv } from "./testing.ts";

const NS = "default";
const newEnv = controllerTestEnvs();

/** An environment with the sim provider and a provider of hosts (machines only) installed. */
async function setup(): Promise<ControllerTestEnv> {
  const env = await newEnv({ extraProviders: [fakeHostsProviderFactory()] });
  return env;
}

function connection(name: string, provider: string, region: string): ConnectionObject {
  return manifest(connectionKind, name, { provider, region });
}

describe("provider resolver", () => {
  it("opens a connection's provider from the installed ones, and names them when it is not installed", async () => {
    const env = await setup();
    assert.deepEqual(env.installed.names(), ["fake-hosts", "sim", "ssh"]);
    const rack = await env.client.of(connectionKind).create(connection("rack", "fake-hosts", "rack-1"));
    const machines = await env.providers.capability(rack, "machines");
    assert.equal((await machines.findTagged("instance", {})).length, 0);
    const elsewhere = await env.client.of(connectionKind).create(connection("elsewhere", "aws", "us-east-1"));
    await assert.rejects(env.providers.open(elsewhere), (error: unknown) => {
      assert.ok(error instanceof ConnectionUnusableError);
      assert.equal(error.message, 'connection "elsewhere" names provider "aws", which is not installed (installed: fake-hosts, sim, ssh)');
      return true;
    });
  });

  it("refuses a capability the provider lacks, under the reason CapabilityMissing", async () => {
    const env = await setup();
    const rack = await env.client.of(connectionKind).create(connection("rack", "fake-hosts", "rack-1"));
    await assert.rejects(env.providers.open(rack, ["catalogue", "clusterInfrastructure", "machines"]), (error: unknown) => {
      assert.ok(error instanceof ConnectionUnusableError);
      assert.equal(error.reason, "CapabilityMissing");
      assert.match(error.message, /^connection "rack": provider "fake-hosts" does not offer a catalogue \(.*\) nor cluster infrastructure \(.*\) \(it offers: machines\)$/);
      return true;
    });
  });
});

describe("controllers meeting a provider without a capability they need", () => {
  it("fail with a named reason before anything is built: the Connection, the Cluster, the Infrastructure", async () => {
    const env = await setup();
    registerConnectionController(env.manager, { providers: env.providers });
    registerClusterController(env.manager, { providers: env.providers, workloads: env.workloads }, { pollMs: 20, revalidateMs: 60_000 });
    registerInfrastructureController(env.manager, { providers: env.providers }, { pollMs: 10, failureRetryMs: 60_000 });
    await env.start();
    await env.client.of(connectionKind).create(connection("rack", "fake-hosts", "rack-1"));
    const cluster = await env.client.of(clusterKind).create(manifest(clusterKind, "demo", { controlPlane: { connection: "rack", machineType: "host" } }));

    // The Connection has no catalogue to check its region against.
    const conn = await env.waitFor(connectionKind, NS, "rack", (c) => c?.status?.phase === "Failed");
    const ready = getCondition(conn?.status?.conditions, "Ready");
    assert.equal(ready?.reason, "CapabilityMissing");
    assert.match(ready?.message ?? "", /provider "fake-hosts" does not offer a catalogue/);

    // The Cluster says what its connection lacks, and builds nothing.
    const failed = await env.waitFor(clusterKind, NS, "demo", (c) => c?.status?.phase === "Failed");
    assert.equal(failed?.status?.reason, "ValidationFailed");
    assert.match(failed?.status?.message ?? "", /spec\.controlPlane\.connection: connection "rack": .*provider "fake-hosts" does not offer a catalogue \(.*\) nor cluster infrastructure \(.*\) \(it offers: machines\)/);
    assert.deepEqual((await env.client.of(infrastructureKind).list(NS)).items, [], "no infrastructure was made");

    // An Infrastructure made for the connection anyway fails under the reason CapabilityMissing.
    await env.client.of(infrastructureKind).create({
      apiVersion: apiVersionOf(infrastructureKind),
      kind: "Infrastructure",
      metadata: { name: names.infrastructure("demo", "rack"), namespace: NS, ownerReferences: [controllerRef(cluster)] },
      spec: { clusterName: "demo", connection: "rack", region: "rack-1", nodeCIDR: "10.0.0.0/20", controlPlane: true, machineTypes: ["host"], images: ["host-os"] },
    } as InfrastructureObject);
    const infra = await env.waitFor(infrastructureKind, NS, "demo-rack", (i) => i?.status?.phase === "Failed");
    assert.equal(infra?.status?.reason, "CapabilityMissing");
    assert.match(infra?.status?.message ?? "", /does not offer a catalogue \(.*\) nor cluster infrastructure/);
  });
});
