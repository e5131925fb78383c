import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { AddonObject } from "../../api/slipway/addon.ts";
import type { Client } from "../../runtime/client.ts";
import { Bundles, compareVersions } from "./bundles.ts";
import { notReady } from "./health.ts";
import { AddonError, renderAddon, substitute } from "./render.ts";

const bundles = new Bundles();
const noClient = undefined as unknown as Client;
const where = { name: "demo", namespace: "team" };

function addon(spec: Record<string, unknown>): AddonObject {
  return { apiVersion: "slipway.dev/v1alpha1", kind: "Addon", metadata: { name: "a", namespace: "team" }, spec: { clusterName: "demo", ...spec } as AddonObject["spec"] };
}

describe("addon manifests", () => {
  it("ships bundles with versions, the newest first", () => {
    const catalogue = bundles.catalogue();
    assert.deepEqual(catalogue.map((b) => b.name), ["dashboard", "ingress-nginx", "metrics-server"]);
    assert.ok(compareVersions("1.10.0", "1.9.2") > 0);
    assert.ok(compareVersions("v0.7.2", "0.7.2") === 0);
  });

  it("renders a bundle with its defaults, the addon's parameters and the built-ins", async () => {
    const rendered = await renderAddon(noClient, bundles, addon({ bundle: { name: "dashboard" }, parameters: { replicas: "2" } }), where);
    assert.equal(rendered.version, "2.7.0");
    const deployment = rendered.manifests.find((m) => m.kind === "Deployment") as unknown as { spec: { replicas: number } };
    assert.equal(deployment.spec.replicas, 2);
    const page = rendered.manifests.find((m) => m.kind === "ConfigMap") as unknown as { data: Record<string, string> };
    assert.match(page.data["index.html"]!, /<title>Kubernetes Dashboard — demo<\/title>/);
    assert.match(page.data["index.html"]!, /namespace team/);
    assert.deepEqual(rendered.services.map((s) => [s.name, s.service, s.namespace, s.port]), [["dashboard", "kubernetes-dashboard", "kubernetes-dashboard", 80]]);
    // Every bundle renders with its defaults alone.
    for (const { name } of bundles.catalogue()) assert.ok((await renderAddon(noClient, bundles, addon({ bundle: { name } }), where)).manifests.length > 3, name);
  });

  it("names the parameter without a value, and where it is used", async () => {
    assert.deepEqual(substitute("a: ${x}\nb: ${ y }\nc: ${x}", { y: "1" }), { text: "a: ${x}\nb: 1\nc: ${x}", missing: ["x"] });
    const manifests = [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "owner" }, data: { team: "${team}", cluster: "${cluster.name}" } }];
    await assert.rejects(renderAddon(noClient, bundles, addon({ manifests }), where), (e: Error) => e instanceof AddonError && e.message === "spec.parameters: no value for ${team} (used in spec.manifests[0])");
    const rendered = await renderAddon(noClient, bundles, addon({ manifests, parameters: { team: "blue" } }), where);
    assert.deepEqual((rendered.manifests[0] as unknown as { data: unknown }).data, { team: "blue", cluster: "demo" });
  });

  it("refuses an unknown bundle or version, a manifest without a name and an object declared twice", async () => {
    const fails = (spec: Record<string, unknown>, pattern: RegExp) => assert.rejects(renderAddon(noClient, bundles, addon(spec), where), (e: Error) => e instanceof AddonError && pattern.test(e.message));
    await fails({ bundle: { name: "grafana" } }, /^spec\.bundle\.name: no bundle named grafana is shipped \(there are: dashboard, ingress-nginx, metrics-server\)$/);
    await fails({ bundle: { name: "dashboard", version: "9.9.9" } }, /^spec\.bundle\.version: bundle dashboard has no version 9\.9\.9 \(there are: 2\.7\.0\)$/);
    await fails({ manifests: [{ apiVersion: "v1", kind: "ConfigMap", metadata: {} }] }, /^spec\.manifests\[0\]\.metadata\.name: Required value/);
    const fromConfigMap = { of: () => ({ tryGet: async (_ns: string, name: string) => (name === "m" ? { data: { "b.yaml": "kind: [", "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n" } } : undefined) }) } as unknown as Client;
    await assert.rejects(renderAddon(fromConfigMap, bundles, addon({ configMapRef: { name: "m" } }), where), (e: Error) => e instanceof AddonError && /^spec\.configMapRef key b\.yaml: document 1 is not valid YAML/.test(e.message));
    await assert.rejects(renderAddon(fromConfigMap, bundles, addon({ configMapRef: { name: "gone" } }), where), (e: Error) => e instanceof AddonError && e.message === "spec.configMapRef.name: ConfigMap gone does not exist in namespace team");
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } };
    await fails({ manifests: [cm, cm] }, /^spec\.manifests\[1\]: ConfigMap x is declared twice \(first at spec\.manifests\[0\]\)$/);
  });
});

describe("addon health", () => {
  const deployment = (status: Record<string, unknown>, replicas = 2) => ({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d", namespace: "ns", generation: 2 }, spec: { replicas }, status });
  it("waits for a Deployment to be available at its generation", () => {
    const available = [{ type: "Available", status: "True" }];
    assert.equal(notReady(deployment({ observedGeneration: 2, availableReplicas: 2, updatedReplicas: 2, conditions: available })), undefined);
    assert.equal(notReady(deployment({ observedGeneration: 1, availableReplicas: 2, updatedReplicas: 2, conditions: available })), "Deployment ns/d: 2/2 available");
    assert.equal(notReady(deployment({ observedGeneration: 2, availableReplicas: 1, updatedReplicas: 2, conditions: available })), "Deployment ns/d: 1/2 available");
  });

  it("waits for a DaemonSet on every node and a Job to complete", () => {
    const ds = (status: Record<string, unknown>) => ({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "n", namespace: "kube-system" }, status });
    assert.equal(notReady(ds({ desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 3 })), undefined);
    assert.equal(notReady(ds({ desiredNumberScheduled: 3, numberReady: 2 })), "DaemonSet kube-system/n: 2/3 scheduled and ready");
    assert.equal(notReady(ds({})), "DaemonSet kube-system/n: 0/0 scheduled and ready");
    const job = (status: Record<string, unknown>) => ({ apiVersion: "batch/v1", kind: "Job", metadata: { name: "j", namespace: "x" }, spec: { completions: 1 }, status });
    assert.equal(notReady(job({ succeeded: 1, conditions: [{ type: "Complete", status: "True" }] })), undefined);
    assert.equal(notReady(job({})), "Job x/j: 0/1 completed");
    assert.equal(notReady(job({ conditions: [{ type: "Failed", status: "True", message: "BackoffLimitExceeded" }] })), "Job x/j failed: BackoffLimitExceeded");
  });

  it("reads a Job's status as the Job controller writes it, running and complete", () => {
    const job = (status: Record<string, unknown>) => ({ apiVersion: "batch/v1", kind: "Job", metadata: { name: "j", namespace: "x" }, spec: { completions: 3, parallelism: 2 }, status });
    const base = { startTime: "2025-03-01T10:00:00Z", ready: 0, terminating: 0, uncountedTerminatedPods: {} };
    assert.equal(notReady(job({ ...base, active: 2, succeeded: 1 })), "Job x/j: 1/3 completed");
    const reached = { status: "True", reason: "CompletionsReached", message: "Reached expected number of succeeded pods" };
    // SuccessCriteriaMet comes first; the Job is done only once Complete.
    assert.equal(notReady(job({ ...base, succeeded: 3, conditions: [{ type: "SuccessCriteriaMet", ...reached }] })), "Job x/j: 3/3 completed");
    const complete = [{ type: "SuccessCriteriaMet", ...reached }, { type: "Complete", ...reached }];
    assert.equal(notReady(job({ ...base, succeeded: 3, completionTime: "2025-03-01T10:00:05Z", conditions: complete })), undefined);
  });
});
