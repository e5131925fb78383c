import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { apiVersionOf } from "../api/registry.ts";
import { connectionKind } from "../api/slipway/connection.ts";
import type { ConnectionObject } from "../api/kinds.ts";
import { ConflictError } from "../apiserver/errors.ts";
import type { ObjectService } from "../apiserver/objects.ts";
import { notStatusOnly, type Reconcile, type Result } from "./controller.ts";
import { ControllerManager } from "./manager.ts";
import { ManualClock, memoryObjects, recordingLogger, silentLogger, until } from "./testing.ts";
import type { ShardCoordinator, ShardSet } from "./shards.ts";
import type { Clock } from "./clock.ts";
import type { Logger } from "pino";
import { Registry } from "prom-client";

function connection(name: string): ConnectionObject {
  return { apiVersion: apiVersionOf(connectionKind), kind: "Connection", metadata: { name, namespace: "default" }, spec: { provider: "sim", region: "sim-east-1" } };
}

async function run(
  reconcile: Reconcile,
  options: {
    objects?: ObjectService;
    clock?: Clock;
    log?: Logger;
    concurrency?: number;
    coordinator?: (shards: ShardSet) => ShardCoordinator;
    changed?: (previous: ConnectionObject, object: ConnectionObject) => boolean;
    resyncs?: (object: ConnectionObject) => boolean;
    metrics?: Registry;
    pacer?: { maxLagMs: number; sampleMs?: number };
  } = {},
) {
  const objects = options.objects ?? (await memoryObjects());
  const manager = new ControllerManager({
    objects,
    replica: "test",
    log: options.log ?? silentLogger,
    clock: options.clock,
    coordinator: options.coordinator,
    metrics: options.metrics,
    pacer: options.pacer,
  });
  const controller = manager.add({
    name: "test",
    component: "slipway.dev/test-controller",
    informer: manager.informer(connectionKind),
    reconcile,
    concurrency: options.concurrency,
    backoff: { baseMs: 100, capMs: 10_000 },
    changed: options.changed,
    resyncs: options.resyncs,
  });
  await manager.start();
  return { objects, manager, controller, connections: manager.client.of(connectionKind) };
}

describe("Controller", () => {
  it("reconciles every change, never one key by two workers at once, ending on the latest state", async () => {
    const active = new Set<string>();
    let overlaps = 0;
    const lastSeen = new Map<string, string | undefined>();
    const env: Awaited<ReturnType<typeof run>> = await run(
      async (ctx) => {
        if (active.has(ctx.key)) overlaps++;
        active.add(ctx.key);
        await new Promise((resolve) => setTimeout(resolve, 2));
        lastSeen.set(ctx.key, env.manager.informer(connectionKind).cache.get(ctx.key)?.metadata.labels?.round);
        active.delete(ctx.key);
      },
      { concurrency: 4 },
    );
    const { connections, manager } = env;
    await connections.create(connection("a"));
    await connections.create(connection("b"));
    for (let round = 1; round <= 20; round++) {
      for (const name of ["a", "b"]) {
        const current = await connections.get("default", name);
        await connections.update({ ...current, metadata: { ...current.metadata, labels: { round: String(round) } } });
      }
    }
    await until(() => lastSeen.get("default/a") === "20" && lastSeen.get("default/b") === "20", "the last change of both objects");
    assert.equal(overlaps, 0);
    await manager.stop();
  });

  it("with notStatusOnly, skips updates of the status alone and reconciles every other change", async () => {
    const seen: string[] = [];
    const env = await run(
      async (ctx) => {
        const o = env.manager.informer(connectionKind).cache.get(ctx.key);
        seen.push(`${o?.metadata.labels?.step ?? "-"}/${(o?.status as { phase?: string } | undefined)?.phase ?? "-"}`);
      },
      { changed: notStatusOnly },
    );
    const { connections, manager } = env;
    const created = await connections.create(connection("a"));
    await until(() => seen.length === 1, "the creation reconciled");
    const withStatus = await connections.updateStatus({ ...created, status: { phase: "Ready" } } as ConnectionObject);
    await connections.update({ ...withStatus, metadata: { ...withStatus.metadata, labels: { step: "labelled" } } });
    await until(() => seen.length === 2, "the label change reconciled");
    assert.deepEqual(seen, ["-/-", "labelled/Ready"], "the status update alone queued nothing");
    await manager.stop();
  });

  it("reconciles again after requeueAfter, and not before", async () => {
    const clock = new ManualClock();
    let calls = 0;
    const { connections, manager } = await run(
      async (): Promise<Result> => {
        calls++;
        return calls === 1 ? { requeueAfterMs: 30_000 } : {};
      },
      { clock },
    );
    await connections.create(connection("a"));
    await until(() => calls === 1, "the first reconcile");
    await new Promise((resolve) => setTimeout(resolve, 20));
    clock.advance(29_999);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(calls, 1);
    clock.advance(1);
    await until(() => calls === 2, "the requeued reconcile");
    await manager.stop();
  });

  it("on a resync, checks the keys nobody will look at again, and leaves those due back later to that", async () => {
    const clock = new ManualClock();
    const calls = new Map<string, number>();
    const { connections, manager } = await run(
      async (ctx): Promise<Result> => {
        calls.set(ctx.key, (calls.get(ctx.key) ?? 0) + 1);
        return ctx.key === "default/later" ? { requeueAfterMs: 3_600_000 } : {};
      },
      { clock },
    );
    await connections.create(connection("later"));
    await connections.create(connection("done"));
    await until(() => calls.get("default/later") === 1 && calls.get("default/done") === 1, "the first reconciles");
    clock.advance(10 * 60_000); // the informer's resync
    await until(() => calls.get("default/done") === 2, "the resync's idle check of the key with nothing due");
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(calls.get("default/later"), 1, "the key due back in an hour is left to that");
    clock.advance(50 * 60_000);
    await until(() => (calls.get("default/later") ?? 0) >= 2, "the requeued reconcile");
    await manager.stop();
  });

  it("on a resync, leaves out the objects the controller says need no second look", async () => {
    const clock = new ManualClock();
    const calls = new Map<string, number>();
    const { connections, manager } = await run(
      async (ctx): Promise<Result> => {
        calls.set(ctx.key, (calls.get(ctx.key) ?? 0) + 1);
        return {};
      },
      { clock, resyncs: (c) => c.metadata.labels?.["ended"] !== "true" },
    );
    await connections.create(connection("open"));
    await connections.create({ ...connection("ended"), metadata: { name: "ended", namespace: "default", labels: { ended: "true" } } });
    await until(() => calls.get("default/open") === 1 && calls.get("default/ended") === 1, "the first reconciles");
    clock.advance(10 * 60_000); // the informer's resync
    await until(() => calls.get("default/open") === 2, "the resync's idle check of the open one");
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(calls.get("default/ended"), 1, "the ended one is not checked again");
    await connections.patch("default", "ended", "merge", { metadata: { labels: { ended: "false" } } });
    await until(() => calls.get("default/ended") === 2, "a change is reconciled whatever resyncs says");
    await manager.stop();
  });

  it("on a resync of a watched kind, queues none of the keys it maps to: each is left to its own informer's resync", async () => {
    const clock = new ManualClock();
    const calls = new Map<string, number>();
    const { connections, manager, controller } = await run(
      async (ctx): Promise<Result> => {
        calls.set(ctx.key, (calls.get(ctx.key) ?? 0) + 1);
        return {};
      },
      { clock },
    );
    // Every Connection stands for a key of this controller that no Connection is (as a Connection's Infrastructures).
    controller.watch(manager.informer(connectionKind), (c) => [`default/mapped-${c.metadata.name}`]);
    await connections.create(connection("a"));
    await until(() => calls.get("default/a") === 1 && calls.get("default/mapped-a") === 1, "the first reconciles");
    clock.advance(10 * 60_000); // the informer's resync
    await until(() => calls.get("default/a") === 2, "the resync's idle check of the controller's own key");
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(calls.get("default/mapped-a"), 1, "the watched object's resync queues nothing");
    await connections.patch("default", "a", "merge", { metadata: { labels: { changed: "yes" } } });
    await until(() => calls.get("default/mapped-a") === 2, "a change of the watched object queues its keys");
    await manager.stop();
  });

  it("backs off a failing key, logging each failure, but retries conflicts quietly", async () => {
    const clock = new ManualClock();
    const { log, lines } = recordingLogger("info");
    let calls = 0;
    const { connections, manager } = await run(
      async (ctx) => {
        calls++;
        if (ctx.name === "failing" && calls <= 2) throw new Error("cloud unavailable");
        if (ctx.name === "stale" && calls <= 1) {
          throw new ConflictError({ group: "slipway.dev", kind: "Connection", plural: "connections", name: ctx.name }, "the object has been modified");
        }
      },
      { clock, log },
    );
    await connections.create(connection("failing"));
    await until(() => calls === 1, "the first attempt");
    await new Promise((resolve) => setTimeout(resolve, 10));
    clock.advance(99);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(calls, 1, "retried before its backoff");
    clock.advance(1);
    await until(() => calls === 2, "the first retry");
    await new Promise((resolve) => setTimeout(resolve, 10));
    clock.advance(199);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(calls, 2, "the second backoff doubles");
    clock.advance(1);
    await until(() => calls === 3, "the second retry");
    const failures = lines().filter((l) => l.msg === "reconcile failed");
    assert.equal(failures.length, 2);

    calls = 0;
    await connections.create(connection("stale"));
    await until(() => calls === 1, "the conflicting attempt");
    await new Promise((resolve) => setTimeout(resolve, 10));
    clock.advance(100);
    await until(() => calls === 2, "the retry after the conflict");
    assert.equal(lines().filter((l) => l.level >= 40 && l.msg !== "reconcile failed").length, 0, "a conflict is not worth a warning");
    await manager.stop();
  });

  it("holds a worker that has a key while the event loop lags, and counts the wait; a lag with nothing to do holds nobody", async () => {
    const blockLoop = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until) {
        // the event loop cannot turn meanwhile
      }
    };
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const registry = new Registry();
    const paced = async () => (await registry.getSingleMetricAsString("slipway_controller_paced_seconds_total")).match(/controller="test"} (\S+)/)?.[1];
    const reconciled: string[] = [];
    const { connections, manager } = await run(
      async (ctx) => {
        reconciled.push(ctx.name);
        if (ctx.name === "a") {
          // A long task, and time for the pacer to see the loop lag.
          blockLoop(150);
          await pause(30);
        }
      },
      { concurrency: 1, metrics: registry, pacer: { maxLagMs: 5 } },
    );
    blockLoop(150);
    await pause(100);
    assert.equal(await paced(), "0", "workers without a key are not held");
    await connections.create(connection("a"));
    await until(() => reconciled.includes("a"), "the first key");
    await connections.create(connection("b"));
    await until(() => reconciled.includes("b"), "the second key");
    const held = Number(await paced());
    assert.ok(held >= 0.02, `the second key waited ${held} s for the loop`);
    await manager.stop();
  });

  it("lets the event loop turn between keys, even when reconciles never wait on anything outside the process", async () => {
    const objects = await memoryObjects();
    const client = new ControllerManager({ objects, replica: "setup", log: silentLogger }).client.of(connectionKind);
    for (let i = 0; i < 200; i++) await client.create(connection(`c-${i}`));
    let reconciled = 0;
    let reconciledWhenTimerFired: number | undefined;
    const { manager } = await run(
      async () => {
        if (reconciled++ === 0) setTimeout(() => (reconciledWhenTimerFired = reconciled), 0);
        const until = performance.now() + 0.2;
        while (performance.now() < until) {
          // work that keeps the loop, as a status computed and written to the in-process store does
        }
      },
      { objects, concurrency: 1 },
    );
    await until(() => reconciled === 200 && reconciledWhenTimerFired !== undefined, "every key, and the timer");
    assert.ok(reconciledWhenTimerFired! < 200, `a timer due at the first key fired after ${reconciledWhenTimerFired} of 200 keys`);
    await manager.stop();
  });

  it("works only on keys of active shards, and queues a shard's cached keys when it becomes active", async () => {
    const reconciled: string[] = [];
    const idle: ShardCoordinator = { shards: undefined as unknown as ShardSet, start: async () => {}, stop: async () => {}, unready: () => undefined };
    const { connections, manager, controller } = await run(
      async (ctx) => {
        reconciled.push(ctx.name);
      },
      { coordinator: () => idle },
    );
    const names = ["a", "b", "c", "d", "e", "f"];
    for (const name of names) await connections.create(connection(name));
    await until(() => manager.informer(connectionKind).cache.size === names.length, "the cache");
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(reconciled, [], "no shard held, no work");
    const shardOfA = controller.shardOf("default/a");
    manager.shards.activate([shardOfA]);
    const expected = names.filter((n) => controller.shardOf(`default/${n}`) === shardOfA);
    await until(() => reconciled.length === expected.length, "the keys of the activated shard");
    assert.deepEqual(reconciled.sort(), expected);
    await manager.stop();
  });
});
