import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { MachineObject, MachinePoolObject } from "../../api/kinds.ts";
import { ANNOTATION_SCALE_IN, machineKind } from "../../api/slipway/machine.ts";
import { machinePoolKind } from "../../api/slipway/machinepool.ts";
import type { PoolInfo } from "../../providers/provider.ts";
import { Client } from "../../runtime/client.ts";
import { memoryObjects, reconcileContext } from "../../runtime/testing.ts";
import type { MachinePoolScope } from "./phases.ts";
import { followScaleSet, instanceMachine } from "./scaleset.ts";

const ref = (kind: string, name: string) => ({ apiVersion: "slipway.dev/v1alpha1", kind, name });

async function setUp(replicas: number, instances: { id: string; ready: boolean }[], desired: number) {
  const objects = await memoryObjects();
  const client = new Client(objects);
  const pool = await client.of<MachinePoolObject>(machinePoolKind).create({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "MachinePool",
    metadata: { name: "w", namespace: "default" },
    spec: { clusterName: "demo", connection: "sim", machineType: "s1.small", replicas, template: { infrastructureRef: ref("SimMachinePool", "w-set"), bootstrap: { configRef: ref("BootstrapConfig", "w-join") } } },
  });
  const machines: MachineObject[] = [];
  for (const i of instances) {
    const made = await client.of<MachineObject>(machineKind).create(instanceMachine(pool, "asg-1", { instanceId: i.id, providerId: `sim://sim-east-1/${i.id}` }));
    machines.push({ ...made, status: { phase: i.ready ? "Running" : "Provisioning", nodeReady: i.ready, bootstrapped: true, nodeName: i.id, conditions: i.ready ? [{ type: "NodeReady", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" }] : [] } });
  }
  const set: PoolInfo = {
    id: "asg-1", name: "w", state: "ready", cloudState: "active", tags: {}, zones: ["a"], minSize: 0, maxSize: 10, desired, replicas: instances.length, readyReplicas: instances.length,
    instances: instances.map((i) => ({ instanceId: i.id, providerId: `sim://sim-east-1/${i.id}`, zone: "a", state: "ready", healthy: true, protected: true, upToDate: true })),
  };
  const events: string[] = [];
  const ctx = reconcileContext({ client, event: async (_o, _type, reason, message) => void events.push(`${reason}: ${message}`) });
  const scope: MachinePoolScope = {
    original: pool, object: structuredClone(pool), timings: { pollMs: 10 }, machines, listMachines: async () => machines, deleted: new Set(),
    cluster: { metadata: { name: "demo" } } as MachinePoolScope["cluster"],
    scaleSet: { infrastructure: { status: { scaleSetId: "asg-1" } } as never, readScaleSet: async () => set },
  };
  const left = async () => (await client.of<MachineObject>(machineKind).list("default")).items.map((m) => m.metadata.name).sort();
  return { ctx, scope, events, left };
}

describe("a pool on a scale set", () => {
  it("scales in by the machine it chooses (one not Ready first), marked so its instance leaves with the desired capacity lowered", async () => {
    const { ctx, scope, events, left } = await setUp(2, [{ id: "i-a", ready: true }, { id: "i-b", ready: false }, { id: "i-c", ready: true }], 3);
    await followScaleSet(ctx, scope);
    assert.deepEqual(await left(), ["w-i-a", "w-i-c"]);
    assert.deepEqual([...scope.deleted], ["w-i-b"]);
    assert.match(events.join("\n"), /ScalingDown: scaling down to 2: draining w-i-b \(node i-b\); their instances leave scale set asg-1/);
    // Asked again before the cloud lowered its desired capacity: the machine on its way out counts, no second victim.
    scope.machines = scope.machines.map((m) => (m.metadata.name === "w-i-b" ? { ...m, metadata: { ...m.metadata, deletionTimestamp: "2026-01-01T00:00:00Z", annotations: { [ANNOTATION_SCALE_IN]: "true" } } } : m));
    scope.deleted.clear();
    await followScaleSet(ctx, scope);
    assert.deepEqual(await left(), ["w-i-a", "w-i-c"]);
  });

  it("makes a Machine for an instance the cloud launched, and deletes the machine of an instance that left the set", async () => {
    const { ctx, scope, events, left } = await setUp(3, [{ id: "i-a", ready: true }, { id: "i-b", ready: true }], 3);
    const set = await scope.scaleSet!.readScaleSet("asg-1");
    set!.instances = [set!.instances[0]!, { ...set!.instances[0]!, instanceId: "i-new", providerId: "sim://sim-east-1/i-new", state: "pending" }];
    scope.scaleSet!.readScaleSet = async () => set;
    await followScaleSet(ctx, scope);
    assert.deepEqual(await left(), ["w-i-a", "w-i-new"]);
    assert.match(events.join("\n"), /InstanceLost: instance\(s\) i-b \(machine w-i-b\) left scale set asg-1; the cloud replaces them/);
    const made = await ctx.client.of<MachineObject>(machineKind).get("default", "w-i-new");
    assert.deepEqual([made.spec.scaleSetInstance, made.spec.providerID, made.metadata.ownerReferences?.[0]?.kind], [{ scaleSetId: "asg-1", instanceId: "i-new" }, "sim://sim-east-1/i-new", "MachinePool"]);
  });
});
