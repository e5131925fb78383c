import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../api/meta.ts";
import { eventKind, type EventObject } from "../api/core.ts";
import { Client } from "./client.ts";
import { EventRecorder } from "./events.ts";
import { ManualClock, memoryObjects, silentLogger } from "./testing.ts";
import { ShardLostError } from "./shards.ts";

function operation(name: string, uid: string): KubeObject {
  return { apiVersion: "slipway.dev/v1alpha1", kind: "Operation", metadata: { name, namespace: "default", uid } };
}

async function setup(options: { burst?: number; refillMs?: number } = {}) {
  const objects = await memoryObjects();
  const client = new Client(objects);
  const clock = new ManualClock();
  const recorder = new EventRecorder({
    client,
    component: "slipway.dev/test-controller",
    instance: "replica-a",
    log: silentLogger,
    clock,
    ...options,
  });
  const events = async (): Promise<EventObject[]> => (await client.of(eventKind).list("default")).items;
  return { recorder, clock, events };
}

describe("EventRecorder", () => {
  it("writes a core v1 Event naming the object, the reason and the replica that reported it", async () => {
    const { recorder, events } = await setup();
    await recorder.record(operation("op-1", "uid-1"), "Warning", "Failed", "Create of Cluster demo failed: QuotaExceeded");
    const [event, ...others] = await events();
    assert.equal(others.length, 0);
    assert.equal(event?.type, "Warning");
    assert.equal(event?.reason, "Failed");
    assert.equal(event?.message, "Create of Cluster demo failed: QuotaExceeded");
    assert.deepEqual(event?.involvedObject, { apiVersion: "slipway.dev/v1alpha1", kind: "Operation", namespace: "default", name: "op-1", uid: "uid-1" });
    assert.equal(event?.reportingComponent, "slipway.dev/test-controller");
    assert.equal(event?.reportingInstance, "replica-a");
    assert.equal(event?.count, 1);
    assert.match(event?.metadata.name ?? "", /^op-1\.[0-9a-f]+$/);
  });

  it("aggregates repeats into one Event whose count and lastTimestamp move", async () => {
    const { recorder, clock, events } = await setup();
    const op = operation("op-1", "uid-1");
    await recorder.record(op, "Normal", "Waiting", "waiting for the network");
    clock.advance(30_000);
    await recorder.record(op, "Normal", "Waiting", "waiting for the network");
    await recorder.record(op, "Normal", "Waiting", "waiting for the network");
    await recorder.record(op, "Normal", "Started", "started");
    const all = await events();
    assert.equal(all.length, 2);
    const waiting = all.find((e) => e.reason === "Waiting");
    assert.equal(waiting?.count, 3);
    assert.equal(waiting?.firstTimestamp, "2025-01-01T00:00:00Z");
    assert.equal(waiting?.lastTimestamp, "2025-01-01T00:00:30Z");
  });

  it("limits each object to a burst of events, then one per refill period", async () => {
    const { recorder, clock, events } = await setup({ burst: 3, refillMs: 60_000 });
    const noisy = operation("noisy", "uid-noisy");
    for (let i = 0; i < 5; i++) await recorder.record(noisy, "Normal", `Step${i}`, `step ${i}`);
    await recorder.record(operation("quiet", "uid-quiet"), "Normal", "Started", "started");
    let all = await events();
    assert.deepEqual(all.filter((e) => e.involvedObject.name === "noisy").map((e) => e.reason).sort(), ["Step0", "Step1", "Step2"]);
    assert.equal(all.filter((e) => e.involvedObject.name === "quiet").length, 1, "another object has its own budget");
    clock.advance(60_000);
    await recorder.record(noisy, "Normal", "Step5", "step 5");
    await recorder.record(noisy, "Normal", "Step6", "step 6");
    all = await events();
    assert.deepEqual(all.filter((e) => e.involvedObject.name === "noisy").map((e) => e.reason).sort(), ["Step0", "Step1", "Step2", "Step5"]);
  });

  it("writes nothing for work whose shard was lost", async () => {
    const { recorder, events } = await setup();
    const lost = new AbortController();
    lost.abort(new ShardLostError(3));
    await recorder.record(operation("op-1", "uid-1"), "Normal", "Started", "started", { signal: lost.signal });
    assert.deepEqual(await events(), []);
  });
});
