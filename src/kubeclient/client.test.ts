// The client against a real `slipway up`: what the CLI and controllers rely on, checked end to end.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parse, stringify } from "yaml";
import { freePort, removeDir, startSlipway, type RunningSlipway } from "../../test/support/slipway.ts";
import {
  KubeAlreadyExistsError,
  KubeClient,
  KubeConflictError,
  KubeInvalidError,
  KubeNotFoundError,
  KubeUnauthorizedError,
  KubeUnreachableError,
  type KubeObject,
  type WatchEvent,
} from "./index.ts";

const SLIPWAY = "slipway.dev/v1alpha1";

function connection(name: string, spec: Record<string, unknown> = {}, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: SLIPWAY, kind: "Connection", metadata: { name, labels }, spec: { provider: "sim", region: "sim-east-1", ...spec } };
}

function secret(name: string, data: Record<string, string>, labels: Record<string, string> = {}): KubeObject {
  const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
  return { apiVersion: "v1", kind: "Secret", metadata: { name, namespace: "default", labels }, type: "Opaque", data: encoded };
}

describe("kube client against slipway up", () => {
  let slipway: RunningSlipway;
  let kubeconfig: string;
  let kube: KubeClient;
  const others: KubeClient[] = [];

  before(async () => {
    slipway = await startSlipway();
    kubeconfig = readFileSync(slipway.kubeconfig, "utf8");
    kube = KubeClient.fromKubeconfig(kubeconfig);
  });

  after(async () => {
    kube.close();
    for (const other of others) other.close();
    assert.equal(await slipway.stop(), 0);
    removeDir(slipway.dataDir);
  });

  it("builds paths from apiVersion and kind, and finds kinds by the names kubectl accepts", async () => {
    assert.equal(await kube.resourcePath({ apiVersion: SLIPWAY, kind: "Cluster" }), "/apis/slipway.dev/v1alpha1/clusters");
    assert.equal(await kube.resourcePath({ apiVersion: SLIPWAY, kind: "Cluster", name: "demo" }), "/apis/slipway.dev/v1alpha1/namespaces/default/clusters/demo");
    assert.equal(
      await kube.resourcePath({ apiVersion: SLIPWAY, kind: "machinepools", namespace: "team-a", name: "pool", subresource: "status" }),
      "/apis/slipway.dev/v1alpha1/namespaces/team-a/machinepools/pool/status",
    );
    assert.equal(await kube.resourcePath({ apiVersion: "v1", kind: "Namespace", name: "default" }), "/api/v1/namespaces/default");
    for (const name of ["cl", "clusters", "Cluster", "clusters.slipway.dev"]) {
      const found = await kube.findResource(name);
      assert.deepEqual([found.apiVersion, found.name, found.namespaced], [SLIPWAY, "clusters", true], name);
    }
    assert.equal((await kube.findResource("ns")).kind, "Namespace");
    await assert.rejects(kube.findResource("widgets"), KubeNotFoundError);
    await assert.rejects(kube.resourcePath({ apiVersion: SLIPWAY, kind: "Widget" }), /does not offer kind Widget/);
  });

  it("creates, reads, lists, updates, patches and deletes objects", async () => {
    const collection = await kube.resourcePath({ apiVersion: SLIPWAY, kind: "Connection", namespace: "default" });
    const created = await kube.create(collection, connection("crud-east", {}, { team: "crud" }));
    assert.equal(created.metadata.namespace, "default");
    assert.ok(created.metadata.uid && created.metadata.resourceVersion);
    await assert.rejects(kube.create(collection, connection("crud-east")), KubeAlreadyExistsError);
    await kube.create(collection, connection("crud-west", { region: "sim-west-1" }, { team: "crud" }));
    await kube.create(collection, connection("other", {}, { team: "other" }));

    const path = `${collection}/crud-east`;
    assert.equal((await kube.get(path)).metadata.uid, created.metadata.uid);
    const listed = await kube.list(collection, { labelSelector: "team=crud" });
    assert.deepEqual(listed.items.map((c) => c.metadata.name).sort(), ["crud-east", "crud-west"]);
    assert.ok(listed.metadata.resourceVersion);
    const page = await kube.list(collection, { labelSelector: "team=crud", limit: 1 });
    assert.equal(page.items.length, 1);
    assert.ok(page.metadata.continue, "a limited list says how to continue");
    const rest = await kube.list(collection, { labelSelector: "team=crud", limit: 1, continue: page.metadata.continue });
    assert.deepEqual([...page.items, ...rest.items].map((c) => c.metadata.name).sort(), ["crud-east", "crud-west"]);
    assert.deepEqual((await kube.listAll(collection, { labelSelector: "team=crud", limit: 1 })).map((c) => c.metadata.name).sort(), ["crud-east", "crud-west"]);
    assert.deepEqual((await kube.list(collection, { fieldSelector: "metadata.name=other" })).items.map((c) => c.metadata.name), ["other"]);

    const current = await kube.get(path);
    const updated = await kube.update(path, { ...current, metadata: { ...current.metadata, labels: { team: "crud", tier: "gold" } } });
    assert.equal(updated.metadata.labels?.tier, "gold");
    const merged = await kube.patch(path, { metadata: { annotations: { note: "merged" } } }, "merge");
    assert.equal(merged.metadata.annotations?.note, "merged");
    assert.equal(merged.metadata.labels?.tier, "gold");
    const jsonPatched = await kube.patch(path, [{ op: "add", path: "/spec/endpoint", value: "https://cloud.example:8443" }, { op: "remove", path: "/metadata/labels/tier" }], "json");
    assert.equal((jsonPatched.spec as { endpoint?: string }).endpoint, "https://cloud.example:8443");
    assert.equal(jsonPatched.metadata.labels?.tier, undefined);

    await kube.delete(path, { propagationPolicy: "Background" });
    await assert.rejects(kube.get(path), (error: unknown) => error instanceof KubeNotFoundError && error.code === 404 && /crud-east/.test(error.message));
    await assert.rejects(kube.delete(path), KubeNotFoundError);
  });

  it("refuses a write based on a stale resourceVersion with a conflict", async () => {
    const collection = await kube.resourcePath({ apiVersion: "v1", kind: "Secret", namespace: "default" });
    const first = await kube.create(collection, secret("stale", { a: "1" }));
    const path = `${collection}/stale`;
    await kube.update(path, { ...first, data: { a: Buffer.from("2").toString("base64") } });
    await assert.rejects(kube.update(path, { ...first, data: { a: Buffer.from("3").toString("base64") } }), (error: unknown) => {
      assert.ok(error instanceof KubeConflictError, String(error));
      assert.equal(error.code, 409);
      assert.equal(error.reason, "Conflict");
      return true;
    });
    assert.equal(Buffer.from((await kube.get<{ data: { a: string } }>(path)).data.a, "base64").toString(), "2");
  });

  it("reports invalid objects with the offending fields", async () => {
    const collection = await kube.resourcePath({ apiVersion: SLIPWAY, kind: "Connection", namespace: "default" });
    await assert.rejects(kube.create(collection, connection("bad", { endpoint: "ftp://cloud.example" })), (error: unknown) => {
      assert.ok(error instanceof KubeInvalidError, String(error));
      assert.equal(error.code, 422);
      assert.ok(error.causes.some((c) => c.field === "spec.endpoint" && /http/.test(c.message)), JSON.stringify(error.causes));
      return true;
    });
    await assert.rejects(kube.get(`${collection}/bad`), KubeNotFoundError, "nothing was written");
  });

  it("watches a collection from a resourceVersion and sees additions, changes and deletions", async () => {
    const collection = await kube.resourcePath({ apiVersion: "v1", kind: "Secret", namespace: "default" });
    const start = await kube.list(collection, { labelSelector: "watched=yes" });
    const events: string[] = [];
    let sawDeletion: () => void = () => {};
    const deleted = new Promise<void>((resolve) => (sawDeletion = resolve));
    const watch = kube.watch(collection, { resourceVersion: start.metadata.resourceVersion!, labelSelector: "watched=yes" }, (event: WatchEvent<KubeObject>) => {
      events.push(`${event.type} ${event.object.metadata.name}`);
      if (event.type === "DELETED") sawDeletion();
    });
    await watch.opened;
    await kube.create(collection, secret("w1", { k: "v" }, { watched: "yes" }));
    await kube.create(collection, secret("unwatched", { k: "v" }));
    await kube.patch(`${collection}/w1`, { metadata: { annotations: { touched: "1" } } });
    await kube.delete(`${collection}/w1`);
    await deleted;
    watch.close();
    await watch.done;
    assert.deepEqual(events, ["ADDED w1", "MODIFIED w1", "DELETED w1"]);
  });

  it("applies an object: created, then unchanged, then configured", async () => {
    const desired = secret("applied", { user: "admin" }, { app: "demo" });
    const first = await kube.apply(desired);
    assert.equal(first.action, "created");
    const again = await kube.apply(desired);
    assert.equal(again.action, "unchanged");
    assert.equal(again.object.metadata.resourceVersion, first.object.metadata.resourceVersion);
    // An object read back from the server (with status and server metadata) applies unchanged too.
    assert.equal((await kube.apply(again.object)).action, "unchanged");
    const changed = await kube.apply(secret("applied", { user: "root" }, { app: "demo", tier: "gold" }));
    assert.equal(changed.action, "configured");
    assert.equal(changed.object.metadata.labels?.tier, "gold");
    assert.equal(Buffer.from((changed.object.data as { user: string }).user, "base64").toString(), "root");

    // A manifest the way a user writes it, with no namespace: the kubeconfig's (default) one.
    const manifest = parse(stringify(connection("applied-east"))) as KubeObject;
    assert.equal((await kube.apply(manifest)).action, "created");
    assert.equal((await kube.get(await kube.resourcePath({ apiVersion: SLIPWAY, kind: "Connection", name: "applied-east" }))).metadata.namespace, "default");
  });

  it("refuses a wrong token as unauthorized", async () => {
    const wrong = KubeClient.fromKubeconfig(kubeconfig.replace(/token: .*/, "token: not-the-admin-token"));
    others.push(wrong);
    await assert.rejects(wrong.get("/api/v1/namespaces"), (error: unknown) => error instanceof KubeUnauthorizedError && error.code === 401);
  });

  it("reports a server that does not answer as unreachable", async () => {
    const port = await freePort();
    const gone = KubeClient.fromKubeconfig(kubeconfig.replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: https://127.0.0.1:${port}`), { timeoutMs: 2000 });
    others.push(gone);
    await assert.rejects(gone.get("/api/v1/namespaces"), (error: unknown) => {
      assert.ok(error instanceof KubeUnreachableError, String(error));
      assert.match(error.message, /ECONNREFUSED/);
      assert.equal(error.server, `https://127.0.0.1:${port}`);
      return true;
    });
  });
});
