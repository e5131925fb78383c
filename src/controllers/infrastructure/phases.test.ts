import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { InfrastructureObject } from "../../api/kinds.ts";
import { getCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { ProviderResolver } from "../providers.ts";
import { nodeFirewallRules, openConnection, subnetCidr, zonesToUse, type InfrastructureScope } from "./phases.ts";

describe("subnetCidr", () => {
  it("takes the first half of the node range", () => {
    assert.equal(subnetCidr("10.0.0.0/20"), "10.0.0.0/21");
    assert.equal(subnetCidr("10.0.16.0/20"), "10.0.16.0/21");
    assert.equal(subnetCidr("192.168.0.0/16"), "192.168.0.0/17");
  });

  it("keeps a range the cloud cannot split further", () => {
    assert.equal(subnetCidr("10.0.0.16/28"), "10.0.0.16/28");
  });

  it("gives the second and third zones the last two quarters, apart from the first zone's half", () => {
    assert.equal(subnetCidr("10.0.0.0/20", 1), "10.0.8.0/22");
    assert.equal(subnetCidr("10.0.0.0/20", 2), "10.0.12.0/22");
    assert.equal(subnetCidr("10.0.0.0/26", 2), "10.0.0.48/28");
    assert.throws(() => subnetCidr("10.0.0.0/20", 3), /zone 4/);
    assert.throws(() => subnetCidr("10.0.0.0/27", 1), /zone 2 in 10.0.0.0\/27/);
  });
});

describe("zonesToUse", () => {
  const region = ["r-1a", "r-1b", "r-1c", "r-1d"];
  it("uses up to three zones of the region, in its order", () => {
    assert.deepEqual(zonesToUse([], region, "10.0.0.0/16"), ["r-1a", "r-1b", "r-1c"]);
    assert.deepEqual(zonesToUse([], ["r-1a"], "10.0.0.0/16"), ["r-1a"]);
  });

  it("keeps the zones already used first, and adds zones to an infrastructure that had one", () => {
    assert.deepEqual(zonesToUse(["r-1c"], region, "10.0.0.0/16"), ["r-1c", "r-1a", "r-1b"]);
    assert.deepEqual(zonesToUse(["r-1b", "r-1d", "r-1a"], region, "10.0.0.0/16"), ["r-1b", "r-1d", "r-1a"]);
  });

  it("keeps one zone when the node range is too small to split in quarters", () => {
    assert.deepEqual(zonesToUse([], region, "10.0.0.0/27"), ["r-1a"]);
  });
});

describe("nodeFirewallRules", () => {
  it("opens the API and SSH to everyone, everything between nodes, and everything out", () => {
    assert.deepEqual(nodeFirewallRules("10.0.0.0/20"), [
      { direction: "ingress", protocol: "tcp", fromPort: 6443, toPort: 6443, cidr: "0.0.0.0/0" },
      { direction: "ingress", protocol: "tcp", fromPort: 22, toPort: 22, cidr: "0.0.0.0/0" },
      { direction: "ingress", protocol: "all", cidr: "10.0.0.0/20" },
      { direction: "egress", protocol: "all", cidr: "0.0.0.0/0" },
    ]);
  });
});

describe("openConnection", () => {
  const context = { clock: { now: () => Date.parse("2025-01-01T00:00:00Z"), setTimer: () => () => {} } } as unknown as ReconcileContext;
  const settings = { deadlineMs: 1, loadBalancerDeadlineMs: 1, pollMs: 1, failureRetryMs: 30_000, dependencyRetryMs: 1 };

  function scopeOf(owners: InfrastructureObject["metadata"]["ownerReferences"]): InfrastructureScope {
    const infra: InfrastructureObject = {
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Infrastructure",
      metadata: { name: "demo-east", namespace: "default", uid: "uid-infra", ownerReferences: owners },
      spec: { clusterName: "demo", connection: "east", region: "sim-east-1", nodeCIDR: "10.0.0.0/20" },
    };
    return { original: infra, object: infra, settings, providers: {} as ProviderResolver, notices: [] };
  }

  it("fails validation, and retries later, without an owning Cluster", async () => {
    const scope = scopeOf(undefined);
    assert.deepEqual(await openConnection(context, scope), { halt: true, requeueAfterMs: 30_000 });
    const condition = getCondition(scope.object.status?.conditions, "CatalogResolved");
    assert.equal(condition?.reason, "ValidationFailed");
    assert.match(condition?.message ?? "", /no owning Cluster/);
  });

  it("fails validation when its connection does not exist", async () => {
    const scope = scopeOf([{ apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "demo", uid: "uid-demo", controller: true }]);
    assert.equal((await openConnection(context, scope))?.halt, true);
    assert.equal(scope.cluster?.uid, "uid-demo");
    assert.match(getCondition(scope.object.status?.conditions, "CatalogResolved")?.message ?? "", /connection "east" does not exist in namespace default/);
  });
});
