import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { apiVersionOf } from "../api/registry.ts";
import { clusterKind } from "../api/slipway/cluster.ts";
import type { ClusterObject } from "../api/kinds.ts";
import { ConflictError, InvalidError } from "../apiserver/errors.ts";
import { Client } from "./client.ts";
import { ShardLostError } from "./shards.ts";
import { memoryObjects } from "./testing.ts";

function cluster(name: string, replicas = 1): ClusterObject {
  return {
    apiVersion: apiVersionOf(clusterKind),
    kind: "Cluster",
    metadata: { name, namespace: "default" },
    spec: { controlPlane: { connection: "sim-east", machineType: "m.large", replicas } },
  };
}

describe("the in-process client", () => {
  it("admits objects as the API does: defaults filled, invalid objects refused field by field", async () => {
    const clusters = new Client(await memoryObjects()).of(clusterKind);
    const created = await clusters.create(cluster("demo"));
    assert.equal(created.spec.kubernetesVersion, "v1.31.2");
    assert.equal(created.metadata.generation, 1);
    const refused = await clusters.create(cluster("bad", 2)).catch((e: unknown) => e);
    assert.ok(refused instanceof InvalidError);
    assert.deepEqual(refused.fieldErrors.map((e) => e.field), ["spec.controlPlane.replicas"]);
    assert.equal(await clusters.tryGet("default", "bad"), undefined, "a refused write changes nothing");
  });

  it("refuses a write based on a stale read with a 409 Conflict", async () => {
    const clusters = new Client(await memoryObjects()).of(clusterKind);
    const read = await clusters.create(cluster("demo"));
    await clusters.updateStatus({ ...read, status: { phase: "Provisioning" } });
    await assert.rejects(clusters.updateStatus({ ...read, status: { phase: "Failed" } }), ConflictError);
    assert.equal((await clusters.get("default", "demo")).status?.phase, "Provisioning");
  });

  it("refuses every write once its fence is down, and still reads", async () => {
    const client = new Client(await memoryObjects());
    const fence = new AbortController();
    const fenced = client.fencedBy(fence.signal).of(clusterKind);
    await fenced.create(cluster("demo"));
    fence.abort(new ShardLostError(4));
    await assert.rejects(fenced.create(cluster("other")), ShardLostError);
    await assert.rejects(fenced.delete("default", "demo"), ShardLostError);
    assert.equal((await fenced.get("default", "demo")).metadata.name, "demo");
  });
});
