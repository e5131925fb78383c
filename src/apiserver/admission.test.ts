import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultRegistry } from "../api/kinds.ts";
import type { KubeObject } from "../api/meta.ts";
import { clusterKind } from "../api/slipway/cluster.ts";
import type { ClusterObject } from "../api/kinds.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { Client, controllerContext } from "../runtime/client.ts";
import { AdmissionChain, BUILTIN_ADMISSION, DuplicatePluginError, type AdmissionPlugin, type PostWriteHook } from "./admission.ts";
import { ForbiddenError, InvalidError, NotFoundError } from "./errors.ts";
import { ObjectService, type ObjectServiceOptions } from "./objects.ts";
import type { RequestContext } from "./request-context.ts";

const registry = defaultRegistry();
const clusters = registry.byKind("slipway.dev/v1alpha1", "Cluster")!;
const namespaces = registry.byKind("v1", "Namespace")!;

function cluster(name: string): ClusterObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name, namespace: "default" },
    spec: { controlPlane: { connection: "east", machineType: "s1.medium", replicas: 1 } },
  };
}

const alice: RequestContext = { identity: { user: "alice", groups: ["team-a"] }, fieldManager: "kubectl" };

async function service(options: ObjectServiceOptions): Promise<{ objects: ObjectService; store: SqliteStore }> {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(registry, store, options);
  await objects.create(namespaces, undefined, { metadata: { name: "default" } });
  return { objects, store };
}

/** A plugin that records each stage it runs in, with who asked. */
function recorder(name: string, trace: string[], stages: { mutate?: boolean; validate?: boolean } = { mutate: true, validate: true }): AdmissionPlugin {
  return {
    name,
    ...(stages.mutate ? { mutate: (r) => void trace.push(`${name}.mutate ${r.operation} ${r.request.identity.user}`) } : {}),
    ...(stages.validate ? { validate: (r) => void trace.push(`${name}.validate ${r.operation} ${r.request.identity.user}`) } : {}),
  };
}

describe("the admission chain", () => {
  it("runs every plugin's mutate stage in order, then every validate stage in order, after the built-in plugins", async () => {
    const trace: string[] = [];
    const { objects, store } = await service({
      admission: [recorder("First", trace), recorder("ValidatesOnly", trace, { validate: true }), recorder("MutatesOnly", trace, { mutate: true })],
    });
    trace.length = 0; // the namespace "default" went through them too
    try {
      assert.deepEqual(objects.admission.names, {
        mutate: ["Defaulting", "First", "MutatesOnly"],
        validate: ["NamespaceLifecycle", "Validation", "First", "ValidatesOnly"],
        postWrite: [],
      });
      await objects.create(clusters, "default", cluster("a"), { context: alice });
      assert.deepEqual(trace, ["First.mutate CREATE alice", "MutatesOnly.mutate CREATE alice", "First.validate CREATE alice", "ValidatesOnly.validate CREATE alice"]);
      trace.length = 0;
      await objects.delete(clusters, "default", "a", { context: alice });
      assert.deepEqual(trace, ["First.validate DELETE alice", "ValidatesOnly.validate DELETE alice"], "a delete is validated, not mutated");
    } finally {
      await store.close();
    }
  });

  it("refuses two plugins of one name", () => {
    const plugin: AdmissionPlugin = { name: "Twice", validate: () => undefined };
    assert.throws(() => new AdmissionChain([...BUILTIN_ADMISSION, plugin, plugin]), DuplicatePluginError);
  });

  it("runs for in-process writes: a controller's client is admitted and hooked under its own identity", async () => {
    const trace: string[] = [];
    const managers: (string | undefined)[] = [];
    const hook: PostWriteHook = { name: "Trace", afterWrite: (e) => void trace.push(`after ${e.operation} ${e.object.metadata.name} ${e.request.identity.user}`) };
    const { objects, store } = await service({
      admission: [{ name: "Manager", validate: (r) => void managers.push(r.request.fieldManager) }, recorder("Plugin", trace)],
      postWrite: [hook],
    });
    trace.length = 0;
    managers.length = 0;
    try {
      const client = new Client(objects).as(controllerContext("cluster")).of<ClusterObject>(clusterKind);
      await client.create(cluster("b"));
      await client.patch("default", "b", "merge", { metadata: { labels: { x: "y" } } });
      await client.updateStatus({ ...(await client.get("default", "b")), status: { phase: "Running" } });
      const user = "system:serviceaccount:slipway-system:cluster-controller";
      assert.deepEqual(trace, [
        `Plugin.mutate CREATE ${user}`,
        `Plugin.validate CREATE ${user}`,
        `after CREATE b ${user}`,
        `Plugin.mutate UPDATE ${user}`,
        `Plugin.validate UPDATE ${user}`,
        `after UPDATE b ${user}`,
        `Plugin.mutate UPDATE ${user}`,
        `Plugin.validate UPDATE ${user}`,
        `after UPDATE b ${user}`,
      ]);
      assert.deepEqual(managers, ["cluster-controller", "cluster-controller", "cluster-controller"]);
    } finally {
      await store.close();
    }
  });

  it("validates a dry run as a write, and writes nothing nor runs the hooks", async () => {
    const trace: string[] = [];
    const hook: PostWriteHook = { name: "Trace", afterWrite: (e) => void trace.push(`after ${e.operation}`) };
    const { objects, store } = await service({ admission: [recorder("Plugin", trace, { validate: true })], postWrite: [hook] });
    trace.length = 0;
    try {
      const dryRun: RequestContext = { ...alice, dryRun: true };
      const before = await store.revision();
      const { object } = await objects.create(clusters, "default", cluster("dry"), { context: dryRun });
      assert.equal(object.metadata.generation, 1, "the answer is the object as it would be stored");
      assert.equal((object.spec as { kubernetesVersion?: string }).kubernetesVersion, "v1.31.2", "defaults are applied");
      const refused = await objects.create(clusters, "default", { ...cluster("dry"), spec: { controlPlane: { connection: "east", machineType: "s1.medium", replicas: 2 } } }, { context: dryRun }).catch((e: unknown) => e);
      assert.ok(refused instanceof InvalidError, "an invalid dry run is refused as a write would be");
      const elsewhere = { ...cluster("dry"), metadata: { name: "dry", namespace: "nowhere" } };
      await assert.rejects(objects.create(clusters, "nowhere", elsewhere, { context: dryRun }), NotFoundError);
      assert.equal(await store.revision(), before, "nothing written");
      assert.equal(await objects.tryGet(clusters, "default", "dry"), undefined);

      await objects.create(clusters, "default", cluster("real"));
      const written = await store.revision();
      const patched = await objects.patch(clusters, "default", "real", "merge", { spec: { controlPlane: { replicas: 3 } } }, { context: dryRun });
      assert.equal(patched.object.metadata.generation, 2);
      const deleted = await objects.delete(clusters, "default", "real", { context: dryRun });
      assert.equal(deleted.previous?.metadata.name, "real");
      assert.equal(await store.revision(), written, "nothing written");
      assert.equal((await objects.get(clusters, "default", "real")).metadata.generation, 1);
      assert.deepEqual(trace, ["Plugin.validate CREATE alice", "Plugin.validate CREATE system:apiserver", "after CREATE", "Plugin.validate UPDATE alice", "Plugin.validate DELETE alice"]);
    } finally {
      await store.close();
    }
  });

  it("leaves nothing written when a validate plugin refuses, and runs no hook", async () => {
    const hooked: string[] = [];
    const noBlue: AdmissionPlugin = {
      name: "NoBlue",
      validate(r) {
        const labels = r.operation === "DELETE" ? r.oldObject.metadata.labels : r.object.metadata.labels;
        if (labels?.colour === "blue") throw new ForbiddenError(`${r.name}: blue is not allowed here`);
      },
    };
    const { objects, store } = await service({ admission: [noBlue], postWrite: [{ name: "Trace", afterWrite: (e) => void hooked.push(e.operation) }] });
    hooked.length = 0;
    try {
      const blue = { ...cluster("blue"), metadata: { name: "blue", namespace: "default", labels: { colour: "blue" } } };
      const before = await store.revision();
      await assert.rejects(objects.create(clusters, "default", blue), ForbiddenError);
      assert.equal(await store.revision(), before);
      assert.equal(await objects.tryGet(clusters, "default", "blue"), undefined);

      await objects.create(clusters, "default", cluster("green"));
      const written = await store.revision();
      await assert.rejects(objects.patch(clusters, "default", "green", "merge", { metadata: { labels: { colour: "blue" } }, spec: { controlPlane: { replicas: 3 } } }), ForbiddenError);
      const green = await objects.get(clusters, "default", "green");
      assert.equal(green.metadata.labels, undefined);
      assert.equal((green.spec as ClusterObject["spec"]).controlPlane.replicas, 1);
      assert.equal(await store.revision(), written);
      assert.deepEqual(hooked, ["CREATE"], "only the accepted write ran the hooks");
    } finally {
      await store.close();
    }
  });

  it("validates what the mutate stage made of the object, and stores it", async () => {
    const labelled: AdmissionPlugin = {
      name: "Owner",
      mutate(r) {
        if (r.def.kind !== "Cluster") return;
        r.object.metadata.labels = { ...r.object.metadata.labels, owner: r.request.identity.user.replace(/[^A-Za-z0-9._-]/g, "-") };
        if (r.object.metadata.name === "doubled") (r.object as ClusterObject).spec.controlPlane.replicas = 2;
      },
    };
    const { objects, store } = await service({ admission: [labelled] });
    try {
      const { object } = await objects.create(clusters, "default", cluster("c"), { context: alice });
      assert.deepEqual(object.metadata.labels, { owner: "alice" });
      assert.deepEqual((await objects.get(clusters, "default", "c")).metadata.labels, { owner: "alice" });
      const refused = await objects.create(clusters, "default", cluster("doubled")).catch((e: unknown) => e);
      assert.ok(refused instanceof InvalidError);
      assert.deepEqual(refused.fieldErrors.map((e) => e.field), ["spec.controlPlane.replicas"]);
    } finally {
      await store.close();
    }
  });

  it("returns the headers post-write hooks ask for, merged in order", async () => {
    const location = (name: string, value: string): PostWriteHook => ({ name, afterWrite: async () => ({ responseHeaders: { "Operation-Location": value, [`X-${name}`]: "1" } }) });
    const { objects, store } = await service({ postWrite: [location("First", "/one"), location("Second", "/two")] });
    try {
      const { responseHeaders } = await objects.create(clusters, "default", cluster("h"));
      assert.deepEqual(responseHeaders, { "Operation-Location": "/two", "X-First": "1", "X-Second": "1" });
    } finally {
      await store.close();
    }
  });

  it("asks the authorizer about every read and write, with the caller's identity, and refuses as Kubernetes words it", async () => {
    const asked: string[] = [];
    const { objects, store } = await service({
      authorizer: {
        authorize(r) {
          const what = "resource" in r && r.resource ? `${r.verb} ${r.resource.resource}${r.resource.subresource ? "/" + r.resource.subresource : ""} ${r.resource.namespace ?? "-"}/${r.resource.name ?? "-"}` : r.verb;
          asked.push(`${r.identity.user}: ${what}`);
          return r.identity.user === "alice" && r.verb === "delete" ? { allowed: false } : { allowed: true };
        },
      },
    });
    try {
      const seen = (o: KubeObject) => o.metadata.name;
      seen((await objects.create(clusters, "default", cluster("z"), { context: alice })).object);
      await objects.get(clusters, "default", "z", { context: alice });
      await objects.list(clusters, "default", { context: alice });
      await objects.patch(clusters, "default", "z", "merge", { status: { phase: "Running" } }, { subresource: "status", context: alice });
      const refused = await objects.delete(clusters, "default", "z", { context: alice }).catch((e: unknown) => e);
      assert.ok(refused instanceof ForbiddenError);
      assert.equal(refused.code, 403);
      assert.equal(refused.message, 'clusters.slipway.dev "z" is forbidden: User "alice" cannot delete resource "clusters" in API group "slipway.dev" in the namespace "default"');
      assert.ok(await objects.tryGet(clusters, "default", "z"), "a refused delete deletes nothing");
      assert.deepEqual(asked.filter((a) => a.startsWith("alice")), [
        "alice: create clusters default/-",
        "alice: get clusters default/z",
        "alice: list clusters default/-",
        "alice: patch clusters/status default/z",
        "alice: delete clusters default/z",
      ]);
    } finally {
      await store.close();
    }
  });
});
