import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, ClusterTemplateObject } from "../api/kinds.ts";
import { defaultRegistry } from "../api/kinds.ts";
import { apiVersionOf, type KindDefinition } from "../api/registry.ts";
import { clusterKind } from "../api/slipway/cluster.ts";
import { clusterTemplateKind } from "../api/slipway/clustertemplate.ts";
import { InvalidError } from "../apiserver/errors.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { ensureDefaultNamespaces } from "./namespaces.ts";
import { clusterTemplateAdmission } from "./template-admission.ts";

const general = (kind: KindDefinition<never>) => kind as unknown as KindDefinition;

async function service() {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(defaultRegistry(), store, { admission: [clusterTemplateAdmission] });
  await ensureDefaultNamespaces(objects);
  const template = (name: string, spec: ClusterTemplateObject["spec"]) =>
    objects.create(general(clusterTemplateKind as never), undefined, { apiVersion: apiVersionOf(clusterTemplateKind), kind: "ClusterTemplate", metadata: { name }, spec });
  const cluster = (name: string, spec: Partial<ClusterObject["spec"]>) =>
    objects.create(general(clusterKind as never), "default", {
      apiVersion: apiVersionOf(clusterKind),
      kind: "Cluster",
      metadata: { name, namespace: "default" },
      spec: { controlPlane: { connection: "east" }, workers: [{ name: "work", connection: "east" }], ...spec },
    });
  return { store, objects, template, cluster };
}

describe("clusters made from a template", () => {
  it("get what they leave out from it, keep what they spell, and warn when it is deprecated", async () => {
    const { store, objects, template, cluster } = await service();
    await template("small-v130", {
      kubernetesVersion: "v1.30.4",
      network: { cni: "flannel", podCIDR: "10.42.0.0/16" },
      machineTypes: { controlPlane: "s1.medium", workers: "s1.small" },
      addons: [{ name: "monitoring", version: "1.2.0" }],
      upgradeTargets: ["small-v131"],
      deprecated: true,
    });
    const made = await cluster("from-template", { templateName: "small-v130", workers: [{ name: "work", connection: "east" }, { name: "big", connection: "east", machineType: "s1.xlarge" }] });
    const spec = (made.object as ClusterObject).spec;
    assert.equal(spec.kubernetesVersion, "v1.30.4");
    assert.equal(spec.network?.cni, "flannel");
    assert.equal(spec.network?.podCIDR, "10.42.0.0/16");
    assert.equal(spec.network?.serviceCIDR, "10.96.0.0/12", "what the template leaves out keeps Slipway's default");
    assert.equal(spec.controlPlane.machineType, "s1.medium");
    assert.deepEqual(spec.workers?.map((w) => w.machineType), ["s1.small", "s1.xlarge"], "a pool's own machine type wins");
    assert.deepEqual(made.warnings, ["ClusterTemplate small-v130 is deprecated; consider small-v131"]);

    // An update that leaves the filled fields out (as a replace of the first manifest does) keeps them.
    const stored = made.object as ClusterObject;
    const replaced = await objects.update(general(clusterKind as never), "default", "from-template", {
      ...stored,
      spec: { templateName: "small-v130", controlPlane: { connection: "east" }, workers: [{ name: "work", connection: "east", replicas: 2 }, { name: "big", connection: "east", machineType: "s1.xlarge" }] },
    });
    const kept = (replaced.object as ClusterObject).spec;
    assert.deepEqual([kept.kubernetesVersion, kept.network?.cni, kept.controlPlane.machineType, kept.workers?.[0]?.machineType, kept.workers?.[0]?.replicas], ["v1.30.4", "flannel", "s1.medium", "s1.small", 2]);
    assert.deepEqual(replaced.warnings, [], "only a create warns about a deprecated template");

    const spelled = await cluster("spelled", { templateName: "small-v130", kubernetesVersion: "v1.29.1", network: { cni: "cilium" } });
    assert.equal((spelled.object as ClusterObject).spec.kubernetesVersion, "v1.29.1");
    assert.equal((spelled.object as ClusterObject).spec.network?.cni, "cilium");
    await store.close();
  });

  it("move to one of their template's upgrade targets, taking its version under the skew rules, and to no other", async () => {
    const { store, objects, template, cluster } = await service();
    const types = { controlPlane: "s1.medium", workers: "s1.small" };
    await template("v130", { kubernetesVersion: "v1.30.4", machineTypes: types, upgradeTargets: ["v131", "v132"] });
    await template("v131", { kubernetesVersion: "v1.31.2", machineTypes: types });
    await template("v132", { kubernetesVersion: "v1.32.1", machineTypes: types });
    await template("elsewhere", { kubernetesVersion: "v1.31.2", machineTypes: types });
    const made = (await cluster("moving", { templateName: "v130" })).object as ClusterObject;
    const move = (to: string) => objects.update(general(clusterKind as never), "default", "moving", { ...made, spec: { ...made.spec, templateName: to } });
    await assert.rejects(move("elsewhere"), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.deepEqual(e.fieldErrors.map((f) => [f.field, f.message]), [["spec.templateName", 'Invalid value: "elsewhere": not an upgrade target of ClusterTemplate v130 (its upgradeTargets: v131, v132)']]);
      return true;
    });
    await assert.rejects(move("v132"), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.match(e.fieldErrors.map((f) => `${f.field}: ${f.message}`).join(), /spec.kubernetesVersion: .*version skew rule "one minor version at a time"/);
      return true;
    });
    const moved = (await move("v131")).object as ClusterObject;
    assert.deepEqual([moved.spec.templateName, moved.spec.kubernetesVersion], ["v131", "v1.31.2"]);
    await store.close();
  });

  it("refuse a template that does not exist, and a machine type neither the cluster nor its template gives, naming the field", async () => {
    const { store, template, cluster } = await service();
    await assert.rejects(cluster("lost", { templateName: "nope" }), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.deepEqual(e.fieldErrors.map((f) => [f.field, f.reason]), [["spec.templateName", "FieldValueNotFound"]]);
      return true;
    });
    await template("bare", { kubernetesVersion: "v1.31.2", machineTypes: { controlPlane: "s1.medium" } });
    await assert.rejects(cluster("half", { templateName: "bare" }), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.deepEqual(e.fieldErrors.map((f) => f.field), ["spec.workers[0].machineType"]);
      assert.match(e.fieldErrors[0]!.message, /template bare names no default machine type/);
      return true;
    });
    await assert.rejects(cluster("plain", {}), (e: unknown) => e instanceof InvalidError && e.fieldErrors.map((f) => f.field).join() === "spec.controlPlane.machineType,spec.workers[0].machineType");
    await store.close();
  });
});
