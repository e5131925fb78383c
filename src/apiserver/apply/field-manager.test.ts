// Server-side apply and the managedFields record through the object service, as clients see them.
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultRegistry } from "../../api/kinds.ts";
import type { KubeObject } from "../../api/meta.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import { ApplyConflictError, BadRequestError } from "../errors.ts";
import { ObjectService } from "../objects.ts";
import { SYSTEM_IDENTITY } from "../request-context.ts";

const registry = defaultRegistry();
const clusters = registry.byKind("slipway.dev/v1alpha1", "Cluster")!;
const secrets = registry.byKind("v1", "Secret")!;

const as = (fieldManager: string | undefined) => ({ context: { identity: SYSTEM_IDENTITY, fieldManager } });
const pool = (name: string, replicas = 1) => ({ name, connection: "east", machineType: "s1.large", replicas });
const cluster = (spec: Record<string, unknown>, labels: Record<string, string> = {}) => ({
  apiVersion: "slipway.dev/v1alpha1",
  kind: "Cluster",
  metadata: Object.keys(labels).length > 0 ? { name: "demo", labels } : { name: "demo" },
  spec: { paused: true, controlPlane: { connection: "east", machineType: "s1.medium", replicas: 1 }, ...spec },
});

function entries(object: KubeObject) {
  return (object.metadata.managedFields ?? []).map((e) => ({ manager: e.manager, operation: e.operation, subresource: e.subresource, fieldsV1: e.fieldsV1 as Record<string, unknown> }));
}
function owner(object: KubeObject, manager: string, operation = "Apply") {
  const entry = entries(object).find((e) => e.manager === manager && e.operation === operation);
  assert.ok(entry, `${manager} (${operation}) has a record: ${JSON.stringify(entries(object))}`);
  return entry.fieldsV1;
}

describe("server-side apply and managedFields", () => {
  let store: SqliteStore;
  let objects: ObjectService;

  beforeEach(async () => {
    store = SqliteStore.open(":memory:");
    objects = new ObjectService(registry, store);
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
  });
  afterEach(async () => store.close());

  it("creates when absent, recording the applier as manager of exactly what it applied", async () => {
    const { object, previous } = await objects.apply(clusters, "default", "demo", cluster({ workers: [pool("a")] }, { team: "x" }), as("ci"));
    assert.equal(previous, undefined);
    assert.equal(object.metadata.uid !== undefined, true);
    assert.deepEqual(entries(object).map((e) => [e.manager, e.operation]), [["ci", "Apply"]]);
    assert.deepEqual(owner(object, "ci"), {
      "f:metadata": { "f:labels": { "f:team": {} } },
      "f:spec": {
        "f:controlPlane": { "f:connection": {}, "f:machineType": {}, "f:replicas": {} },
        "f:paused": {},
        "f:workers": { 'k:{"name":"a"}': { ".": {}, "f:connection": {}, "f:machineType": {}, "f:name": {}, "f:replicas": {} } },
      },
    });
    // Defaults the server filled in are no one's.
    assert.equal((object.spec as { kubernetesVersion?: string }).kubernetesVersion !== undefined, true);
    assert.equal(JSON.stringify(owner(object, "ci")).includes("kubernetesVersion"), false);
  });

  it("needs a field manager, and refuses a configuration carrying managedFields or an unkeyed pool", async () => {
    await assert.rejects(objects.apply(clusters, "default", "demo", cluster({}), as(undefined)), (e: unknown) => e instanceof BadRequestError && /fieldManager: Required value/.test(e.message));
    const withRecords = { ...cluster({}), metadata: { name: "demo", managedFields: [] } };
    await assert.rejects(objects.apply(clusters, "default", "demo", withRecords, as("ci")), /metadata\.managedFields must be nil/);
    await assert.rejects(objects.apply(clusters, "default", "demo", cluster({ workers: [{ connection: "east" }] }), as("ci")), /\.spec\.workers: item has no value for key field "name"/);
    assert.equal(await objects.tryGet(clusters, "default", "demo"), undefined, "nothing was created");
  });

  it("records creates and updates under the writer's manager, and status writes under the controller's with their subresource", async () => {
    await objects.create(clusters, "default", cluster({}), as("kubectl-create"));
    await objects.patch(clusters, "default", "demo", "merge", { spec: { paused: false } }, as("kubectl-patch"));
    const { object } = await objects.patch(clusters, "default", "demo", "merge", { status: { phase: "Provisioning" } }, { ...as("cluster-controller"), subresource: "status" });
    // Records are in the order of their times (whole seconds), and within one second of their managers' names.
    const records = (object.metadata.managedFields ?? []).map((e) => ({ time: String(e.time), manager: String(e.manager), subresource: e.subresource }));
    const inOrder = [...records].sort((a, b) => a.time.localeCompare(b.time) || a.manager.localeCompare(b.manager));
    assert.deepEqual(records, inOrder);
    assert.deepEqual(
      records.map((r) => [r.manager, r.subresource]).sort(([a], [b]) => String(a).localeCompare(String(b))),
      [
        ["cluster-controller", "status"],
        ["kubectl-create", undefined],
        ["kubectl-patch", undefined],
      ],
    );
    assert.deepEqual(owner(object, "kubectl-patch", "Update"), { "f:spec": { "f:paused": {} } });
    assert.equal(JSON.stringify(owner(object, "kubectl-create", "Update")).includes("f:paused"), false, "the patch took the field from its creator");
    assert.deepEqual(owner(object, "cluster-controller", "Update"), { "f:status": { "f:phase": {} } });
  });

  it("refuses to change another manager's field with a 409 naming both, changing nothing, until forced", async () => {
    await objects.apply(clusters, "default", "demo", cluster({ workers: [pool("a")] }), as("ci"));
    const before = await objects.get(clusters, "default", "demo");
    const next = cluster({ workers: [pool("a", 3)], controlPlane: { connection: "east", machineType: "s1.medium", replicas: 3 } });
    const refused = await objects.apply(clusters, "default", "demo", next, as("ops")).then(
      () => assert.fail("the apply should conflict"),
      (e: unknown) => e as ApplyConflictError,
    );
    assert.ok(refused instanceof ApplyConflictError);
    const status = refused.toStatus();
    assert.equal(status.code, 409);
    assert.equal(status.reason, "Conflict");
    assert.equal(status.message, 'Apply failed with 2 conflicts: conflicts with "ci":\n- .spec.controlPlane.replicas\n- .spec.workers[name="a"].replicas');
    assert.deepEqual(status.details?.causes, [
      { reason: "FieldManagerConflict", message: 'conflict with "ci"', field: ".spec.controlPlane.replicas" },
      { reason: "FieldManagerConflict", message: 'conflict with "ci"', field: '.spec.workers[name="a"].replicas' },
    ]);
    assert.equal((await objects.get(clusters, "default", "demo")).metadata.resourceVersion, before.metadata.resourceVersion);

    const { object } = await objects.apply(clusters, "default", "demo", next, { ...as("ops"), force: true });
    assert.equal((object.spec as { controlPlane: { replicas: number } }).controlPlane.replicas, 3);
    const ci = JSON.stringify(owner(object, "ci"));
    assert.equal(ci.includes("f:replicas"), false, "ci lost the fields ops forced");
    assert.equal(ci.includes("f:machineType"), true, "and shares the ones both set alike");
  });

  it("removes fields and pools an applier drops, unless another manager still holds them", async () => {
    await objects.apply(clusters, "default", "demo", cluster({ workers: [pool("a"), pool("b"), pool("c")] }, { team: "x", tier: "1" }), as("ci"));
    await objects.apply(clusters, "default", "demo", { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", metadata: { name: "demo" }, spec: { workers: [pool("c")] } }, as("ops"));
    const { object } = await objects.apply(clusters, "default", "demo", cluster({ workers: [pool("a")] }, { team: "x" }), as("ci"));
    const spec = object.spec as { workers: { name: string }[] };
    assert.deepEqual(spec.workers.map((w) => w.name), ["a", "c"], "b is gone; c stays, ops applies it");
    assert.deepEqual(object.metadata.labels, { team: "x" });
  });

  it("changes nothing when the same configuration is applied again", async () => {
    const first = await objects.apply(clusters, "default", "demo", cluster({ workers: [pool("a")] }), as("ci"));
    const again = await objects.apply(clusters, "default", "demo", cluster({ workers: [pool("a")] }), as("ci"));
    assert.equal(again.object.metadata.resourceVersion, first.object.metadata.resourceVersion);
    assert.deepEqual(again.object.metadata.managedFields, first.object.metadata.managedFields);
  });

  it("writes nothing on a dry run", async () => {
    const { object } = await objects.apply(clusters, "default", "demo", cluster({}), { context: { identity: SYSTEM_IDENTITY, fieldManager: "ci", dryRun: true } });
    assert.equal(entries(object)[0]?.manager, "ci");
    assert.equal(await objects.tryGet(clusters, "default", "demo"), undefined);
  });

  it("applies status through the status subresource only", async () => {
    await objects.apply(clusters, "default", "demo", cluster({}), as("ci"));
    const { object } = await objects.apply(clusters, "default", "demo", { ...cluster({ paused: false }), status: { phase: "Failed" } }, { ...as("ctl"), subresource: "status" });
    assert.equal((object.status as { phase: string }).phase, "Failed");
    assert.equal((object.spec as { paused: boolean }).paused, true, "spec is not written through /status");
    assert.deepEqual(entries(object).find((e) => e.manager === "ctl"), { manager: "ctl", operation: "Apply", subresource: "status", fieldsV1: { "f:status": { "f:phase": {} } } });
  });

  it("keeps managedFields a client does not send, lets it reset them with one empty record, and ignores ones that do not decode", async () => {
    const { object } = await objects.apply(clusters, "default", "demo", cluster({}), as("ci"));
    const records = object.metadata.managedFields;
    const kept = await objects.patch(clusters, "default", "demo", "merge", { metadata: { managedFields: [], labels: { a: "b" } } }, as("edit"));
    assert.deepEqual(kept.object.metadata.managedFields?.[0], records?.[0]);
    const bad = await objects.patch(clusters, "default", "demo", "merge", { metadata: { managedFields: [{ operation: "Steal" }] } }, as("edit"));
    assert.deepEqual(bad.object.metadata.managedFields, kept.object.metadata.managedFields);
    const reset = await objects.patch(clusters, "default", "demo", "json", [{ op: "replace", path: "/metadata/managedFields", value: [{}] }], as("edit"));
    assert.equal(reset.object.metadata.managedFields, undefined);
  });

  it("lets kubectl take over fields it applied client-side and no one changed since, and only those", async () => {
    const lastApplied = JSON.stringify(cluster({}));
    const created = { ...cluster({}), metadata: { name: "demo", annotations: { "kubectl.kubernetes.io/last-applied-configuration": lastApplied } } };
    await objects.create(clusters, "default", created, as("kubectl-client-side-apply"));
    const next = cluster({ controlPlane: { connection: "east", machineType: "s1.medium", replicas: 3 } });
    await assert.rejects(objects.apply(clusters, "default", "demo", next, as("ci")), ApplyConflictError, "another applier still conflicts");
    const { object } = await objects.apply(clusters, "default", "demo", next, as("kubectl"));
    assert.equal((object.spec as { controlPlane: { replicas: number } }).controlPlane.replicas, 3);
    await objects.patch(clusters, "default", "demo", "merge", { spec: { paused: false } }, as("kubectl-client-side-apply"));
    await assert.rejects(objects.apply(clusters, "default", "demo", cluster({}), as("kubectl")), /conflict with "kubectl-client-side-apply" using slipway.dev\/v1alpha1: \.spec\.paused/);
  });

  it("records a Secret's keys, never its values", async () => {
    const { object } = await objects.apply(secrets, "default", "creds", { apiVersion: "v1", kind: "Secret", metadata: { name: "creds" }, data: { password: Buffer.from("hunter2").toString("base64") } }, as("ci"));
    assert.deepEqual(owner(object, "ci"), { "f:data": { "f:password": {} } });
    assert.equal(JSON.stringify(object.metadata.managedFields).includes(Buffer.from("hunter2").toString("base64")), false);
  });
});
