import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { installedProviders } from "./index.ts";
import { DuplicateProviderError, ProviderRegistry } from "./registry.ts";
import { fakeHostsProviderFactory } from "./testing/hosts.ts";

describe("ProviderRegistry", () => {
  it("holds what is registered in it, and nothing another registry holds", () => {
    const one = new ProviderRegistry().register(fakeHostsProviderFactory());
    const other = new ProviderRegistry();
    assert.deepEqual(one.names(), ["fake-hosts"]);
    assert.equal(one.factory("fake-hosts")?.name, "fake-hosts");
    assert.deepEqual(other.names(), []);
    assert.equal(other.factory("fake-hosts"), undefined);
  });

  it("refuses a second provider of the same name", () => {
    const registry = new ProviderRegistry().register(fakeHostsProviderFactory());
    assert.throws(() => registry.register(fakeHostsProviderFactory()), DuplicateProviderError);
  });

  it("installs the sim provider, and takes one more provider with one line", () => {
    assert.deepEqual(installedProviders().names(), ["sim", "ssh"]);
    assert.deepEqual(installedProviders().register(fakeHostsProviderFactory()).names(), ["fake-hosts", "sim", "ssh"]);
  });
});
