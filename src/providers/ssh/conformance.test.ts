// The ssh provider against the provider conformance suite, on real hosts (the lab): it declares the
// machines capability and pools of hosts, and claims, bootstraps and cleans hosts over SSH as the contract asks.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { runProviderConformance } from "../conformance/index.ts";
import { HOST_MACHINE_TYPE, SshProvider } from "./provider.ts";
import { MemoryHostDirectory } from "./testing/directory.ts";
import { SshLab, labUnavailable } from "./testing/lab.ts";

const skip = labUnavailable();
const REGION = "lab";

describe("ssh provider", { skip }, () => {
  let lab: SshLab;
  let directory: MemoryHostDirectory;
  before(async () => {
    lab = await SshLab.start(2);
    directory = new MemoryHostDirectory("default/lab", lab);
  });
  after(async () => {
    await lab?.stop();
  });

  runProviderConformance(
    "ssh",
    async () => {
      const provider = new SshProvider(directory, "default/lab", REGION, { pollMs: 50 });
      return {
        provider,
        machineTemplate: { zone: REGION, machineType: HOST_MACHINE_TYPE, imageId: "host" },
        injectFault: async (operation, fault) => directory.injectFault(operation, fault),
        clearFaults: async () => directory.clearFaults(),
        close: () => provider.settle(),
      };
    },
    ["machines", "poolInfrastructure"],
    { timeoutMs: 20_000, pollMs: 50 },
  );

  it("leaves every host as it found it once the suite's machines are deleted", async () => {
    for (const host of lab.hosts) assert.deepEqual(await lab.writtenFiles(host), [], `${host.name} has no file of Slipway's left`);
    assert.ok(directory.records.every((h) => h.claim === undefined), "every host is released");
  });
});
