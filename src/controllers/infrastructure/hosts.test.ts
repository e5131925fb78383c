// An Infrastructure in a connection of hosts: nothing is made but the control-plane endpoint's reservation,
// which the Infrastructure's status then names as its load balancer; a refused reservation says why and
// is tried again; a host is reserved once, not again after its machine released it; deleting gives the
// reservation back under the same token.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ConnectionObject, InfrastructureObject } from "../../api/kinds.ts";
import { ProviderError, type ControlPlaneEndpoints, type CreateOptions, type EndpointMember, type Provider } from "../../providers/provider.ts";
import { getCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { ProviderResolver } from "../providers.ts";
import { openConnection, openConnectionForDelete, type InfrastructureScope } from "./phases.ts";
import { summarizeInfrastructure } from "./status.ts";

const context = { clock: { now: () => Date.parse("2025-01-01T00:00:00Z"), setTimer: () => () => {} } } as unknown as ReconcileContext;
const settings = { deadlineMs: 1, loadBalancerDeadlineMs: 1, pollMs: 1, failureRetryMs: 30_000, dependencyRetryMs: 1 };

class FakeEndpoints implements ControlPlaneEndpoints {
  reserved: CreateOptions[] = [];
  released: [string, string][] = [];
  refuse?: ProviderError;
  async reserve(options: CreateOptions) {
    if (this.refuse) throw this.refuse;
    this.reserved.push(options);
    return { id: "h1", host: "10.0.0.1", port: 8443 };
  }
  async setMembers(_id: string, _members: EndpointMember[]) {}
  async release(id: string, token: string) {
    this.released.push([id, token]);
  }
}

function scopeOf(endpoints: FakeEndpoints, controlPlane: boolean): InfrastructureScope {
  const infra: InfrastructureObject = {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Infrastructure",
    metadata: { name: "onprem-rack", namespace: "default", uid: "uid-infra", generation: 1, ownerReferences: [{ apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", name: "onprem", uid: "uid-onprem", controller: true }] },
    spec: { clusterName: "onprem", connection: "rack", region: "rack-1", nodeCIDR: "10.0.0.0/20", ...(controlPlane ? { controlPlane: true } : {}) },
  };
  const connection = { apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: "rack", namespace: "default" }, spec: { provider: "ssh", region: "rack-1" } } as ConnectionObject;
  const provider: Provider = { provider: "ssh", region: "rack-1", capabilities: { machines: {} as never }, endpoints };
  const providers = { open: async () => provider } as unknown as ProviderResolver;
  return { original: infra, object: infra, settings, providers, connection, notices: [] };
}

describe("an Infrastructure on hosts", () => {
  it("makes nothing, reserves a host for the endpoint and is Ready with it as the load balancer", async () => {
    const endpoints = new FakeEndpoints();
    const scope = scopeOf(endpoints, true);
    assert.deepEqual(await openConnection(context, scope), { halt: true });
    summarizeInfrastructure(context, scope, undefined);
    const status = scope.object.status!;
    assert.equal(status.phase, "Ready");
    assert.deepEqual(status.loadBalancer, { id: "h1", host: "10.0.0.1", port: 8443, url: "https://10.0.0.1:8443" });
    assert.deepEqual(status.zones, ["rack-1"]);
    assert.equal(getCondition(status.conditions, "NetworkReady")?.reason, "NotNeeded");
    assert.equal(endpoints.reserved[0]?.token, "uid-infra/endpoint");
    assert.equal(endpoints.reserved[0]?.tags["slipway.dev/cluster"], "default/onprem");

    assert.equal(await openConnectionForDelete(context, { ...scope, object: structuredClone(scope.object) }), undefined);
    assert.deepEqual(endpoints.released, [["h1", "uid-infra/endpoint"]], "deleting gives the reservation back under its token");
  });

  it("reserves a host once: the endpoint's host released by its machine is not replaced by another", async () => {
    const endpoints = new FakeEndpoints();
    const scope = scopeOf(endpoints, true);
    await openConnection(context, scope);
    assert.equal(endpoints.reserved.length, 1);
    // The control-plane machine took h1 and released it (its cluster is being deleted); another host is free.
    assert.deepEqual(await openConnection(context, scope), { halt: true });
    assert.equal(endpoints.reserved.length, 1, "no second reservation");
    assert.deepEqual(scope.object.status?.loadBalancer?.id, "h1", "the endpoint it had stays recorded for the release");
  });

  it("reserves nothing in a workers' connection", async () => {
    const endpoints = new FakeEndpoints();
    const scope = scopeOf(endpoints, false);
    await openConnection(context, scope);
    summarizeInfrastructure(context, scope, undefined);
    assert.equal(scope.object.status?.phase, "Ready");
    assert.equal(scope.object.status?.loadBalancer, undefined);
    assert.deepEqual(endpoints.reserved, []);
  });

  it("says why no host could be reserved, and tries again later", async () => {
    const endpoints = new FakeEndpoints();
    endpoints.refuse = new ProviderError("capacity", "claim a host: no free reachable host in default/rack (h1: used by cluster other)");
    const scope = scopeOf(endpoints, true);
    assert.deepEqual(await openConnection(context, scope), { halt: true, requeueAfterMs: 30_000 });
    summarizeInfrastructure(context, scope, undefined);
    assert.equal(scope.object.status?.phase, "Failed");
    assert.equal(scope.object.status?.reason, "CreateLoadBalancerFailed");
    assert.match(scope.object.status?.message ?? "", /reserving a host for the control-plane endpoint: claim a host: no free reachable host .*h1: used by cluster other/);
  });
});
