// The ecosystem's clients against a real `slipway up`: kubectl's apply as GitOps and backups use it
// (strategic merge patches computed from the served schemas, a `v1 List` validated against /openapi/v2),
// kubectl 1.31 and 1.33 (protobuf), the official JavaScript client (@kubernetes/client-node: informer,
// CRUD, patch, paging, deletecollection) and the official Python client (Debian's python3-kubernetes):
// watch, paging with remainingItemCount, deletecollection, custom objects and errors.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig, makeInformer, PatchStrategy, setHeaderOptions, type V1ConfigMap } from "@kubernetes/client-node";
import { eventually, kubectl, REPO, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";

const PYTHON = "/usr/bin/python3";
/** kubectl of fixed versions beside the dispatcher; from 1.32 it sends built-in kinds as protobuf. */
const KUBECTL_VERSIONS = ["1.31", "1.33"].map((v) => ({ version: v, bin: `/usr/lib/google-cloud-sdk/bin/kubectl.${v}` }));

const CLUSTER = (westReplicas: number) => `
apiVersion: slipway.dev/v1alpha1
kind: Connection
metadata:
  name: east
spec:
  provider: sim
  region: sim-east-1
---
apiVersion: slipway.dev/v1alpha1
kind: Cluster
metadata:
  name: shop
spec:
  # Paused: nothing is built; the test is about what the API stores.
  paused: true
  controlPlane:
    connection: east
    machineType: s1.medium
  workers:
    - name: east
      connection: east
      machineType: s1.large
      replicas: 2
    - name: west
      connection: east
      machineType: s1.large
      replicas: ${westReplicas}
`;

describe("clients of the Kubernetes API", () => {
  let server: RunningSlipway;
  let kc: string;
  const ok = (...args: string[]) => {
    const r = kubectl(kc, args);
    assert.equal(r.status, 0, `kubectl ${args.join(" ")} failed: ${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    server = await startSlipway();
    kc = server.kubeconfig;
  });

  after(async () => {
    await server.stop("SIGTERM");
    removeDir(server.dataDir);
  });

  it("kubectl apply of an unchanged manifest changes nothing, and a changed pool leaves the others as they are", () => {
    const file = join(server.dataDir, "shop.yaml");
    writeFileSync(file, CLUSTER(2));
    ok("apply", "-f", file);
    const generation = ok("get", "cluster", "shop", "-o", "jsonpath={.metadata.generation}");
    // The server fills in defaults (each pool's image): a merge patch would send the whole list back.
    assert.match(ok("get", "cluster", "shop", "-o", "jsonpath={.spec.workers[0].image}"), /\S/);
    const again = ok("apply", "-f", file);
    assert.match(again, /cluster\.slipway\.dev\/shop unchanged/);
    assert.equal(ok("get", "cluster", "shop", "-o", "jsonpath={.metadata.generation}"), generation);
    writeFileSync(file, CLUSTER(5));
    assert.match(ok("apply", "-f", file), /cluster\.slipway\.dev\/shop configured/);
    assert.equal(ok("get", "cluster", "shop", "-o", "jsonpath={range .spec.workers[*]}{.name}={.replicas} {end}"), "east=2 west=5 ");
  });

  it("restores a `kubectl get -o yaml` dump of several kinds with kubectl apply", () => {
    ok("create", "secret", "generic", "shop-db", "--from-literal=password=s3cret");
    ok("create", "configmap", "shop-settings", "--from-literal=color=blue");
    const dump = ok("get", "clusters,secrets,configmaps", "-o", "yaml");
    assert.match(dump, /^kind: List$/m);
    const file = join(server.dataDir, "backup.yaml");
    writeFileSync(file, dump);
    ok("delete", "cluster", "shop", "--wait=true");
    ok("delete", "secret", "shop-db");
    ok("delete", "configmap", "shop-settings");
    // kubectl validates a List on the client, with the schemas of /openapi/v2, before it applies the items.
    const restored = ok("apply", "-f", file);
    assert.match(restored, /cluster\.slipway\.dev\/shop created/);
    assert.match(restored, /secret\/shop-db created/);
    assert.equal(Buffer.from(ok("get", "secret", "shop-db", "-o", "jsonpath={.data.password}"), "base64").toString(), "s3cret");
    assert.equal(ok("get", "cluster", "shop", "-o", "jsonpath={range .spec.workers[*]}{.name}={.replicas} {end}"), "east=2 west=5 ");
    // A List with an unknown field in one item is refused before anything is written.
    writeFileSync(file, dump.replace("color: blue", "color: blue\n  colour: red").replace(/name: shop-settings/, "name: shop-settings-2"));
    const refused = kubectl(kc, ["apply", "-f", file]);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /colour/);
    assert.notEqual(kubectl(kc, ["get", "configmap", "shop-settings-2"]).status, 0);
  });

  for (const { version, bin } of KUBECTL_VERSIONS) {
    it(`kubectl ${version} creates, reads and deletes namespaces, secrets and config maps (protobuf from 1.32)`, () => {
      const run = (...args: string[]) => {
        const r = spawnSync(bin, ["--kubeconfig", kc, ...args], { encoding: "utf8", timeout: 30_000 });
        assert.equal(r.status, 0, `kubectl ${version} ${args.join(" ")}: ${r.stderr}`);
        return r.stdout;
      };
      const ns = `team-${version.replace(".", "-")}`;
      assert.match(run("create", "namespace", ns), /created/);
      assert.match(run("create", "secret", "generic", "token", "--from-literal=value=t0ps3cret", "-n", ns), /created/);
      assert.match(run("create", "configmap", "settings", "--from-literal=mode=fast", "-n", ns), /created/);
      assert.equal(Buffer.from(run("get", "secret", "token", "-n", ns, "-o", "jsonpath={.data.value}"), "base64").toString(), "t0ps3cret");
      assert.equal(run("get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data.mode}"), "fast");
      assert.equal(run("get", "namespace", ns, "-o", "jsonpath={.status.phase}"), "Active");
      assert.match(run("delete", "namespace", ns, "--wait=false"), /deleted/);
    });
  }

  it("serves the Python client: watch events, full pages that count what remains, deletecollection, custom objects, errors", () => {
    const run = spawnSync(PYTHON, [join(REPO, "test/support/python-client.py"), kc, "default"], { encoding: "utf8", timeout: 60_000 });
    assert.equal(run.status, 0, run.stderr);
    const seen = JSON.parse(run.stdout) as {
      pages: { names: string[]; remaining: number | null }[];
      unfilteredRemaining: number;
      unfilteredTotal: number;
      deletedKind: string;
      left: string[];
      events: [string, string][];
      clusters: string[];
      missing: { status: number; reason: string };
      dryRunStored: boolean;
      foregroundGone: boolean;
    };
    assert.deepEqual(
      seen.pages.map((p) => p.names),
      [["py-0", "py-1"], ["py-2", "py-3"], ["py-4"]],
    );
    assert.equal(seen.unfilteredRemaining, seen.unfilteredTotal - 1, "an unfiltered page of one says how many remain");
    assert.equal(seen.deletedKind, "ConfigMapList");
    assert.deepEqual(seen.left, ["py-0", "py-2", "py-4"]);
    assert.deepEqual(seen.events, [
      ["ADDED", "py-0"],
      ["ADDED", "py-1"],
      ["ADDED", "py-2"],
      ["ADDED", "py-3"],
      ["ADDED", "py-4"],
      ["MODIFIED", "py-0"],
      ["DELETED", "py-1"],
      ["DELETED", "py-3"],
      ["DELETED", "py-0"],
    ]);
    assert.deepEqual(seen.clusters, ["shop"]);
    assert.deepEqual(seen.missing, { status: 404, reason: "NotFound" });
    assert.equal(seen.dryRunStored, false, "a dry-run create stores nothing");
    assert.equal(seen.foregroundGone, true, "a foreground delete completes once no dependent holds it");
  });

  it("serves @kubernetes/client-node: an informer sees every change, CRUD, merge patch, paging, deletecollection, errors", async () => {
    const config = new KubeConfig();
    config.loadFromFile(kc);
    const core = config.makeApiClient(CoreV1Api);
    const custom = config.makeApiClient(CustomObjectsApi);
    const namespace = "default";
    const seen: string[] = [];
    const informer = makeInformer(config, `/api/v1/namespaces/${namespace}/configmaps`, () => core.listNamespacedConfigMap({ namespace, labelSelector: "suite=node" }), "suite=node");
    informer.on("add", (o: V1ConfigMap) => seen.push(`add ${o.metadata?.name}`));
    informer.on("update", (o: V1ConfigMap) => seen.push(`update ${o.metadata?.name} ${o.data?.i}`));
    informer.on("delete", (o: V1ConfigMap) => seen.push(`delete ${o.metadata?.name}`));
    await informer.start();
    try {
      for (let i = 0; i < 3; i++) {
        await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `node-${i}`, labels: { suite: "node" } }, data: { i: String(i) } } });
      }
      await core.patchNamespacedConfigMap({ name: "node-1", namespace, body: { data: { i: "patched" } } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
      await core.deleteNamespacedConfigMap({ name: "node-2", namespace });
      const page = await core.listNamespacedConfigMap({ namespace, labelSelector: "suite=node", limit: 1 });
      assert.deepEqual(
        page.items.map((i) => i.metadata?.name),
        ["node-0"],
      );
      assert.ok(page.metadata?._continue, "a full page under a selector carries continue");
      const next = await core.listNamespacedConfigMap({ namespace, labelSelector: "suite=node", limit: 1, _continue: page.metadata._continue });
      assert.deepEqual(
        next.items.map((i) => i.metadata?.name),
        ["node-1"],
      );
      await assert.rejects(core.readNamespacedConfigMap({ name: "missing", namespace }), (e: unknown) => e instanceof ApiException && e.code === 404);
      const clusters = (await custom.listNamespacedCustomObject({ group: "slipway.dev", version: "v1alpha1", namespace, plural: "clusters" })) as { items: { metadata: { name: string } }[] };
      assert.deepEqual(
        clusters.items.map((c) => c.metadata.name),
        ["shop"],
      );
      await core.deleteCollectionNamespacedConfigMap({ namespace, labelSelector: "suite=node" });
      await eventually(() => seen.length >= 7, { what: "the informer to see the collection deleted" });
      assert.deepEqual(seen, ["add node-0", "add node-1", "add node-2", "update node-1 patched", "delete node-2", "delete node-0", "delete node-1"]);
    } finally {
      await informer.stop();
    }
  });
});
