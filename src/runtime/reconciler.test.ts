import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { apiVersionOf } from "../api/registry.ts";
import { clusterKind } from "../api/slipway/cluster.ts";
import type { ClusterObject } from "../api/kinds.ts";
import { ConflictError } from "../apiserver/errors.ts";
import { Client } from "./client.ts";
import type { ReconcileContext } from "./controller.ts";
import { Informer } from "./informer.ts";
import { getCondition, setCondition, summarize } from "./conditions.ts";
import { InternalReconcileError, UNEXPECTED_ERROR_ATTEMPTS } from "./failures.ts";
import { objectReconciler, type Phase, type Scope } from "./reconciler.ts";
import { ShardLostError } from "./shards.ts";
import { ManualClock, memoryObjects, silentLogger, until } from "./testing.ts";

const FINALIZER = "slipway.dev/test";

/** A named error, as the cloud providers throw. */
class CloudUnavailableError extends Error {
  override readonly name = "CloudUnavailableError";
}

function cluster(name: string): ClusterObject {
  return {
    apiVersion: apiVersionOf(clusterKind),
    kind: "Cluster",
    metadata: { name, namespace: "default" },
    spec: { controlPlane: { connection: "sim-east", machineType: "m.large" } },
  };
}

async function setup() {
  const objects = await memoryObjects();
  const client = new Client(objects);
  const clusters = client.of(clusterKind);
  const informer = new Informer(objects, clusterKind, { log: silentLogger, resyncMs: 0 });
  await informer.start();
  const clock = new ManualClock();
  const context = (name: string, signal = new AbortController().signal, failures = 0): ReconcileContext => ({
    key: `default/${name}`,
    namespace: "default",
    name,
    signal,
    client: client.fencedBy(signal),
    log: silentLogger,
    clock,
    failures,
  event: async () => {},
  });
  /** Waits until the cache holds the object as the store has it. */
  const cached = async (name: string) => {
    const current = await clusters.get("default", name);
    return until(() => {
      const c = informer.cache.get(`default/${name}`);
      return c?.metadata.resourceVersion === current.metadata.resourceVersion && c;
    }, "the cache to catch up");
  };
  return { clusters, informer, clock, context, cached };
}

function now(ctx: ReconcileContext): string {
  return new Date(ctx.clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z");
}

const validate: Phase<Scope<ClusterObject>> = (ctx, scope) => {
  scope.object.status ??= {};
  setCondition(scope.object.status, { type: "Validated", status: "True", reason: "Valid" }, now(ctx));
};

function summarizeCluster(ctx: ReconcileContext, scope: Scope<ClusterObject>, error: unknown): void {
  const status = (scope.object.status ??= {});
  setCondition(status, summarize(status.conditions, ["Validated", "InfrastructureReady"]), now(ctx));
  status.phase = error ? "Failed" : "Provisioning";
  if (error) status.reason = (error as Error).message;
}

describe("objectReconciler", () => {
  it("adds its finalizer, runs phases until one halts, and writes conditions, phase and observedGeneration", async () => {
    const { clusters, informer, context, cached, clock } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    const ran: string[] = [];
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      finalizer: FINALIZER,
      phases: [
        (ctx, scope) => {
          ran.push("validate");
          return validate(ctx, scope);
        },
        () => {
          ran.push("wait");
          return { halt: true, requeueAfterMs: 5000 };
        },
        () => {
          ran.push("never");
        },
      ],
      summarize: summarizeCluster,
      observedGeneration: true,
    });

    assert.deepEqual(await reconcile(context("demo")), { requeueAfterMs: 5000 });
    assert.deepEqual(ran, ["validate", "wait"]);
    const written = await clusters.get("default", "demo");
    assert.deepEqual(written.metadata.finalizers, [FINALIZER]);
    assert.equal(written.status?.phase, "Provisioning");
    assert.equal(written.status?.observedGeneration, 1);
    assert.equal(getCondition(written.status?.conditions, "Validated")?.status, "True");
    const ready = getCondition(written.status?.conditions, "Ready");
    assert.equal(ready?.status, "Unknown");
    assert.equal(ready?.lastTransitionTime, "2025-01-01T00:00:00Z");

    // Nothing changed: the next reconcile writes nothing, and the transition times stay.
    await cached("demo");
    clock.advance(60_000);
    await reconcile(context("demo"));
    const again = await clusters.get("default", "demo");
    assert.equal(again.metadata.resourceVersion, written.metadata.resourceVersion);
  });

  it("cannot overwrite newer state from a stale read: the status write gets a 409", async () => {
    const { clusters, informer, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    informer.stop(); // the cache now lags behind the store
    const current = await clusters.get("default", "demo");
    await clusters.updateStatus({ ...current, status: { phase: "Running", reason: "ByAnotherReplica" } });
    const reconcile = objectReconciler<ClusterObject>({ kind: clusterKind, cache: informer.cache, phases: [validate], summarize: summarizeCluster });
    await assert.rejects(reconcile(context("demo")), ConflictError);
    const after = await clusters.get("default", "demo");
    assert.equal(after.status?.phase, "Running");
    assert.equal(after.status?.reason, "ByAnotherReplica");
  });

  it("goes on from its own last write while the cache has not caught up with it", async () => {
    const { clusters, informer, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    informer.stop(); // the watch lags: the cache keeps the object as it was created
    let round = 0;
    const options = {
      kind: clusterKind,
      cache: informer.cache,
      finalizer: FINALIZER,
      phases: [(_ctx: ReconcileContext, scope: Scope<ClusterObject>) => void ((scope.object.status ??= {}).message = `round ${++round}`)],
    };
    const reconcile = objectReconciler<ClusterObject>(options);
    await reconcile(context("demo"));
    await reconcile(context("demo"));
    const written = await clusters.get("default", "demo");
    assert.deepEqual(written.metadata.finalizers, [FINALIZER]);
    assert.equal(written.status?.message, "round 2", "the second status write was made over the first, not refused");
    // A reconciler that did not make those writes starts from the stale cache, and is refused.
    await assert.rejects(objectReconciler<ClusterObject>(options)(context("demo")), ConflictError);
  });

  it("writes a status change that only reports progress at most once a second, the newest when the second is over", async () => {
    const { clusters, informer, clock, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    const next: { phase?: string; message?: string } = { phase: "Provisioning", message: "step 1" };
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      phases: [(_ctx, scope) => void Object.assign((scope.object.status ??= {}), next)],
      progressOnly: (written, status) => written?.phase === status?.phase,
    });
    const revision = async () => (await clusters.get("default", "demo")).metadata.resourceVersion;
    assert.deepEqual(await reconcile(context("demo")), {}, "the first status is written at once");
    const first = await revision();
    clock.advance(300);
    next.message = "step 2";
    assert.deepEqual(await reconcile(context("demo")), { requeueAfterMs: 700 }, "a progress change within the second waits for its end");
    clock.advance(200);
    next.message = "step 3";
    assert.deepEqual(await reconcile(context("demo")), { requeueAfterMs: 500 });
    assert.equal(await revision(), first, "nothing written meanwhile");
    clock.advance(500);
    assert.deepEqual(await reconcile(context("demo")), {});
    assert.equal((await clusters.get("default", "demo")).status?.message, "step 3", "the newest progress, in one write");
    clock.advance(100);
    next.phase = "Running";
    assert.deepEqual(await reconcile(context("demo")), {}, "any other change is written at once");
    assert.equal((await clusters.get("default", "demo")).status?.phase, "Running");
  });

  it("drops its own write once the cache holds something later", async () => {
    const { clusters, informer, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    const seen: (string | undefined)[] = [];
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      phases: [validate, (_ctx, scope) => void seen.push(scope.object.status?.reason)],
      summarize: summarizeCluster,
    });
    await reconcile(context("demo"));
    const mine = await cached("demo");
    await clusters.updateStatus({ ...mine, status: { ...mine.status, reason: "ByAnotherReplica" } });
    await cached("demo");
    await reconcile(context("demo"));
    assert.deepEqual(seen, [undefined, "ByAnotherReplica"]);
  });

  it("writes the status also when a phase fails, then reports the failure", async () => {
    const { clusters, informer, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      phases: [
        validate,
        () => {
          throw new Error("QuotaExceeded");
        },
      ],
      summarize: summarizeCluster,
    });
    await assert.rejects(reconcile(context("demo")), /QuotaExceeded/);
    const after = await clusters.get("default", "demo");
    assert.equal(after.status?.phase, "Failed");
    assert.equal(after.status?.reason, "QuotaExceeded");
    assert.equal(getCondition(after.status?.conditions, "Validated")?.status, "True");
  });

  it("moves observedGeneration only after a reconcile that ran to its end", async () => {
    const { clusters, informer, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    let cloudDown = false;
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      phases: [
        validate,
        function scaleWorkers() {
          if (cloudDown) throw new CloudUnavailableError("the cloud answered 503");
        },
      ],
      summarize: summarizeCluster,
      observedGeneration: true,
    });
    await reconcile(context("demo"));
    assert.equal((await cached("demo")).status?.observedGeneration, 1);

    const first = await clusters.get("default", "demo");
    await clusters.update({ ...first, spec: { ...first.spec, workers: [{ name: "w", connection: "sim-east", machineType: "m.large", replicas: 3 }] } });
    await cached("demo");
    cloudDown = true;
    await assert.rejects(reconcile(context("demo")), CloudUnavailableError);
    const failed = await cached("demo");
    assert.equal(failed.metadata.generation, 2);
    assert.equal(failed.status?.reason, "the cloud answered 503", "the status says what went wrong");
    assert.equal(failed.status?.observedGeneration, 1, "generation 2 was not applied");

    cloudDown = false;
    await reconcile(context("demo"));
    assert.equal((await clusters.get("default", "demo")).status?.observedGeneration, 2);
  });

  it("fails the step with InternalError once an unexpected error has had its attempts; a named error is retried as it is", async () => {
    const { clusters, informer, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    const seen: unknown[] = [];
    let thrown: Error = new TypeError("Cannot read properties of undefined (reading 'zones')");
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      phases: [
        validate,
        function ensureInfrastructure() {
          throw thrown;
        },
      ],
      summarize: (ctx, scope, error) => {
        seen.push(error);
        summarizeCluster(ctx, scope, error);
      },
      observedGeneration: true,
    });
    for (let failures = 0; failures < UNEXPECTED_ERROR_ATTEMPTS - 1; failures++) {
      await assert.rejects(reconcile(context("demo", undefined, failures)), TypeError);
      assert.equal(seen.at(-1), thrown, `attempt ${failures + 1} is retried as it is`);
      assert.equal((await cached("demo")).status?.observedGeneration, undefined);
    }
    const internal = await reconcile(context("demo", undefined, UNEXPECTED_ERROR_ATTEMPTS - 1)).then(
      () => assert.fail("the reconcile still fails"),
      (error: unknown) => error,
    );
    assert.ok(internal instanceof InternalReconcileError);
    assert.equal(internal.step, "ensureInfrastructure");
    assert.equal(internal.cause, thrown, "the error itself goes to the log");
    assert.equal(seen.at(-1), internal, "the summary is told the step failed");
    const written = await cached("demo");
    assert.equal(
      written.status?.reason,
      "step ensureInfrastructure failed 5 times in a row with an unexpected error: TypeError: Cannot read properties of undefined (reading 'zones'). This is a defect in Slipway: please report it with this message",
    );
    assert.doesNotMatch(written.status?.reason ?? "", /\n|\bat \S+ \(/, "no stack in the status");
    assert.equal(written.status?.observedGeneration, 1, "the generation ran to a verdict: the step failed");

    // A cloud error the code knows by name keeps being retried, however often it comes back.
    thrown = new CloudUnavailableError("the cloud answered 503");
    await assert.rejects(reconcile(context("demo", undefined, 40)), CloudUnavailableError);
    assert.equal(seen.at(-1), thrown);
  });

  it("runs the delete phases, keeps the finalizer while they wait, and lets the object go when done", async () => {
    const { clusters, informer, context, cached } = await setup();
    let cleanedUp = false;
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      finalizer: FINALIZER,
      phases: [validate],
      deletePhases: [() => (cleanedUp ? undefined : { halt: true, requeueAfterMs: 1000 })],
    });
    await clusters.create(cluster("demo"));
    await cached("demo");
    await reconcile(context("demo"));
    await clusters.delete("default", "demo");
    await cached("demo");
    assert.deepEqual(await reconcile(context("demo")), { requeueAfterMs: 1000 });
    assert.deepEqual((await clusters.get("default", "demo")).metadata.finalizers, [FINALIZER], "held while cleanup waits");
    cleanedUp = true;
    await reconcile(context("demo"));
    assert.equal(await clusters.tryGet("default", "demo"), undefined);
  });

  it("ends quietly when the object is deleted while it is reconciled", async () => {
    const { clusters, informer, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      phases: [
        async (ctx, scope) => {
          await clusters.delete("default", "demo");
          return validate(ctx, scope);
        },
      ],
    });
    assert.deepEqual(await reconcile(context("demo")), {});
    assert.equal(await clusters.tryGet("default", "demo"), undefined);
  });

  it("does not write for work whose shard was lost", async () => {
    const { clusters, informer, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    const lost = new AbortController();
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      phases: [
        (ctx, scope) => {
          lost.abort(new ShardLostError(7));
          return validate(ctx, scope);
        },
      ],
    });
    await assert.rejects(reconcile(context("demo", lost.signal)), ShardLostError);
    assert.equal((await clusters.get("default", "demo")).status?.phase, "Pending", "the status a create gave, not written over");
  });

  it("records the events of a status change it wrote even when the shard is lost just after the write", async () => {
    const { clusters, informer, context, cached } = await setup();
    await clusters.create(cluster("demo"));
    await cached("demo");
    const lost = new AbortController();
    const base = context("demo", lost.signal);
    const recorded: string[] = [];
    const ctx: ReconcileContext = {
      ...base,
      // The status write reaches the store; the shard is lost before its answer is back.
      client: {
        of: (kind: typeof clusterKind) => {
          const real = base.client.of(kind);
          return Object.assign(Object.create(real) as typeof real, {
            updateStatus: async (object: ClusterObject) => {
              const written = await real.updateStatus(object);
              lost.abort(new ShardLostError(7));
              return written;
            },
          });
        },
      } as unknown as ReconcileContext["client"],
      // As the controller records them: nothing once the shard is lost, unless it reports a write made.
      event: async (_object, _type, reason, _message, options) => {
        if (lost.signal.aborted && !options?.written) return;
        recorded.push(reason);
      },
    };
    const reconcile = objectReconciler<ClusterObject>({
      kind: clusterKind,
      cache: informer.cache,
      phases: [validate],
      summarize: summarizeCluster,
      afterStatusWrite: (c, _scope, previous, written) => {
        if (written.status?.phase !== previous.status?.phase) return c.event(written, "Normal", written.status!.phase!, "phase changed");
      },
    });
    await reconcile(ctx).catch((error: unknown) => assert.ok(error instanceof ShardLostError, String(error)));
    assert.equal((await clusters.get("default", "demo")).status?.phase, "Provisioning");
    assert.deepEqual(recorded, ["Provisioning"], "the phase change written is reported once");
  });
});
