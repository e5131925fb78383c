import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PROFILES, profileNamed, type DelayRange, type LatencyProfile } from "./profiles.ts";

/**
 * Bounds of the critical path of the quickstart cluster as Slipway builds it: network, subnet and the
 * load balancer; then the first control-plane machine boots and runs kubeadm init; each further
 * control-plane machine boots and joins once the one before is Ready (a node turns Ready half a join
 * after the network plugin). Workers boot beside the control plane and are never on this path.
 */
function clusterCriticalPath(p: LatencyProfile): DelayRange {
  const bound = (pick: (r: DelayRange) => number) => {
    const cni = pick(p.kubeadmJoin) / 2;
    const infra = pick(p.networkCreate) + pick(p.subnetCreate) + Math.max(pick(p.securityGroupCreate), pick(p.loadBalancerProvision));
    return infra + pick(p.instanceBoot) + pick(p.kubeadmInit) + cni + 2 * (pick(p.instanceBoot) + pick(p.kubeadmJoin) + cni);
  };
  return [bound((r) => r[0]), bound((r) => r[1])];
}

describe("latency profiles", () => {
  it("bring a demo cluster up in roughly 20–40 s, leaving room for the controllers' own work", () => {
    const [min, max] = clusterCriticalPath(PROFILES.demo);
    // npm start measured 32–36 s on a 2-core machine, inside these bounds.
    assert.ok(min >= 15_000 && max <= 42_000, `demo critical path ${min}–${max} ms`);
  });

  it("keep realistic figures in the range public clouds show, and fast ones under a second per step", () => {
    const realistic = PROFILES.realistic;
    assert.deepEqual(realistic.instanceBoot, [40_000, 60_000]);
    assert.deepEqual(realistic.loadBalancerProvision, [60_000, 90_000]);
    const [min] = clusterCriticalPath(realistic);
    assert.ok(min >= 120_000, "a realistic cluster takes minutes");
    for (const [name, value] of Object.entries(PROFILES.fast)) {
      if (Array.isArray(value)) assert.ok(value[1] < 1000, `fast ${name} is sub-second`);
    }
    for (const [name, value] of Object.entries(PROFILES.instant)) {
      if (Array.isArray(value)) assert.deepEqual(value, [0, 0], `instant ${name} has no delay`);
    }
  });

  it("name every profile and refuse unknown ones", () => {
    assert.deepEqual(Object.keys(PROFILES), ["instant", "fast", "demo", "realistic"]);
    for (const profile of Object.values(PROFILES)) {
      for (const value of Object.values(profile)) if (Array.isArray(value)) assert.ok(value[0] <= value[1]);
    }
    assert.throws(() => profileNamed("ludicrous"), /unknown latency profile "ludicrous"/);
  });
});
