import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { admitToQuotas } from "./admission.ts";
import type { QuotaCountedObject } from "./evaluators.ts";
import type { ResourceQuotaLike } from "./quota-object.ts";
import { computeQuotaStatus, trackedKinds, type NamespaceObjects } from "./status.ts";
import { claim, pod, podRequesting, service } from "./testing.ts";

const now = new Date("2026-01-01T00:00:00Z");

function quotaSpec(hard: Record<string, string>, extra: Record<string, unknown> = {}): ResourceQuotaLike {
  return { metadata: { name: "team-a", namespace: "team-a", resourceVersion: "1" }, spec: { hard, ...extra } };
}

function namespace(objects: Record<string, QuotaCountedObject[]>): NamespaceObjects {
  return ({ group, resource }) => objects[group ? `${resource}.${group}` : resource];
}

describe("computeQuotaStatus", () => {
  it("counts the namespace's pods that are not terminal, and all of them as objects", () => {
    const status = computeQuotaStatus(
      quotaSpec({ pods: "5", "count/pods": "10" }),
      namespace({ pods: [pod("a", { phase: "Running" }), pod("b", { phase: "Succeeded" }), pod("c", { phase: "Failed" }), pod("d", { phase: "Pending" })] }),
      now,
    );
    assert.deepEqual(status, { hard: { "count/pods": "10", pods: "5" }, used: { "count/pods": "4", pods: "2" } });
  });

  it("sums requests and limits, in canonical form", () => {
    const status = computeQuotaStatus(
      quotaSpec({ "requests.cpu": "4", "requests.memory": "8Gi", "limits.memory": "16Gi", cpu: "4" }),
      namespace({ pods: [podRequesting("a", { cpu: "500m", memory: "1Gi" }, { memory: "2Gi" }), podRequesting("b", { cpu: "1", memory: "512Mi" }, { memory: "1Gi" })] }),
      now,
    );
    assert.deepEqual(status.used, { cpu: "1500m", "limits.memory": "3Gi", "requests.cpu": "1500m", "requests.memory": "1536Mi" });
  });

  it("reports zero for every limited resource nothing uses yet, so admission can count from it", () => {
    assert.deepEqual(computeQuotaStatus(quotaSpec({ pods: "5", secrets: "3", "requests.cpu": "2" }), namespace({ pods: [], secrets: [] }), now).used, {
      pods: "0",
      "requests.cpu": "0",
      secrets: "0",
    });
  });

  it("writes the spec's limits as status.hard in canonical form", () => {
    assert.deepEqual(computeQuotaStatus(quotaSpec({ pods: "1000", "requests.cpu": "1.5", "requests.memory": "1024Mi" }), namespace({ pods: [] }), now).hard, {
      pods: "1k",
      "requests.cpu": "1500m",
      "requests.memory": "1Gi",
    });
  });

  it("leaves out the usage of kinds this server does not serve", () => {
    const status = computeQuotaStatus(quotaSpec({ pods: "5", "count/widgets.example.com": "1" }), namespace({ pods: [pod("a")] }), now);
    assert.deepEqual(status.used, { pods: "1" });
    assert.deepEqual(status.hard, { "count/widgets.example.com": "1", pods: "5" });
  });

  it("counts only the pods in a scoped quota's scope", () => {
    const status = computeQuotaStatus(quotaSpec({ pods: "5" }, { scopes: ["BestEffort"] }), namespace({ pods: [pod("plain"), podRequesting("burstable", { cpu: "1" })] }), now);
    assert.deepEqual(status.used, { pods: "1" });
  });

  it("counts services, their load balancers and node ports, and claims with their storage", () => {
    const status = computeQuotaStatus(
      quotaSpec({ services: "10", "services.loadbalancers": "2", "services.nodeports": "5", persistentvolumeclaims: "5", "requests.storage": "100Gi", "gold.storageclass.storage.k8s.io/requests.storage": "20Gi" }),
      namespace({
        services: [service("a", { type: "LoadBalancer", ports: [{ port: 80 }, { port: 443 }] }), service("b", { type: "ClusterIP" })],
        persistentvolumeclaims: [claim("data", "10Gi", "gold"), claim("logs", "5Gi")],
      }),
      now,
    );
    assert.deepEqual(status.used, {
      "gold.storageclass.storage.k8s.io/requests.storage": "10Gi",
      persistentvolumeclaims: "2",
      "requests.storage": "15Gi",
      services: "2",
      "services.loadbalancers": "1",
      "services.nodeports": "2",
    });
  });

  it("is what admission enforces: a quota of 5 pods with one failed pod takes one more, then no more", () => {
    const pods = [pod("a"), pod("b"), pod("c"), pod("d"), pod("gone", { phase: "Failed" })];
    const q = quotaSpec({ pods: "5" });
    q.status = computeQuotaStatus(q, namespace({ pods }), now);
    const charges = admitToQuotas({ operation: "CREATE", group: "", resource: "pods", object: pod("e") }, [q], now);
    assert.deepEqual(charges[0]?.used, { pods: "5" });
    q.status = computeQuotaStatus(q, namespace({ pods: [...pods, pod("e")] }), now);
    assert.throws(() => admitToQuotas({ operation: "CREATE", group: "", resource: "pods", object: pod("f") }, [q], now), {
      message: 'pods "f" is forbidden: exceeded quota: team-a, requested: pods=1, used: pods=5, limited: pods=5',
    });
  });
});

describe("trackedKinds", () => {
  it("names each kind a quota's limits count, once", () => {
    assert.deepEqual(
      trackedKinds(quotaSpec({ pods: "1", "requests.cpu": "1", configmaps: "1", "count/deployments.apps": "1", "services.loadbalancers": "1", "requests.storage": "1Gi", "count/pods": "1" })),
      [
        { group: "", resource: "configmaps" },
        { group: "apps", resource: "deployments" },
        { group: "", resource: "pods" },
        { group: "", resource: "persistentvolumeclaims" },
        { group: "", resource: "services" },
      ],
    );
  });
});
