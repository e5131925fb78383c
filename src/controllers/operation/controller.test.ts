import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { apiVersionOf } from "../../api/registry.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { operationKind } from "../../api/slipway/operation.ts";
import { eventKind } from "../../api/core.ts";
import type { ClusterObject, ClusterStatus, OperationObject } from "../../api/kinds.ts";
import { ControllerManager } from "../../runtime/manager.ts";
import type { ObjectService } from "../../apiserver/objects.ts";
import { memoryObjects, queuedKeys, silentLogger, until } from "../../runtime/testing.ts";
import { OPERATION_COMPONENT, registerOperationController } from "./controller.ts";

const managers: ControllerManager[] = [];
after(async () => {
  for (const manager of managers) await manager.stop();
});

async function setup(objects?: ObjectService) {
  objects ??= await memoryObjects();
  const manager = new ControllerManager({ objects, replica: "replica-a", log: silentLogger });
  const controller = registerOperationController(manager);
  await manager.start();
  managers.push(manager);
  const clusters = manager.client.of(clusterKind);
  const operations = manager.client.of(operationKind);
  const events = manager.client.of(eventKind);

  const createCluster = (name: string) =>
    clusters.create({
      apiVersion: apiVersionOf(clusterKind),
      kind: "Cluster",
      metadata: { name, namespace: "default" },
      spec: { controlPlane: { connection: "sim-east", machineType: "m.large" } },
    });
  const createOperation = (name: string, type: "Create" | "Update" | "Delete", target: ClusterObject) =>
    operations.create({
      apiVersion: apiVersionOf(operationKind),
      kind: "Operation",
      metadata: { name, namespace: "default" },
      spec: {
        type,
        target: { apiVersion: target.apiVersion, kind: "Cluster", name: target.metadata.name!, uid: target.metadata.uid! },
        generation: target.metadata.generation,
      },
    });
  const setClusterStatus = (name: string, status: ClusterStatus) => clusters.patch("default", name, "merge", { status }, { subresource: "status" });
  /** What a cluster of one control-plane machine and no workers reports once it is built. */
  const built = (observedGeneration: number): ClusterStatus => ({
    phase: "Running",
    observedGeneration,
    reason: null as unknown as undefined,
    conditions: [{ type: "Ready", status: "True", reason: "Ready", lastTransitionTime: "2025-01-01T00:00:00Z" }],
    controlPlane: { desired: 1, ready: 1, updated: 1, replicas: 1 },
    workers: { desired: 0, ready: 0, updated: 0, replicas: 0 },
    steps: [],
  });
  const phaseOf = async (name: string) => (await operations.get("default", name)).status?.phase;
  const eventsOf = async (op: OperationObject) =>
    (await events.list("default", { fieldSelector: `involvedObject.uid=${op.metadata.uid}` })).items;
  const queued = () => queuedKeys(controller);
  return { manager, createCluster, createOperation, setClusterStatus, built, phaseOf, eventsOf, operations, clusters, queued };
}

describe("operation controller", () => {
  it("follows a create from InProgress to Succeeded, with progress and one event per phase", async () => {
    const env = await setup();
    const cluster = await env.createCluster("demo");
    const op = await env.createOperation("create-demo", "Create", cluster);
    await until(async () => (await env.phaseOf("create-demo")) === "InProgress", "the operation to start");

    await env.setClusterStatus("demo", {
      phase: "Provisioning",
      observedGeneration: 1,
      steps: [
        { name: "Validate", startedAt: "2025-01-01T00:00:00Z", finishedAt: "2025-01-01T00:00:05Z", outcome: "Succeeded" },
        { name: "Network sim-east", startedAt: "2025-01-01T00:00:05Z", outcome: "Running", target: { kind: "Infrastructure", name: "demo-sim-east" } },
      ],
    });
    // 1 of 5 steps: the 2 journalled, and those to come: the machine's, the network plugin's, Ready.
    await until(async () => (await env.operations.get("default", "create-demo")).status?.percentComplete === 20, "progress");
    assert.equal((await env.operations.get("default", "create-demo")).status?.message, "Cluster demo: Network sim-east");

    // Running for its generation but not Ready yet: still in progress.
    await env.setClusterStatus("demo", { ...env.built(1), conditions: [{ type: "Ready", status: "False", lastTransitionTime: "2025-01-01T00:00:00Z" }] });
    await until(async () => /is Running/.test((await env.operations.get("default", "create-demo")).status?.message ?? ""), "the controller to see it Running");
    assert.equal(await env.phaseOf("create-demo"), "InProgress");
    await env.setClusterStatus("demo", env.built(1));
    await until(async () => (await env.phaseOf("create-demo")) === "Succeeded", "the operation to succeed");
    const done = await env.operations.get("default", "create-demo");
    assert.equal(done.status?.percentComplete, 100);
    assert.ok(done.status?.startTime && done.status.endTime);

    const events = await until(async () => {
      const found = await env.eventsOf(op);
      return found.length === 2 && found;
    }, "two events");
    assert.deepEqual(events.map((e) => [e.reason, e.count]).sort(), [["Started", 1], ["Succeeded", 1]]);
    assert.ok(events.every((e) => e.reportingInstance === "replica-a" && e.reportingComponent === OPERATION_COMPONENT));
  });

  it("fails with the cluster's reason, stays Failed, and notes a recovery under the same generation", async () => {
    const env = await setup();
    const cluster = await env.createCluster("demo");
    const op = await env.createOperation("create-demo", "Create", cluster);
    await env.setClusterStatus("demo", { phase: "Failed", observedGeneration: 1, reason: "QuotaExceeded", message: "needs 8 vCPU, 4 left" });
    await until(async () => (await env.phaseOf("create-demo")) === "Failed", "the operation to fail");
    const failed = await env.operations.get("default", "create-demo");
    assert.deepEqual(failed.status?.error, { code: "QuotaExceeded", message: "needs 8 vCPU, 4 left" });
    assert.equal(failed.status?.recoveredTime, undefined);

    // Someone raises the quota; the cluster is built under the same generation.
    await env.setClusterStatus("demo", env.built(1));
    const recovered = await until(async () => {
      const now = await env.operations.get("default", "create-demo");
      return now.status?.recoveredTime !== undefined && now;
    }, "the recovery to be noted");
    assert.equal(recovered.status?.phase, "Failed", "the record of the attempt stays Failed");
    assert.deepEqual(recovered.status?.error, failed.status?.error);
    assert.equal(recovered.status?.endTime, failed.status?.endTime);
    assert.equal(recovered.status?.message, "Cluster demo failed (QuotaExceeded), then recovered: the change is applied and every node is Ready");
    const events = await until(async () => {
      const found = await env.eventsOf(op);
      return found.some((e) => e.reason === "Recovered") && found;
    }, "a Recovered event");
    assert.deepEqual(events.map((e) => e.reason).filter((r) => r !== "Started").sort(), ["Failed", "Recovered"]);

    // Noted once: further changes of the cluster leave the record alone.
    await env.setClusterStatus("demo", { ...env.built(1), message: "still fine" });
    const marker = await env.createOperation("marker", "Create", await env.clusters.get("default", "demo"));
    await until(async () => (await env.phaseOf("marker")) === "Succeeded", "a later operation on the same cluster");
    assert.equal((await env.operations.get("default", "create-demo")).metadata.resourceVersion, recovered.metadata.resourceVersion);
    assert.ok(marker);
  });

  it("leaves an ended operation out of its target's later changes, and follows those in progress", async () => {
    const env = await setup();
    const cluster = await env.createCluster("demo");
    await env.createOperation("create-demo", "Create", cluster);
    await env.setClusterStatus("demo", env.built(1));
    // Its end seen by the controller's own cache (the event of its last status write delivered).
    const cache = env.manager.informer(operationKind).cache;
    await until(async () => cache.get("default/create-demo")?.status?.phase === "Succeeded", "the create to succeed");

    const queued = env.queued();
    await env.setClusterStatus("demo", { ...env.built(1), message: "a later status" });
    await env.createOperation("delete-demo", "Delete", await env.clusters.get("default", "demo"));
    await until(async () => (await env.phaseOf("delete-demo")) === "InProgress", "the delete to start");
    await env.setClusterStatus("demo", { ...env.built(1), phase: "Deleting" });
    await until(async () => queued.filter((k) => k === "default/delete-demo").length >= 2, "the delete to follow the cluster");
    assert.ok(!queued.includes("default/create-demo"), `the ended create was queued again: ${queued.join(", ")}`);
  });

  it("cancels a create when the cluster is deleted, and completes a delete when it is gone", async () => {
    const env = await setup();
    const cluster = await env.createCluster("demo");
    await env.createOperation("create-demo", "Create", cluster);
    await env.createOperation("delete-demo", "Delete", cluster);
    await until(async () => (await env.phaseOf("delete-demo")) === "InProgress", "the delete to start");
    await env.clusters.delete("default", "demo");
    await until(async () => (await env.phaseOf("delete-demo")) === "Succeeded", "the delete to succeed");
    await until(async () => (await env.phaseOf("create-demo")) === "Canceled", "the create to be canceled");
    assert.equal((await env.operations.get("default", "create-demo")).status?.message, "Cluster demo was deleted");
  });

  it("starts an operation whose target its informer does not hold yet, instead of ending it as if the target were gone", async () => {
    // The cluster's watch event arrives after the operation's (etcd delivers each watch of a replica on
    // its own, and a slow watch catches up later): the cache lacks a target that exists.
    const objects = await memoryObjects();
    const held: (() => void)[] = [];
    let holding = true;
    const watch = objects.watch.bind(objects);
    objects.watch = (def, namespace, options, onEvent, onError) =>
      watch(def, namespace, options, (event) => (def.kind === "Cluster" && holding ? held.push(() => onEvent(event)) : onEvent(event)), onError);
    const env = await setup(objects);
    const cluster = await env.createCluster("late");
    const op = await env.createOperation("create-late", "Create", cluster);
    const first = await until(async () => (await env.phaseOf("create-late")) ?? false, "the operation's first status");
    assert.equal(first, "InProgress");

    holding = false;
    for (const deliver of held.splice(0)) deliver();
    await env.setClusterStatus("late", env.built(1));
    await until(async () => (await env.phaseOf("create-late")) === "Succeeded", "the operation to succeed once the cache holds its target");
    const events = await until(async () => {
      const found = await env.eventsOf(op);
      return found.length === 2 && found;
    }, "two events");
    assert.deepEqual(events.map((e) => e.reason).sort(), ["Started", "Succeeded"]);
  });

  it("still cancels a create whose target is gone when it first looks", async () => {
    const env = await setup();
    const cluster = await env.createCluster("short-lived");
    await env.clusters.delete("default", "short-lived");
    await env.createOperation("create-short-lived", "Create", cluster);
    await until(async () => (await env.phaseOf("create-short-lived")) === "Canceled", "the create to be canceled");
  });
});
