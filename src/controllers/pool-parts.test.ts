import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, MachinePoolObject } from "../api/kinds.ts";
import { clusterKind } from "../api/slipway/cluster.ts";
import { hostMachinePoolKind, type HostMachinePoolObject } from "../api/slipway/hostmachinepool.ts";
import { machinePoolKind } from "../api/slipway/machinepool.ts";
import { manifest } from "../api/testing.ts";
import { controllerRef } from "./contract.ts";
import { registerHostMachinePoolController } from "./hostmachinepool/controller.ts";
import { controllerTestEnvs } from "./testing.ts";

const newEnv = controllerTestEnvs();

describe("A pool infrastructure controller (registerPoolInfrastructureController)", () => {
  it("waits for a pool to own the object, then for the pool's cluster, and looks again when a pool naming it changes", async () => {
    const env = await newEnv();
    registerHostMachinePoolController(env.manager, { providers: env.providers }, { pollMs: 20 });
    await env.start();
    const sets = env.client.of<HostMachinePoolObject>(hostMachinePoolKind);
    const pools = env.client.of<MachinePoolObject>(machinePoolKind);
    const waitingFor = (reason: string) => env.waitFor(hostMachinePoolKind, "default", "w-hosts", (o) => o?.status?.reason === reason);

    await sets.create(manifest(hostMachinePoolKind, "w-hosts", { hosts: ["h1"] }));
    const unowned = await waitingFor("WaitingForOwner");
    assert.deepEqual(unowned?.metadata.finalizers, ["slipway.dev/hostmachinepool"]);

    const template = { infrastructureRef: { apiVersion: "slipway.dev/v1alpha1", kind: "HostMachinePool", name: "w-hosts" }, bootstrap: { configRef: { apiVersion: "slipway.dev/v1alpha1", kind: "BootstrapConfig", name: "w-join" } } };
    const pool = await pools.create(manifest(machinePoolKind, "w", { clusterName: "demo", connection: "lab", machineType: "host", template }));
    const set = await sets.get("default", "w-hosts");
    await sets.update({ ...set, metadata: { ...set.metadata, ownerReferences: [controllerRef(pool)] } });
    const owned = await waitingFor("WaitingForCluster");
    assert.match(owned?.status?.message ?? "", /Cluster demo of pool w does not exist/);

    // The Cluster alone does not requeue the object; the pool naming it in its template does.
    await env.client.of<ClusterObject>(clusterKind).create(manifest(clusterKind, "demo", { controlPlane: { connection: "lab", machineType: "host" } }));
    const current = await pools.get("default", "w");
    await pools.update({ ...current, spec: { ...current.spec, replicas: 2 } });
    const ready = await waitingFor("WaitingForConnection");
    assert.match(ready?.status?.message ?? "", /Connection lab of pool w does not exist/);
  });
});
