import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { podConstraintViolation, podMatchesScope, podResources, podUsage } from "./pods.ts";
import { toRecord } from "./resource-list.ts";
import { pod, podRequesting } from "./testing.ts";

const now = new Date("2026-01-01T00:00:00Z");
const usageOf = (p: Parameters<typeof podUsage>[0]) => toRecord(podUsage(p, now));

describe("podUsage", () => {
  it("counts one pod and its requests and limits, cpu and memory also under their bare names", () => {
    assert.deepEqual(usageOf(podRequesting("p", { cpu: "500m", memory: "1Gi" }, { cpu: "1", memory: "2Gi" })), {
      "count/pods": "1",
      cpu: "500m",
      "limits.cpu": "1",
      "limits.memory": "2Gi",
      memory: "1Gi",
      pods: "1",
      "requests.cpu": "500m",
      "requests.memory": "1Gi",
    });
  });

  it("sums the containers", () => {
    const p = pod("p", { containers: [{ name: "a", requests: { cpu: "250m" } }, { name: "b", requests: { cpu: "1.5" } }] });
    assert.equal(usageOf(p)["requests.cpu"], "1750m");
  });

  it("takes an init container's peak when it is above the sum of the containers", () => {
    const p = pod("p", { containers: [{ name: "app", requests: { cpu: "500m" } }], initContainers: [{ name: "migrate", requests: { cpu: "2" } }] });
    assert.equal(usageOf(p)["requests.cpu"], "2");
    const small = pod("p", { containers: [{ name: "app", requests: { cpu: "500m" } }], initContainers: [{ name: "migrate", requests: { cpu: "100m" } }] });
    assert.equal(usageOf(small)["requests.cpu"], "500m");
  });

  it("adds sidecars (init containers that keep running) to the containers, and to the init containers after them", () => {
    const p = pod("p", {
      containers: [{ name: "app", requests: { cpu: "1" } }],
      initContainers: [
        { name: "proxy", restartPolicy: "Always", requests: { cpu: "200m" } },
        { name: "migrate", requests: { cpu: "1100m" } },
      ],
    });
    // running: app 1 + proxy 0.2 = 1.2; while migrating: proxy 0.2 + migrate 1.1 = 1.3
    assert.equal(usageOf(p)["requests.cpu"], "1300m");
  });

  it("adds the pod's overhead", () => {
    const p = pod("p", { containers: [{ name: "app", requests: { memory: "1Gi" } }], spec: { overhead: { memory: "512Mi" } } });
    assert.equal(usageOf(p)["requests.memory"], "1536Mi");
  });

  it("takes a limit without a request as the request, as the API server defaults a pod", () => {
    const usage = usageOf(pod("p", { containers: [{ name: "app", limits: { cpu: "2", memory: "1Gi" } }] }));
    assert.equal(usage["requests.cpu"], "2");
    assert.equal(usage["requests.memory"], "1Gi");
  });

  it("counts hugepages and extended resources as Kubernetes names them for quota", () => {
    const usage = usageOf(podRequesting("p", { "hugepages-2Mi": "4Mi", "nvidia.com/gpu": "1" }));
    assert.equal(usage["hugepages-2Mi"], "4Mi");
    assert.equal(usage["requests.hugepages-2Mi"], "4Mi");
    assert.equal(usage["requests.nvidia.com/gpu"], "1");
    assert.equal(usage["nvidia.com/gpu"], undefined);
  });

  for (const phase of ["Succeeded", "Failed"]) {
    it(`counts a ${phase} pod as an object only`, () => {
      assert.deepEqual(usageOf(pod("p", { phase, containers: [{ name: "app", requests: { cpu: "1" } }] })), { "count/pods": "1" });
    });
  }

  it("still counts a Running or Pending pod", () => {
    assert.equal(usageOf(pod("p", { phase: "Running" })).pods, "1");
    assert.equal(usageOf(pod("p", { phase: "Pending" })).pods, "1");
  });

  it("stops counting a pod stuck terminating past its grace period, not before", () => {
    const stuck = pod("p", { deletionTimestamp: "2025-12-31T23:58:00Z", deletionGracePeriodSeconds: 30 });
    assert.deepEqual(usageOf(stuck), { "count/pods": "1" });
    const leaving = pod("p", { deletionTimestamp: "2025-12-31T23:59:50Z", deletionGracePeriodSeconds: 30 });
    assert.equal(usageOf(leaving).pods, "1");
  });

  it("reports quantities it cannot read, naming the field", () => {
    const errors = podResources(pod("p", { containers: [{ name: "app", requests: { cpu: "lots" } }] })).errors;
    assert.deepEqual(errors.map((e) => e.field), ["spec.containers[0].resources.requests[cpu]"]);
  });
});

describe("podConstraintViolation", () => {
  it("asks every container to state each limited cpu and memory resource", () => {
    const p = pod("p", { containers: [{ name: "app", requests: { cpu: "1" } }, { name: "side" }] });
    assert.equal(podConstraintViolation(["pods", "requests.cpu", "limits.memory"], p), "must specify limits.memory for: app,side; requests.cpu for: side");
  });

  it("asks init containers too", () => {
    const p = pod("p", { containers: [{ name: "app", requests: { cpu: "1" } }], initContainers: [{ name: "init" }] });
    assert.equal(podConstraintViolation(["requests.cpu"], p), "must specify requests.cpu for: init");
  });

  it("takes a limit as the request, and a request as cpu", () => {
    assert.equal(podConstraintViolation(["requests.cpu", "cpu"], pod("p", { containers: [{ name: "app", limits: { cpu: "1" } }] })), undefined);
  });

  it("asks nothing for quotas on counts or other resources", () => {
    assert.equal(podConstraintViolation(["pods", "count/pods", "requests.ephemeral-storage"], pod("p")), undefined);
  });
});

describe("podMatchesScope", () => {
  const bestEffort = pod("p");
  const burstable = podRequesting("p", { cpu: "100m" });
  const terminating = pod("p", { spec: { activeDeadlineSeconds: 60 } });
  const high = pod("p", { spec: { priorityClassName: "high" } });
  const crossNamespace = pod("p", { spec: { affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, podAffinityTerm: { namespaces: ["other"], topologyKey: "k" } }] } } } });
  const cases: [string, Parameters<typeof podMatchesScope>[0], Parameters<typeof podMatchesScope>[1], boolean][] = [
    ["BestEffort: no cpu or memory anywhere", { scopeName: "BestEffort", operator: "Exists" }, bestEffort, true],
    ["BestEffort: a cpu request", { scopeName: "BestEffort", operator: "Exists" }, burstable, false],
    ["NotBestEffort", { scopeName: "NotBestEffort", operator: "Exists" }, burstable, true],
    ["Terminating: an active deadline", { scopeName: "Terminating", operator: "Exists" }, terminating, true],
    ["Terminating: none", { scopeName: "Terminating", operator: "Exists" }, bestEffort, false],
    ["NotTerminating", { scopeName: "NotTerminating", operator: "Exists" }, bestEffort, true],
    ["PriorityClass In", { scopeName: "PriorityClass", operator: "In", values: ["high", "critical"] }, high, true],
    ["PriorityClass In, another class", { scopeName: "PriorityClass", operator: "In", values: ["low"] }, high, false],
    ["PriorityClass In, no class", { scopeName: "PriorityClass", operator: "In", values: ["low"] }, bestEffort, false],
    ["PriorityClass NotIn, no class", { scopeName: "PriorityClass", operator: "NotIn", values: ["high"] }, bestEffort, true],
    ["PriorityClass NotIn", { scopeName: "PriorityClass", operator: "NotIn", values: ["high"] }, high, false],
    ["PriorityClass Exists", { scopeName: "PriorityClass", operator: "Exists" }, high, true],
    ["PriorityClass DoesNotExist", { scopeName: "PriorityClass", operator: "DoesNotExist" }, bestEffort, true],
    ["CrossNamespacePodAffinity: namespaces in a weighted anti-affinity term", { scopeName: "CrossNamespacePodAffinity", operator: "Exists" }, crossNamespace, true],
    ["CrossNamespacePodAffinity: none", { scopeName: "CrossNamespacePodAffinity", operator: "Exists" }, bestEffort, false],
    ["an unknown scope", { scopeName: "Nightly", operator: "Exists" }, bestEffort, false],
  ];
  for (const [name, requirement, p, expected] of cases) {
    it(`${name}: ${expected}`, () => assert.equal(podMatchesScope(requirement, p), expected));
  }
});
