import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { countedKind, evaluatorFor } from "./evaluators.ts";
import { toRecord } from "./resource-list.ts";
import { claim, service } from "./testing.ts";

const now = new Date("2026-01-01T00:00:00Z");
const services = evaluatorFor({ group: "", resource: "services" });
const claims = evaluatorFor({ group: "", resource: "persistentvolumeclaims" });

describe("service usage", () => {
  const cases: [string, Record<string, unknown>, Record<string, string>][] = [
    ["a ClusterIP service", { type: "ClusterIP" }, { "count/services": "1", services: "1", "services.loadbalancers": "0", "services.nodeports": "0" }],
    ["a NodePort service takes a node port per port", { type: "NodePort", ports: [{ port: 80 }, { port: 443 }] }, { "count/services": "1", services: "1", "services.loadbalancers": "0", "services.nodeports": "2" }],
    ["a LoadBalancer takes a load balancer and node ports", { type: "LoadBalancer", ports: [{ port: 80 }] }, { "count/services": "1", services: "1", "services.loadbalancers": "1", "services.nodeports": "1" }],
    [
      "a LoadBalancer without node port allocation takes only the node ports it names",
      { type: "LoadBalancer", allocateLoadBalancerNodePorts: false, ports: [{ port: 80, nodePort: 30080 }, { port: 443 }] },
      { "count/services": "1", services: "1", "services.loadbalancers": "1", "services.nodeports": "1" },
    ],
  ];
  for (const [name, spec, expected] of cases) {
    it(name, () => assert.deepEqual(toRecord(services.usage(service("s", spec), now)), expected));
  }
});

describe("persistent volume claim usage", () => {
  it("counts the claim and its storage, also under its storage class", () => {
    assert.deepEqual(toRecord(claims.usage(claim("data", "10Gi", "gold"), now)), {
      "count/persistentvolumeclaims": "1",
      "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
      "gold.storageclass.storage.k8s.io/requests.storage": "10Gi",
      persistentvolumeclaims: "1",
      "requests.storage": "10Gi",
    });
  });

  it("rounds storage up to whole bytes, and takes what was allocated if more", () => {
    assert.equal(toRecord(claims.usage(claim("data", "1500m"), now))["requests.storage"], "2");
    const resized = claim("data", "1Gi");
    resized.status = { allocatedResources: { storage: "2Gi" } };
    assert.equal(toRecord(claims.usage(resized, now))["requests.storage"], "2Gi");
  });

  it("takes the storage class from the beta annotation first", () => {
    const annotated = claim("data", "1Gi", "gold");
    annotated.metadata.annotations = { "volume.beta.kubernetes.io/storage-class": "silver" };
    assert.ok(toRecord(claims.usage(annotated, now))["silver.storageclass.storage.k8s.io/requests.storage"]);
  });
});

describe("which writes can change usage", () => {
  const cases: [string, string, "CREATE" | "UPDATE", string, boolean][] = [
    ["", "pods", "CREATE", "", true],
    ["", "pods", "UPDATE", "", true],
    ["", "pods", "UPDATE", "resize", true],
    ["", "pods", "UPDATE", "status", false],
    ["", "services", "UPDATE", "", true],
    ["", "persistentvolumeclaims", "UPDATE", "", true],
    ["", "configmaps", "CREATE", "", true],
    ["", "configmaps", "UPDATE", "", false],
    ["apps", "deployments", "CREATE", "", true],
    ["apps", "deployments", "UPDATE", "", false],
  ];
  for (const [group, resource, operation, subresource, handled] of cases) {
    it(`${operation} ${resource}${subresource ? `/${subresource}` : ""}: ${handled}`, () => {
      assert.equal(evaluatorFor({ group, resource }).handles(operation, subresource), handled);
    });
  }
});

describe("countedKind", () => {
  const cases: [string, { group: string; resource: string } | undefined][] = [
    ["pods", { group: "", resource: "pods" }],
    ["requests.cpu", { group: "", resource: "pods" }],
    ["memory", { group: "", resource: "pods" }],
    ["requests.nvidia.com/gpu", { group: "", resource: "pods" }],
    ["hugepages-2Mi", { group: "", resource: "pods" }],
    ["count/pods", { group: "", resource: "pods" }],
    ["services.nodeports", { group: "", resource: "services" }],
    ["requests.storage", { group: "", resource: "persistentvolumeclaims" }],
    ["gold.storageclass.storage.k8s.io/persistentvolumeclaims", { group: "", resource: "persistentvolumeclaims" }],
    ["secrets", { group: "", resource: "secrets" }],
    ["count/deployments.apps", { group: "apps", resource: "deployments" }],
    ["count/clusters.slipway.dev", { group: "slipway.dev", resource: "clusters" }],
    ["storage", undefined],
  ];
  for (const [name, kind] of cases) {
    it(`${name} → ${kind ? `${kind.resource}${kind.group ? "." + kind.group : ""}` : "nothing"}`, () => assert.deepEqual(countedKind(name), kind));
  }
});
