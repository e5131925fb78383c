import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { runProviderConformance } from "../conformance/index.ts";
import { CapabilityMissingError, capabilitiesOf, capabilityOf } from "../provider.ts";
import { fakeHostsProviderFactory } from "./hosts.ts";

const target = { name: "default/rack", provider: "fake-hosts", region: "rack-1" };

// A provider with the machines capability only passes the machines suite; the others are skipped.
runProviderConformance(
  "fake hosts (machines only)",
  async () => {
    const factory = fakeHostsProviderFactory();
    const pool = factory.pool(target.region);
    return {
      provider: factory.open(target),
      machineTemplate: pool.machineTemplate,
      injectFault: async (operation, fault) => pool.injectFault(operation, fault),
      clearFaults: async () => pool.clearFaults(),
      close: async () => undefined,
    };
  },
  ["machines"],
);

describe("a provider without cluster infrastructure", () => {
  it("declares machines only, and asking it for a network names what it lacks and what it offers", () => {
    const provider = fakeHostsProviderFactory().open(target);
    assert.deepEqual(capabilitiesOf(provider), ["machines"]);
    assert.equal(capabilityOf(provider, "machines"), provider);
    assert.throws(
      () => capabilityOf(provider, "clusterInfrastructure", 'connection "default/rack"'),
      (error: unknown) =>
        error instanceof CapabilityMissingError &&
        error.reason === "CapabilityMissing" &&
        error.message === 'connection "default/rack": provider "fake-hosts" does not offer cluster infrastructure (network, subnet, security group, key pair, load balancer) (it offers: machines)' &&
        error.missing.join() === "clusterInfrastructure",
    );
  });

  it("hands out each host once, and a released host again", async () => {
    const factory = fakeHostsProviderFactory(["192.0.2.20"]);
    const machines = capabilityOf(factory.open(target), "machines");
    const spec = { ...factory.pool(target.region).machineTemplate, userData: "#cloud-config\n" };
    const first = await machines.create("instance", spec, { token: "a", tags: {} });
    await assert.rejects(machines.create("instance", spec, { token: "b", tags: {} }), (error: unknown) => error instanceof Error && /all 1 hosts are in use/.test(error.message));
    await machines.delete("instance", first.id);
    const second = await machines.create("instance", spec, { token: "b", tags: {} });
    assert.equal(second.privateIp, "192.0.2.20");
  });
});
