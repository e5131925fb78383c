// A restart of the sim cloud on its state file: an instance whose boot fell due while the cloud was
// down boots once the workload emulation listens, so its user data (kubeadm) runs rather than being
// skipped and leaving the machine to wait for its join deadline.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { SimCloud } from "./cloud.ts";
import { startSimCloudServer } from "./server.ts";
import { readyNetwork, waitFor } from "./test-support.ts";

const REGION = "sim-east-1";
/** The "fast" profile boots an instance in 300–600 ms. */
const LONGEST_BOOT_MS = 600;

describe("the sim cloud server, restarted on its state", () => {
  it("runs the user data of an instance whose boot fell due while it was down", async () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-restart-"));
    const state = join(dir, "simcloud.db");
    try {
      const before = new SimCloud({ state, profile: "fast", seed: 3 });
      const net = await readyNetwork(before);
      const instance = await before.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.medium", imageId: net.imageId, userData: "#cloud-config\nruncmd: [kubeadm init]\n" });
      assert.equal(instance.state, "pending");
      await before.close();
      // The cloud is down while the boot falls due.
      await delay(LONGEST_BOOT_MS + 100);

      const server = await startSimCloudServer({ state, profile: "fast", port: 0, workloadPort: 0 });
      try {
        const booted = await waitFor(async () => {
          const now = await server.cloud.getInstance(REGION, instance.id);
          return now.state === "running" && now;
        }, "the instance running");
        assert.match(booted.bootLog.join("\n"), /kubeadm/, `the emulated kubeadm ran at boot:\n${booted.bootLog.join("\n")}`);
      } finally {
        await server.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
