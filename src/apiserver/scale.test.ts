import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultRegistry } from "../api/kinds.ts";
import type { KubeObject } from "../api/meta.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { Authorizer } from "./authorization/authorizer.ts";
import type { RequestAttributes } from "./authorization/types.ts";
import { resourceList } from "./discovery.ts";
import { ConflictError, ForbiddenError, InvalidError } from "./errors.ts";
import { ObjectService } from "./objects.ts";
import type { RequestContext } from "./request-context.ts";
import { serveScale } from "./scale.ts";

const registry = defaultRegistry();
const pools = registry.byKind("slipway.dev/v1alpha1", "MachinePool")!;
const scaler: RequestContext = { identity: { user: "scaler", groups: ["system:authenticated"] }, fieldManager: "kubectl" };

function pool(replicas: number): KubeObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "MachinePool",
    metadata: { name: "batch", namespace: "default" },
    spec: { clusterName: "demo", connection: "sim", machineType: "s1.medium", replicas },
  } as KubeObject;
}

describe("the scale subresource", () => {
  let store: SqliteStore;
  let objects: ObjectService;
  /** What the authorizer was asked, as "verb resource/subresource". */
  let asked: string[];

  beforeEach(async () => {
    store = SqliteStore.open(":memory:");
    asked = [];
    // The scaler may get and change machinepools/scale, nothing else of machinepools.
    const authorizer: Authorizer = {
      authorize: (request: RequestAttributes) => {
        if (!("resource" in request) || request.identity.user !== "scaler") return { allowed: true };
        const r = request.resource;
        asked.push(`${request.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ""}`);
        return { allowed: r.subresource === "scale" };
      },
    };
    objects = new ObjectService(registry, store, { authorizer });
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
    const { object } = await objects.create(pools, "default", pool(2));
    object.status = { replicas: 1, selector: "slipway.dev/cluster=demo,slipway.dev/pool=batch" };
    await objects.updateStatus(pools, "default", "batch", object);
  });
  afterEach(async () => store.close());

  it("reads a Scale from the pool: wanted and current replicas and the selector", async () => {
    const scale = await serveScale(objects, pools, { method: "GET", namespace: "default", name: "batch", context: scaler });
    assert.equal(scale.apiVersion, "autoscaling/v1");
    assert.equal(scale.kind, "Scale");
    assert.deepEqual(scale.spec, { replicas: 2 });
    assert.deepEqual(scale.status, { replicas: 1, selector: "slipway.dev/cluster=demo,slipway.dev/pool=batch" });
    assert.deepEqual(asked, ["get machinepools/scale"]);
  });

  it("changes only the wanted replicas through a PUT or a merge patch, authorized as the scale subresource", async () => {
    const put = await serveScale(objects, pools, { method: "PUT", namespace: "default", name: "batch", body: { spec: { replicas: 4 } }, context: scaler });
    assert.equal(put.spec.replicas, 4);
    const patched = await serveScale(objects, pools, { method: "PATCH", namespace: "default", name: "batch", body: { spec: { replicas: 5 } }, patchType: "merge", context: scaler });
    assert.equal(patched.spec.replicas, 5);
    const stored = (await objects.get(pools, "default", "batch")) as KubeObject & { spec: Record<string, unknown> };
    assert.equal(stored.spec.replicas, 5);
    assert.equal(stored.spec.machineType, "s1.medium");
    assert.equal(stored.metadata.generation, 3);
    assert.equal(stored.metadata.managedFields?.find((m) => m.manager === "kubectl")?.subresource, "scale");
    assert.ok(asked.every((a) => a.endsWith("machinepools/scale")), asked.join(", "));
    // Without the subresource, the same user may not touch the pool.
    await assert.rejects(objects.patch(pools, "default", "batch", "merge", { spec: { replicas: 1 } }, { context: scaler }), ForbiddenError);
  });

  it("refuses negative, fractional or missing replicas naming spec.replicas, and a stale resourceVersion", async () => {
    for (const replicas of [-1, 1.5, "3", undefined]) {
      await assert.rejects(serveScale(objects, pools, { method: "PUT", namespace: "default", name: "batch", body: { spec: { replicas } }, context: scaler }), (e: unknown) => {
        assert.ok(e instanceof InvalidError);
        assert.equal(e.fieldErrors[0]?.field, "spec.replicas");
        return true;
      });
    }
    // Beyond what a pool may have: the pool's own validation names the field.
    await assert.rejects(serveScale(objects, pools, { method: "PUT", namespace: "default", name: "batch", body: { spec: { replicas: 100_000 } }, context: scaler }), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.match(JSON.stringify(e.fieldErrors), /spec\.replicas/);
      return true;
    });
    await assert.rejects(serveScale(objects, pools, { method: "PUT", namespace: "default", name: "batch", body: { metadata: { resourceVersion: "1" }, spec: { replicas: 3 } }, context: scaler }), ConflictError);
    const stored = (await objects.get(pools, "default", "batch")) as KubeObject & { spec: Record<string, unknown> };
    assert.equal(stored.spec.replicas, 2);
  });

  it("is listed by discovery as autoscaling/v1 Scale", () => {
    const list = resourceList(registry, "slipway.dev", "v1alpha1")!;
    const scale = list.resources.find((r) => r.name === "machinepools/scale") as { group?: string; version?: string; kind: string; verbs: string[] } | undefined;
    assert.deepEqual(scale && { group: scale.group, version: scale.version, kind: scale.kind, verbs: scale.verbs }, { group: "autoscaling", version: "v1", kind: "Scale", verbs: ["get", "patch", "update"] });
  });
});
