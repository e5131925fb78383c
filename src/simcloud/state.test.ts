import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { ManualClock } from "./clock.ts";
import { SimCloud } from "./cloud.ts";
import { NotFoundError } from "./errors.ts";
import { readyNetwork } from "./test-support.ts";

const REGION = "sim-east-1";

const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function stateFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "simcloud-state-"));
  dirs.push(dir);
  return join(dir, "nested", "cloud.db");
}

describe("persistence", () => {
  it("keeps resources, tokens, accounts and quotas across a restart, and resumes pending transitions", async () => {
    const file = stateFile();
    const clock = new ManualClock();
    const before = new SimCloud({ state: file, profile: "demo", clock, seed: 5 });
    before.setAccount("team-b", "team-b-token");
    before.setQuota("default", REGION, { vcpus: 100 });
    const net = await readyNetwork(before, { tick: () => clock.advance(1000) });
    const launch = { subnetId: net.subnet.id, machineType: "s1.large", imageId: net.imageId, userData: "#!/bin/sh\n", clientToken: "vm-1" };
    const pending = await before.createInstance(REGION, launch);
    const lb = await before.createLoadBalancer(REGION, { subnetIds: [net.subnet.id], listeners: [{ port: 6443, protocol: "tcp", targetPort: 6443 }] });
    const idsBefore = (await before.listResources()).map((r) => r.id).sort();
    await before.close();

    const later = new ManualClock(clock.now());
    const after = new SimCloud({ state: file, profile: "demo", clock: later, seed: 5 });
    try {
      assert.deepEqual((await after.listResources()).map((r) => r.id).sort(), idsBefore);
      assert.equal((await after.getInstance(REGION, pending.id)).state, "pending");
      assert.equal((await after.createInstance(REGION, launch)).id, pending.id, "the idempotency token survived");
      assert.equal(after.authenticate("team-b-token"), "team-b");
      assert.equal((await after.getQuota(REGION)).limits.vcpus, 100);

      later.advance(8_000);
      assert.equal((await after.getInstance(REGION, pending.id)).state, "running", "the boot resumed");
      assert.equal((await after.getLoadBalancer(REGION, lb.id)).state, "active");

      const fresh = await after.createNetwork(REGION, { cidr: "10.7.0.0/16" });
      assert.ok(!idsBefore.includes(fresh.id), "ids continue rather than repeat");
    } finally {
      await after.close();
    }
  });

  it("runs at start the transitions that fell due while the cloud was down", async () => {
    const file = stateFile();
    const clock = new ManualClock();
    const before = new SimCloud({ state: file, profile: "realistic", clock, terminatedRetentionMs: 120_000 });
    const net = await readyNetwork(before, { tick: () => clock.advance(3000) });
    const booting = await before.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId });
    const doomed = await before.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId });
    before.killInstance(doomed.id);
    await before.close();

    const later = new ManualClock(clock.now() + 90_000);
    const after = new SimCloud({ state: file, profile: "realistic", clock: later, terminatedRetentionMs: 120_000 });
    try {
      later.advance(0);
      assert.equal((await after.getInstance(REGION, booting.id)).state, "running");
      assert.equal((await after.getInstance(REGION, doomed.id)).state, "terminated", "still retained");
      later.advance(30_000);
      await assert.rejects(after.getInstance(REGION, doomed.id), NotFoundError, "purged once its retention passed");
    } finally {
      await after.close();
    }
  });
});
