import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { estimateBuild, longestChain } from "./estimate.ts";

const durations = {
  networkCreate: 2000,
  subnetCreate: 2000,
  securityGroupCreate: 1000,
  loadBalancerProvision: 75_000,
  targetHealthy: 30_000,
  instanceBoot: 50_000,
  kubeadmInit: 30_000,
  kubeadmJoin: 15_000,
};

describe("expected time over the physical critical path", () => {
  it("starts every machine once its network exists, and inits when the load balancer routes", () => {
    const result = estimateBuild({
      connections: new Map([["east", { durations, built: false }]]),
      controlPlaneConnection: "east",
      controlPlane: [0, 1, 2].map((i) => ({ name: `cp-${i}`, connection: "east", exists: false })),
      workers: [{ name: "w-0", connection: "east", exists: false }],
    });
    // network 2 + subnet 2, then boot (50), init (30) and the target's health checks (30) decide init's end
    // (114), not the load balancer (4 + 75 = 79); then two serial joins of 15, cp-1 and cp-2 booted meanwhile.
    assert.equal(result.totalMs, 4000 + 50_000 + 30_000 + 30_000 + 2 * 15_000);
    assert.deepEqual(
      result.path.map((s) => s.label),
      ["network east", "subnet east", "boot cp-0", "kubeadm init cp-0", "load balancer routes to cp-0", "join cp-1", "join cp-2"],
    );
  });

  it("boots a scale set's workers while the control plane comes up, as single ones", () => {
    const result = estimateBuild({
      connections: new Map([["east", { durations, built: false }]]),
      controlPlaneConnection: "east",
      controlPlane: [0, 1, 2].map((i) => ({ name: `cp-${i}`, connection: "east", exists: false })),
      workers: [
        { name: "pool-(new-1)", connection: "east", exists: false, scaleSet: true },
        { name: "w-0", connection: "east", exists: false },
      ],
    });
    // The instance boots from 4 s, beside cp-0, and joins once initialised at 114 s: the two control-plane
    // joins decide the end, not a boot after init (114 + 50 + 15).
    assert.equal(result.totalMs, 4000 + 50_000 + 30_000 + 30_000 + 2 * 15_000);
    assert.deepEqual(result.path.slice(-2).map((s) => s.label), ["join cp-1", "join cp-2"]);
  });

  it("counts nothing for what exists: a scale-up is a boot and a join", () => {
    const result = estimateBuild({
      connections: new Map([["east", { durations, built: true }]]),
      controlPlaneConnection: "east",
      controlPlane: [{ name: "cp-0", connection: "east", exists: true }],
      workers: [
        { name: "w-0", connection: "east", exists: true },
        { name: "w-1", connection: "east", exists: false },
      ],
    });
    assert.equal(result.totalMs, 50_000 + 15_000);
  });

  it("refuses a cycle", () => {
    assert.throws(() => longestChain([{ id: "a", label: "a", durationMs: 1, after: ["b"] }, { id: "b", label: "b", durationMs: 1, after: ["a"] }], "a"), /cycle/);
  });
});
