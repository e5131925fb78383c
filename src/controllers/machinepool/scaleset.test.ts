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
import { countMachines, summarizePool } from "./status.ts";
import { launchTemplateKey } from "./template.ts";

const ref = (kind: string, name: string) => ({ apiVersion: "slipway.dev/v1alpha1", kind, name });

async function setUp(replicas: number, instances: { id: string; ready: boolean }[], desired: number, name = "w") {
  const objects = await memoryObjects();
  const client = new Client(objects);
  const pool = await client.of<MachinePoolObject>(machinePoolKind).create({
    apiVersion: "slipway.dev/v1alpha1",
    kind: "MachinePool",
    metadata: { name, namespace: "default" },
    spec: { clusterName: "demo", connection: "sim", machineType: "s1.small", replicas, template: { infrastructureRef: ref("SimMachinePool", "w-set"), bootstrap: { configRef: ref("BootstrapConfig", "w-join") } } },
  });
  const machines: MachineObject[] = [];
  for (const i of instances) {
    const made = await client.of<MachineObject>(machineKind).create(instanceMachine(pool, "asg-1", { instanceId: i.id, providerId: `sim://sim-east-1/${i.id}` }));
    machines.push({ ...made, status: { phase: i.ready ? "Running" : "Provisioning", nodeReady: i.ready, bootstrapped: true, nodeName: i.id, conditions: i.ready ? [{ type: "NodeReady", status: "True", lastTransitionTime: "2024-12-31T00:00:00Z" }] : [] } });
  }
  const set: PoolInfo = {
    id: "asg-1", name: "w", state: "ready", cloudState: "active", tags: {}, zones: ["a"], minSize: 0, maxSize: 10, desired, replicas: instances.length, readyReplicas: instances.length,
    instances: instances.map((i) => ({ instanceId: i.id, providerId: `sim://sim-east-1/${i.id}`, zone: "a", state: "ready", healthy: true, protected: true, upToDate: true })),
  };
  const events: string[] = [];
  const resized: number[] = [];
  const ctx = reconcileContext({ client, event: async (_o, _type, reason, message) => void events.push(`${reason}: ${message}`) });
  const scope: MachinePoolScope = {
    original: pool, object: structuredClone(pool), timings: { pollMs: 10 }, machines, listMachines: async () => machines, deleted: new Set(),
    cluster: { metadata: { name: "demo" } } as MachinePoolScope["cluster"],
    scaleSet: { infrastructure: { status: { scaleSetId: "asg-1", poolTemplate: launchTemplateKey(pool.spec) } } as never, readScaleSet: async () => set, resizeScaleSet: async (_id, desired) => void resized.push(desired) },
  };
  // Machines not deleted (a deleted one stays until the machine controller, not run here, releases its finalizer).
  const left = async () => (await client.of<MachineObject>(machineKind).list("default")).items.filter((m) => !m.metadata.deletionTimestamp).map((m) => m.metadata.name).sort();
  return { ctx, scope, events, left, set, resized, client };
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

  describe("rolling to a new template", () => {
    /** A pool of two Ready instances whose machine type then changes to s1.medium, launch template brought along. */
    async function changed(strategy?: { maxSurge?: number; maxUnavailable?: number }) {
      const setup = await setUp(2, [{ id: "i-a", ready: true }, { id: "i-b", ready: true }], 2);
      const { scope, set } = setup;
      scope.object.spec.machineType = "s1.medium";
      if (strategy) scope.object.spec.strategy = strategy;
      scope.scaleSet!.infrastructure!.status!.poolTemplate = launchTemplateKey(scope.object.spec);
      for (const i of set.instances) i.upToDate = false;
      /** The cloud launches an instance from the new template; `ready` once its node is. */
      const launch = (id: string) => {
        set.instances.push({ instanceId: id, providerId: `sim://sim-east-1/${id}`, zone: "a", state: "pending", healthy: true, protected: true, upToDate: true });
      };
      const ready = (name: string) => {
        scope.machines = scope.machines.map((m) => (m.metadata.name === name ? { ...m, status: { phase: "Running", nodeReady: true, bootstrapped: true, nodeName: name, conditions: [{ type: "NodeReady", status: "True", lastTransitionTime: "2024-12-31T00:00:00Z" }] } } : m));
      };
      /** The machine's drain finished and its instance left with the desired capacity lowered. */
      const gone = (name: string) => {
        const m = scope.machines.find((x) => x.metadata.name === name)!;
        set.instances = set.instances.filter((i) => i.instanceId !== m.spec.scaleSetInstance!.instanceId);
        set.desired -= 1;
        scope.machines = scope.machines.filter((x) => x !== m);
        scope.deleted.clear();
      };
      return { ...setup, launch, ready, gone };
    }

    it("surges one instance from the new launch template, waits for it to be Ready, then drains one outdated machine and removes its instance, until all are new", async () => {
      const { ctx, scope, set, resized, events, left, launch, ready, gone } = await changed();
      const updated = () => countMachines(scope.object, { machines: scope.machines, deleted: scope.deleted }).updated;
      await followScaleSet(ctx, scope);
      assert.deepEqual(resized, [3], "the desired capacity is raised by maxSurge (1)");
      assert.deepEqual([...scope.deleted], [], "nothing is drained before a new instance is Ready");
      set.desired = 3;
      // Asked again before the cloud launched: the instance it owes counts, no second surge.
      await followScaleSet(ctx, scope);
      assert.deepEqual(resized, [3]);
      launch("i-c");
      await followScaleSet(ctx, scope);
      assert.deepEqual(await left(), ["w-i-a", "w-i-b", "w-i-c"]);
      assert.equal(updated(), 1, "the instance launched from the new template counts as updated");
      assert.deepEqual([...scope.deleted], [], "the new machine is not Ready yet: nothing is drained");
      ready("w-i-c");
      await followScaleSet(ctx, scope);
      assert.equal(scope.deleted.size, 1);
      const first = [...scope.deleted][0]!;
      assert.ok(["w-i-a", "w-i-b"].includes(first), first);
      const marked = await ctx.client.of<MachineObject>(machineKind).tryGet("default", first);
      assert.ok(marked?.metadata.deletionTimestamp, "the outdated machine is deleted (it drains, then its instance leaves)");
      assert.match(events.join("\n"), /RollingMachines: rolling to template \w+ \(machine type s1\.medium, image [^)]+\): 1 of 2 instances updated; draining w-i-[ab], their instances leave scale set asg-1/);
      assert.deepEqual(resized, [3], "no surge while the outdated machine drains");
      gone(first);
      await followScaleSet(ctx, scope);
      assert.deepEqual(resized, [3, 3], "the next instance is surged once the first outdated one is gone");
      set.desired = 3;
      launch("i-d");
      await followScaleSet(ctx, scope);
      ready("w-i-d");
      await followScaleSet(ctx, scope);
      const second = [...scope.deleted][0]!;
      assert.ok(["w-i-a", "w-i-b"].includes(second) && second !== first, second);
      gone(second);
      for (const i of set.instances) i.state = "ready";
      assert.equal(await followScaleSet(ctx, scope), undefined, "rolled: the pool is settled");
      assert.deepEqual(resized, [3, 3]);
      assert.deepEqual(scope.machines.map((m) => m.metadata.name).sort(), ["w-i-c", "w-i-d"]);
      assert.equal(updated(), 2);
    });

    it("marks the outdated machines it drains so their instances leave with the desired capacity lowered", async () => {
      const { ctx, scope, client } = await changed({ maxSurge: 0, maxUnavailable: 1 });
      const seen: Record<string, string | undefined> = {};
      const original = client.of<MachineObject>(machineKind);
      const machines = ctx.client.of<MachineObject>(machineKind);
      const del = machines.delete.bind(machines);
      machines.delete = async (ns, name, options) => {
        seen[name!] = (await original.get(ns, name!)).metadata.annotations?.[ANNOTATION_SCALE_IN];
        return del(ns, name, options);
      };
      ctx.client.of = (() => machines) as never;
      await followScaleSet(ctx, scope);
      assert.deepEqual(Object.values(seen), ["true"], "maxUnavailable 1, maxSurge 0: one outdated machine drained first, marked for scale-in");
    });

    it("at the scale set's maxSize with maxUnavailable 0, waits and says why on MachinesUpToDate and in one Warning, naming the fields; goes on once the maxSize is raised", async () => {
      const { ctx, scope, set, resized, events } = await changed();
      set.maxSize = 2;
      const summarize = () => summarizePool(scope.object, { machines: scope.machines, deleted: scope.deleted }, "2025-01-01T00:00:00Z", undefined, { ...(scope.scaleSet!.rollBlocked ? { rollBlocked: scope.scaleSet!.rollBlocked } : {}) });
      assert.deepEqual(await followScaleSet(ctx, scope), { requeueAfterMs: 10 });
      assert.deepEqual([resized, [...scope.deleted]], [[], []], "nothing surged beyond the maxSize, nothing drained");
      const message = "cannot surge: scale set asg-1 is at its maxSize 2 (spec.maxSize of SimMachinePool w-set) and maxUnavailable is 0 (spec.strategy.maxUnavailable of MachinePool w), so no instance may go before a new one is Ready; 2 outdated instance(s) wait until the maxSize is raised or maxUnavailable is at least 1";
      assert.deepEqual(events, [`CannotSurge: ${message}`]);
      summarize();
      const condition = scope.object.status?.conditions?.find((c) => c.type === "MachinesUpToDate");
      assert.deepEqual([condition?.status, condition?.reason, condition?.message], ["False", "CannotSurge", message]);
      assert.deepEqual([scope.object.status?.reason, scope.object.status?.message], ["CannotSurge", message]);
      // Asked again while it waits: the same word is not repeated.
      scope.scaleSet!.rollBlocked = undefined;
      await followScaleSet(ctx, scope);
      assert.equal(events.length, 1);
      // The maxSize raised: the roll surges, and the condition goes back to plain rolling.
      set.maxSize = 3;
      scope.scaleSet!.rollBlocked = undefined;
      await followScaleSet(ctx, scope);
      assert.deepEqual(resized, [3]);
      assert.equal(scope.scaleSet!.rollBlocked, undefined);
      summarize();
      assert.equal(scope.object.status?.conditions?.find((c) => c.type === "MachinesUpToDate")?.reason, "Rolling");
    });

    it("names the Cluster's fields when the stuck pool is one the cluster declares", async () => {
      const { ctx, scope, set, events } = await setUp(1, [{ id: "i-a", ready: true }], 1, "demo-set");
      scope.object.metadata.labels = { ...scope.object.metadata.labels, "slipway.dev/pool": "set" };
      scope.cluster = { metadata: { name: "demo" }, spec: { workers: [{ name: "other" }, { name: "set" }] } } as never;
      set.maxSize = 1;
      scope.object.spec.machineType = "s1.medium";
      scope.scaleSet!.infrastructure!.status!.poolTemplate = launchTemplateKey(scope.object.spec);
      await followScaleSet(ctx, scope);
      assert.match(events.join("\n"), /CannotSurge: cannot surge: scale set asg-1 is at its maxSize 1 \(spec\.maxSize of SimMachinePool w-set\) and maxUnavailable is 0 \(spec\.workers\[1\]\.strategy\.maxUnavailable of Cluster demo\)/);
    });

    it("surges nothing before the SimMachinePool brought the launch template to the pool's template", async () => {
      const { ctx, scope, resized } = await changed();
      scope.scaleSet!.infrastructure!.status!.poolTemplate = "the-old-one";
      assert.deepEqual(await followScaleSet(ctx, scope), { requeueAfterMs: 10 });
      assert.deepEqual(resized, []);
      assert.deepEqual([...scope.deleted], []);
    });

    it("labels a machine made for an instance launched from the old template as outdated", async () => {
      const { ctx, scope, set } = await changed();
      set.instances.push({ instanceId: "i-old", providerId: "sim://sim-east-1/i-old", zone: "a", state: "pending", healthy: true, protected: true, upToDate: false });
      set.desired = 3;
      await followScaleSet(ctx, scope);
      const made = scope.machines.find((m) => m.metadata.name === "w-i-old")!;
      assert.equal(countMachines(scope.object, { machines: [made], deleted: new Set() }).updated, 0);
    });
  });

  it("remediates a failed machine: drains and deletes it without the scale-in mark, so its instance is replaced and the desired capacity kept", async () => {
    const { ctx, scope, events, resized, client } = await setUp(3, [{ id: "i-a", ready: true }, { id: "i-b", ready: true }, { id: "i-c", ready: true }], 3);
    scope.machines = scope.machines.map((m) => (m.metadata.name === "w-i-b" ? { ...m, status: { ...m.status, phase: "Failed", failureReason: "NodeUnhealthy", failureMessage: "node i-b not Ready for 5m" } } : m));
    const before = (await client.of<MachineObject>(machineKind).get("default", "w-i-b")).metadata.annotations?.[ANNOTATION_SCALE_IN];
    await followScaleSet(ctx, scope);
    assert.equal(before, undefined);
    assert.deepEqual([...scope.deleted], ["w-i-b"]);
    assert.ok((await client.of<MachineObject>(machineKind).get("default", "w-i-b")).metadata.deletionTimestamp, "the failed machine is deleted");
    assert.match(events.join("\n"), /ReplacingMachine: replacing machine w-i-b: NodeUnhealthy: node i-b not Ready for 5m/);
    assert.doesNotMatch(events.join("\n"), /ScalingDown/);
    assert.deepEqual(resized, [], "the desired capacity is left as it is: the cloud launches the replacement");
    assert.equal(scope.object.status?.remediation?.attempts, 1);
  });
});
