// Control-plane machines on hosts join the endpoint's members (haproxy on the reserved host) as soon as
// their host is known, once; leaving sends the members that remain; workers and machines of a cloud with
// load balancers are left alone.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, InfrastructureObject, MachineObject } from "../../api/kinds.ts";
import type { ControlPlaneEndpoints, EndpointMember, Provider } from "../../providers/provider.ts";
import { getCondition } from "../../runtime/conditions.ts";
import type { ReconcileContext } from "../../runtime/controller.ts";
import type { ProviderResolver } from "../providers.ts";
import { leaveHostEndpoint, serveHostEndpoint } from "./endpoint.ts";
import type { MachineScope } from "./phases.ts";

function machine(name: string, role: "control-plane" | "worker", address?: string): MachineObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: { name, namespace: "default", uid: `uid-${name}` },
    spec: { clusterName: "onprem", connection: "rack", role, machineType: "host" },
    ...(address ? { status: { instanceId: `host-${name}`, addresses: [{ type: "InternalIP", address }] } } : {}),
  } as MachineObject;
}

class FakeEndpoints implements ControlPlaneEndpoints {
  calls: [string, EndpointMember[]][] = [];
  async reserve() {
    return { id: "host-cp-0", host: "10.0.0.10", port: 8443 };
  }
  async setMembers(id: string, members: EndpointMember[]) {
    this.calls.push([id, members]);
  }
  async release() {}
}

function setup(object: MachineObject, others: MachineObject[], options: { clusterInfrastructure?: boolean } = {}) {
  const endpoints = new FakeEndpoints();
  const events: string[] = [];
  const ctx = {
    clock: { now: () => Date.parse("2025-01-01T00:00:00Z") },
    client: { of: () => ({ list: async () => ({ items: [object, ...others] }) }) },
    event: async (_o: unknown, _t: string, reason: string) => void events.push(reason),
  } as unknown as ReconcileContext;
  const provider: Provider = { provider: "ssh", region: "rack-1", capabilities: { machines: {} as never, ...(options.clusterInfrastructure ? { clusterInfrastructure: {} as never } : {}) }, endpoints };
  const scope = {
    original: object,
    object,
    deps: { providers: { open: async () => provider } as unknown as ProviderResolver, workloads: {} as never },
    timings: {} as never,
    cluster: { metadata: { name: "onprem" } } as ClusterObject,
    connection: { metadata: { name: "rack" }, spec: { provider: "ssh", region: "rack-1" } } as never,
    controlPlaneInfrastructure: { status: { loadBalancer: { id: "host-cp-0", host: "10.0.0.10", port: 8443 } } } as InfrastructureObject,
  } as MachineScope;
  return { ctx, scope, endpoints, events };
}

describe("control-plane machines on hosts and their endpoint", () => {
  it("join the endpoint with every control-plane member once their host is known, once", async () => {
    const self = machine("cp-1", "control-plane", "10.0.0.11");
    const { ctx, scope, endpoints, events } = setup(self, [machine("cp-0", "control-plane", "10.0.0.10"), machine("cp-2", "control-plane"), machine("w-0", "worker", "10.0.0.20")]);
    await serveHostEndpoint(ctx, scope);
    assert.deepEqual(endpoints.calls, [
      [
        "host-cp-0",
        [
          { name: "host-cp-0", address: "10.0.0.10", port: 6443 },
          { name: "host-cp-1", address: "10.0.0.11", port: 6443 },
        ],
      ],
    ]);
    assert.equal(getCondition(self.status?.conditions, "LoadBalancerTarget")?.reason, "EndpointMember");
    assert.deepEqual(events, ["EndpointMemberAdded"]);
    await serveHostEndpoint(ctx, scope);
    assert.equal(endpoints.calls.length, 1, "a member already in is not sent again");

    await leaveHostEndpoint(ctx, scope, endpoints);
    assert.deepEqual(endpoints.calls[1], ["host-cp-0", [{ name: "host-cp-0", address: "10.0.0.10", port: 6443 }]], "the members that remain");
    assert.equal(getCondition(self.status?.conditions, "LoadBalancerTarget")?.status, "False");
  });

  it("leave workers, machines without a host, and clouds with load balancers alone", async () => {
    for (const [object, options] of [
      [machine("w-0", "worker", "10.0.0.20"), {}],
      [machine("cp-3", "control-plane"), {}],
      [machine("cp-4", "control-plane", "10.0.0.14"), { clusterInfrastructure: true }],
    ] as const) {
      const { ctx, scope, endpoints } = setup(object, [], options);
      await serveHostEndpoint(ctx, scope);
      assert.deepEqual(endpoints.calls, [], object.metadata.name);
    }
  });
});
