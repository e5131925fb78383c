import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ConnectionObject, InfrastructureObject } from "../../api/kinds.ts";
import type { ResourceInfo } from "../../providers/provider.ts";
import { ConfirmedResources } from "./confirmed.ts";

function infra(resourceVersion: string, uid = "uid-1"): InfrastructureObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Infrastructure",
    metadata: { name: "demo-east", namespace: "default", uid, resourceVersion },
    spec: { clusterName: "demo", connection: "east", region: "sim-east-1", nodeCIDR: "10.0.0.0/20" },
  };
}

function connection(resourceVersion: string): ConnectionObject {
  return { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: "east", namespace: "default", resourceVersion }, spec: { provider: "sim", region: "sim-east-1" } } as ConnectionObject;
}

const network = (state: ResourceInfo["state"]): ResourceInfo => ({ id: "vpc-1", kind: "network", state, cloudState: state === "ready" ? "available" : "pending", tags: {} });

describe("ConfirmedResources", () => {
  it("serves a resource seen ready to the next reconcile of the same versions, within its time", () => {
    const confirmed = new ConfirmedResources(60_000);
    confirmed.of(infra("10"), connection("3"), 1_000).saw("network", network("ready"));
    assert.equal(confirmed.of(infra("10"), connection("3"), 60_999).ready("network", "vpc-1")?.id, "vpc-1");
    assert.equal(confirmed.of(infra("10"), connection("3"), 61_000).ready("network", "vpc-1"), undefined, "past its time the cloud is asked");
    assert.equal(confirmed.of(infra("10"), connection("3"), 2_000).ready("network", "vpc-1"), undefined, "an expired sighting is forgotten");
  });

  it("serves nothing once the Infrastructure or its Connection changed", () => {
    const confirmed = new ConfirmedResources(60_000);
    confirmed.of(infra("10"), connection("3"), 0).saw("network", network("ready"));
    assert.equal(confirmed.of(infra("11"), connection("3"), 1).ready("network", "vpc-1"), undefined, "another version of the Infrastructure");
    confirmed.of(infra("11"), connection("3"), 1).saw("network", network("ready"));
    assert.equal(confirmed.of(infra("11"), connection("4"), 2).ready("network", "vpc-1"), undefined, "another version of its Connection");
    confirmed.of(infra("11"), connection("4"), 2).saw("network", network("ready"));
    assert.equal(confirmed.of(infra("11"), undefined, 3).ready("network", "vpc-1"), undefined, "its Connection gone");
  });

  it("holds what a reconcile saw for the version its status write made", () => {
    const confirmed = new ConfirmedResources(60_000);
    confirmed.of(infra("10"), connection("3"), 0).saw("network", network("ready"));
    confirmed.written(infra("10"), infra("12"));
    assert.equal(confirmed.of(infra("12"), connection("3"), 1).ready("network", "vpc-1")?.id, "vpc-1");
    // A write by a reconcile that read an older version says nothing about what was seen since.
    confirmed.written(infra("10"), infra("13"));
    assert.equal(confirmed.of(infra("12"), connection("3"), 2).ready("network", "vpc-1")?.id, "vpc-1");
  });

  it("forgets a resource seen not ready, and everything of an Infrastructure being deleted", () => {
    const confirmed = new ConfirmedResources(60_000);
    const sightings = confirmed.of(infra("10"), connection("3"), 0);
    sightings.saw("network", network("ready"));
    sightings.saw("network", network("pending"));
    assert.equal(confirmed.of(infra("10"), connection("3"), 1).ready("network", "vpc-1"), undefined);
    confirmed.of(infra("10"), connection("3"), 2).saw("network", network("ready"));
    confirmed.forget(infra("10"));
    assert.equal(confirmed.of(infra("10"), connection("3"), 3).ready("network", "vpc-1"), undefined);
  });

  it("remembers nothing with no time to keep it", () => {
    const confirmed = new ConfirmedResources(0);
    confirmed.of(infra("10"), connection("3"), 0).saw("network", network("ready"));
    assert.equal(confirmed.of(infra("10"), connection("3"), 0).ready("network", "vpc-1"), undefined);
  });
});
