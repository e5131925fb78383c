import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { InvalidError } from "../errors.ts";
import { QuotaConstraintError, QuotaExceededError, QuotaStatusUnknownError, admitToQuotas, type QuotaAdmissionRequest } from "./admission.ts";
import { pod, podRequesting, quota, service } from "./testing.ts";
import type { QuotaCountedObject } from "./evaluators.ts";

const now = new Date("2026-01-01T00:00:00Z");

function create(object: QuotaCountedObject & { kind?: string }, resource = "pods", group = ""): QuotaAdmissionRequest {
  return { operation: "CREATE", group, resource, object };
}

function update(oldObject: QuotaCountedObject, object: QuotaCountedObject, resource = "pods", subresource?: string): QuotaAdmissionRequest {
  return { operation: "UPDATE", group: "", resource, object, oldObject, ...(subresource ? { subresource } : {}) };
}

function refusal(run: () => unknown): { message: string; code: number; error: unknown } {
  try {
    run();
  } catch (error) {
    if (error instanceof QuotaExceededError || error instanceof QuotaConstraintError || error instanceof QuotaStatusUnknownError || error instanceof InvalidError) {
      return { message: error.message, code: error.code, error };
    }
    throw error;
  }
  assert.fail("the write was admitted");
}

describe("admitToQuotas: creates", () => {
  it("refuses the pod past the limit, naming the quota as kube-apiserver does (403)", () => {
    const full = quota("team-a", { pods: "5" }, { pods: "5" });
    const { message, code, error } = refusal(() => admitToQuotas(create(pod("web-6")), [full], now));
    assert.equal(message, 'pods "web-6" is forbidden: exceeded quota: team-a, requested: pods=1, used: pods=5, limited: pods=5');
    assert.equal(code, 403);
    assert.ok(error instanceof QuotaExceededError);
    assert.equal((error as QuotaExceededError).exceeded[0]?.quota, "team-a");
    assert.deepEqual((error as QuotaExceededError).toStatus().details, { group: "", kind: "pods", name: "web-6" });
  });

  it("admits a pod within the limit and returns the quota's new usage, other counters kept", () => {
    const q = quota("team-a", { pods: "5", "requests.cpu": "2", "requests.memory": "2Gi" }, { pods: "4", "requests.cpu": "1500m", "requests.memory": "1536Mi" });
    const charges = admitToQuotas(create(podRequesting("web-5", { cpu: "500m", memory: "512Mi" })), [q], now);
    assert.deepEqual(charges.map((c) => [c.quota.metadata.name, c.used]), [["team-a", { pods: "5", "requests.cpu": "2", "requests.memory": "2Gi" }]]);
  });

  it("names every exceeded resource of a quota, sorted", () => {
    const q = quota("compute", { pods: "5", "requests.cpu": "2", "limits.cpu": "8" }, { pods: "5", "requests.cpu": "1", "limits.cpu": "1" });
    assert.equal(
      refusal(() => admitToQuotas(create(podRequesting("p", { cpu: "1500m" }, { cpu: "2" })), [q], now)).message,
      'pods "p" is forbidden: exceeded quota: compute, requested: pods=1,requests.cpu=1500m, used: pods=5,requests.cpu=1, limited: pods=5,requests.cpu=2',
    );
  });

  it("names every exceeded quota", () => {
    const a = quota("count", { pods: "2" }, { pods: "2" });
    const b = quota("fine", { "count/pods": "10" }, { "count/pods": "3" });
    const c = quota("memory", { "requests.memory": "1Gi" }, { "requests.memory": "1Gi" });
    assert.equal(
      refusal(() => admitToQuotas(create(podRequesting("p", { memory: "1Mi" })), [a, b, c], now)).message,
      'pods "p" is forbidden: exceeded quota: count, requested: pods=1, used: pods=2, limited: pods=2; exceeded quota: memory, requested: requests.memory=1Mi, used: requests.memory=1Gi, limited: requests.memory=1Gi',
    );
  });

  it("charges every matching quota when none is exceeded", () => {
    const a = quota("count", { pods: "3" }, { pods: "2" });
    const b = quota("objects", { "count/pods": "10" }, { "count/pods": "3" });
    const other = quota("maps", { configmaps: "1" }, { configmaps: "1" });
    const charges = admitToQuotas(create(pod("p")), [a, b, other], now);
    assert.deepEqual(charges.map((c) => [c.quota.metadata.name, c.used]), [["count", { pods: "3" }], ["objects", { "count/pods": "4" }]]);
  });

  it("refuses a pod without requests under a requests.cpu quota, as Kubernetes does", () => {
    const q = quota("compute", { "requests.cpu": "4" }, { "requests.cpu": "0" });
    const { message, error } = refusal(() => admitToQuotas(create(pod("p")), [q], now));
    assert.equal(message, 'pods "p" is forbidden: failed quota: compute: must specify requests.cpu for: app');
    assert.ok(error instanceof QuotaConstraintError);
  });

  it("refuses while a quota's usage is unknown (its controller has not counted yet)", () => {
    const q = { metadata: { name: "fresh" }, spec: { hard: { pods: "5", "requests.cpu": "2" } }, status: { hard: { pods: "5", "requests.cpu": "2" } } };
    const { message, error } = refusal(() => admitToQuotas(create(podRequesting("p", { cpu: "1" })), [q], now));
    assert.equal(message, 'pods "p" is forbidden: status unknown for quota: fresh, resources: pods,requests.cpu');
    assert.ok(error instanceof QuotaStatusUnknownError);
  });

  it("does not enforce limits its controller has not taken up into status.hard yet", () => {
    const q = { metadata: { name: "new" }, spec: { hard: { pods: "0" } } };
    assert.deepEqual(admitToQuotas(create(pod("p")), [q], now), []);
  });

  it("leaves kinds a quota does not limit alone", () => {
    const pods = quota("pods", { pods: "0", "requests.cpu": "0" }, { pods: "0", "requests.cpu": "0" });
    assert.deepEqual(admitToQuotas(create({ kind: "ConfigMap", metadata: { name: "c" } }, "configmaps"), [pods], now), []);
  });

  it("counts configmaps and secrets by their plain and count/ names", () => {
    const q = quota("objects", { configmaps: "2", "count/secrets": "1" }, { configmaps: "2", "count/secrets": "0" });
    assert.equal(
      refusal(() => admitToQuotas(create({ kind: "ConfigMap", metadata: { name: "c" } }, "configmaps"), [q], now)).message,
      'configmaps "c" is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=2, limited: configmaps=2',
    );
    assert.deepEqual(admitToQuotas(create({ kind: "Secret", metadata: { name: "s" } }, "secrets"), [q], now)[0]?.used, { configmaps: "2", "count/secrets": "1" });
  });

  it("counts any kind as count/<resource>.<group>", () => {
    const q = quota("apps", { "count/deployments.apps": "2" }, { "count/deployments.apps": "2" });
    assert.equal(
      refusal(() => admitToQuotas(create({ kind: "Deployment", metadata: { name: "web" } }, "deployments", "apps"), [q], now)).message,
      'deployments.apps "web" is forbidden: exceeded quota: apps, requested: count/deployments.apps=1, used: count/deployments.apps=2, limited: count/deployments.apps=2',
    );
  });

  it("charges a terminal pod as an object only", () => {
    const q = quota("q", { pods: "1", "count/pods": "5" }, { pods: "1", "count/pods": "1" });
    const charges = admitToQuotas(create(pod("done", { phase: "Succeeded" })), [q], now);
    assert.deepEqual(charges[0]?.used, { "count/pods": "2", pods: "1" });
  });

  it("applies a scoped quota only to the pods in its scope", () => {
    const q = quota("best-effort", { pods: "1" }, { pods: "1" }, { scopes: ["BestEffort"] });
    assert.deepEqual(admitToQuotas(create(podRequesting("burstable", { cpu: "100m" })), [q], now), []);
    assert.match(refusal(() => admitToQuotas(create(pod("plain")), [q], now)).message, /exceeded quota: best-effort/);
  });

  it("names a pod made from generateName by its prefix, and one without either as Unknown", () => {
    const full = quota("q", { pods: "0" }, { pods: "0" });
    const generated = pod("");
    generated.metadata = { generateName: "web-" };
    assert.match(refusal(() => admitToQuotas(create(generated), [full], now)).message, /^pods "web-" is forbidden: /);
    const nameless = pod("");
    nameless.metadata = {};
    assert.match(refusal(() => admitToQuotas(create(nameless), [full], now)).message, /^pods "Unknown" is forbidden: /);
  });

  it("refuses a quantity it cannot read as invalid (422), naming the field", () => {
    const q = quota("q", { "requests.cpu": "4" }, { "requests.cpu": "0" });
    const { code, error } = refusal(() => admitToQuotas(create(podRequesting("p", { cpu: "lots" })), [q], now));
    assert.equal(code, 422);
    assert.deepEqual((error as InvalidError).fieldErrors.map((e) => e.field), ["spec.containers[0].resources.requests[cpu]"]);
  });
});

describe("admitToQuotas: updates", () => {
  const full = quota("q", { pods: "1", "requests.cpu": "1", services: "1", "services.loadbalancers": "0" }, { pods: "1", "requests.cpu": "1", services: "1", "services.loadbalancers": "0" });

  it("does not count a pod twice when an update does not change its requests", () => {
    const before = pod("p", { resourceVersion: "3", containers: [{ name: "app", requests: { cpu: "1" } }] });
    const after = structuredClone(before);
    (after.metadata as Record<string, unknown>).labels = { tier: "web" };
    assert.deepEqual(admitToQuotas(update(before, after), [full], now), []);
  });

  it("does not count a service twice when an update keeps its type", () => {
    const before = service("s", { type: "ClusterIP" }, "3");
    const after = service("s", { type: "ClusterIP", ports: [{ port: 80 }, { port: 443 }] }, "3");
    assert.deepEqual(admitToQuotas(update(before, after, "services"), [full], now), []);
  });

  it("charges what an update adds: a service turned into a load balancer", () => {
    const before = service("s", { type: "ClusterIP" }, "3");
    const after = service("s", { type: "LoadBalancer" }, "3");
    assert.equal(
      refusal(() => admitToQuotas(update(before, after, "services"), [full], now)).message,
      'services "s" is forbidden: exceeded quota: q, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0',
    );
  });

  it("charges a pod's growth, so an update cannot take it past its quota", () => {
    const q = quota("q", { "requests.cpu": "2" }, { "requests.cpu": "1500m" });
    const before = podRequesting("p", { cpu: "1" });
    before.metadata.resourceVersion = "3";
    const after = podRequesting("p", { cpu: "2" });
    assert.equal(
      refusal(() => admitToQuotas(update(before, after), [q], now)).message,
      'pods "p" is forbidden: exceeded quota: q, requested: requests.cpu=1, used: requests.cpu=1500m, limited: requests.cpu=2',
    );
    const smaller = podRequesting("p", { cpu: "500m" });
    assert.deepEqual(admitToQuotas(update(before, smaller), [q], now), []);
  });

  it("charges an update in full to a quota the old object was not in", () => {
    const q = quota("terminating", { pods: "2" }, { pods: "1" }, { scopes: ["Terminating"] });
    const before = pod("p", { resourceVersion: "3" });
    const after = pod("p", { resourceVersion: "3", spec: { activeDeadlineSeconds: 30 } });
    assert.deepEqual(admitToQuotas(update(before, after), [q], now)[0]?.used, { pods: "2" });
  });

  it("does not check a pod's older constraints on update", () => {
    const q = quota("compute", { "requests.cpu": "4" }, { "requests.cpu": "0" });
    const before = pod("p", { resourceVersion: "3" });
    const after = pod("p", { resourceVersion: "3", spec: { hostname: "x" } });
    assert.deepEqual(admitToQuotas(update(before, after), [q], now), []);
  });

  it("leaves configmap updates and pod status writes alone", () => {
    const q = quota("q", { configmaps: "0", pods: "0" }, { configmaps: "5", pods: "5" });
    assert.deepEqual(admitToQuotas(update({ metadata: { name: "c", resourceVersion: "1" } }, { metadata: { name: "c", resourceVersion: "1" } }, "configmaps"), [q], now), []);
    assert.deepEqual(admitToQuotas(update(pod("p", { resourceVersion: "1" }), pod("p", { resourceVersion: "1", phase: "Running" }), "pods", "status"), [q], now), []);
  });

  it("charges but never refuses a status write", () => {
    const q = quota("q", { services: "5", "services.loadbalancers": "0" }, { services: "1", "services.loadbalancers": "0" });
    const charges = admitToQuotas(update(service("s", { type: "ClusterIP" }, "2"), service("s", { type: "LoadBalancer" }, "2"), "services", "status"), [q], now);
    assert.deepEqual(charges[0]?.used, { services: "1", "services.loadbalancers": "1" });
  });
});
