// `apply --wait` following a cluster: a failure the controllers retry does not end the wait — the
// cluster may recover by itself — while one only a change clears ends it at once.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject } from "../api/kinds.ts";
import { KubeClient, type KubeObject } from "../kubeclient/client.ts";
import { FakeApi, type FakeResource } from "../kubeclient/testing.ts";
import type { ClusterProgress, ProgressOutcome } from "../views/progress.ts";
import { followCluster } from "./follow.ts";
import type { ProgressReporter } from "./progress.ts";

const slipway = (kind: string, name: string): FakeResource => ({ group: "slipway.dev", version: "v1alpha1", kind, name, namespaced: true });
const CLUSTERS = slipway("Cluster", "clusters");
const MACHINES = slipway("Machine", "machines");

function cluster(status: NonNullable<ClusterObject["status"]>): KubeObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: "demo", namespace: "default", generation: 1 },
    spec: { controlPlane: { connection: "east", machineType: "m", replicas: 1 }, workers: [] },
    status: { observedGeneration: 1, ...status },
  } as KubeObject;
}

const READY = cluster({ phase: "Running", conditions: [{ type: "Ready", status: "True", reason: "Ready", lastTransitionTime: "2026-01-01T00:00:00Z" }] });
const QUOTA = cluster({ phase: "Failed", reason: "QuotaExceeded", message: "needs 12 vCPU, 8 left" });

/** The fake serves no watches: each attempt fails after a moment, and the collection lists again. */
class ListingApi extends FakeApi {
  constructor() {
    super([CLUSTERS, MACHINES]);
  }
  override async stream(request: Parameters<FakeApi["stream"]>[0]): ReturnType<FakeApi["stream"]> {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return super.stream(request);
  }
}

function recorder(onUpdate: (progress: ClusterProgress) => void = () => {}) {
  const finished: ProgressOutcome[] = [];
  const reporter: ProgressReporter = { update: onUpdate, finish: (_label, outcome) => finished.push(outcome), note: () => {}, close: () => {} };
  return { reporter, finished };
}

function follow(api: FakeApi, reporter: ProgressReporter, timeoutMs: number): Promise<ProgressOutcome> {
  return followCluster(new KubeClient({ transport: api }), { namespace: "default", name: "demo", goal: "ready", timeoutMs, reporter });
}

describe("following a cluster until it is Ready", () => {
  it("keeps waiting through a failure the controllers retry, and ends Ready once the cluster recovers", async () => {
    const api = new ListingApi();
    api.put(QUOTA);
    const { reporter } = recorder((progress) => {
      if (progress.phase === "Failed") api.put(READY);
    });
    assert.deepEqual(await follow(api, reporter, 20_000), { result: "ready" });
  });

  it("ends at once on a failure only a change clears", async () => {
    const api = new ListingApi();
    api.put(cluster({ phase: "Failed", reason: "ValidationFailed", message: "spec.controlPlane.machineType: m does not exist in east" }));
    const { reporter } = recorder();
    assert.deepEqual(await follow(api, reporter, 20_000), { result: "failed", reason: "ValidationFailed", message: "spec.controlPlane.machineType: m does not exist in east" });
  });

  it("gives up at the time limit on a failure that did not clear, naming it", async () => {
    const api = new ListingApi();
    api.put(QUOTA);
    const { reporter, finished } = recorder();
    const outcome = await follow(api, reporter, 300);
    assert.deepEqual(outcome, { result: "timeout", phase: "Failed", failure: { reason: "QuotaExceeded", message: "needs 12 vCPU, 8 left" } });
    assert.deepEqual(finished, [outcome]);
  });
});
