import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import Database from "better-sqlite3";
import { ManualClock } from "./clock.ts";
import { SimCloud } from "./cloud.ts";
import { NotFoundError } from "./errors.ts";
import { readyNetwork, settle } from "./test-support.ts";
import type { CloudResource, Quota } from "./types.ts";

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

/** A state file of an earlier version, dumped table by table, with what that version answered (testdata/). */
interface StateFixture {
  closedAt: number;
  schema: string[];
  tables: Record<string, Record<string, string | number | null>[]>;
  answered: {
    listResources: CloudResource[];
    quota: Quota;
    teamBResources: CloudResource[];
    after10s: CloudResource[];
    replayGone: CloudResource;
    replayRunning: CloudResource;
    nextNetwork: CloudResource;
    teamB: string;
    quotaAfter: Quota;
  };
  ids: Record<"network" | "subnet" | "securityGroup" | "keyPair" | "publicIp", string>;
}

describe("state files of earlier versions", () => {
  it("open with every resource, token, account, quota and pending transition, answering as that version did", async () => {
    const fixture = JSON.parse(readFileSync(new URL("./testdata/state-e47ddd9.json", import.meta.url), "utf8")) as StateFixture;
    const file = stateFile();
    mkdirSync(dirname(file), { recursive: true });
    const db = new Database(file);
    for (const sql of fixture.schema) db.exec(sql);
    for (const [table, rows] of Object.entries(fixture.tables)) {
      for (const row of rows) {
        const columns = Object.keys(row);
        db.prepare(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`).run(...Object.values(row));
      }
    }
    db.close();

    const clock = new ManualClock(fixture.closedAt);
    const cloud = new SimCloud({ state: file, profile: "demo", clock, seed: 21, terminatedRetentionMs: 600_000 });
    try {
      const { answered, ids } = fixture;
      assert.deepEqual(await cloud.listResources(), answered.listResources);
      assert.deepEqual(await cloud.getQuota(REGION), answered.quota);
      assert.deepEqual(await cloud.forAccount("team-b").listResources(), answered.teamBResources);
      for (const resource of answered.listResources) {
        const kind = cloud.resourceKinds.find((k) => k.kind === resource.kind);
        assert.ok(kind, `kind ${resource.kind} is served`);
        assert.deepEqual(await cloud.resources(kind).get(resource.region, resource.id), resource);
      }

      clock.advance(0);
      clock.advance(10_000);
      await settle();
      assert.deepEqual(await cloud.listResources(), answered.after10s, "the pending transitions resumed as before");
      assert.deepEqual(await cloud.createNetwork(REGION, { cidr: "10.50.0.0/16", clientToken: "gone-net" }), answered.replayGone);
      const imageId = (await cloud.describeImages(REGION))[0]!.id;
      const launch = {
        subnetId: ids.subnet,
        imageId,
        securityGroupIds: [ids.securityGroup],
        machineType: "s1.medium",
        keyPairId: ids.keyPair,
        publicIpId: ids.publicIp,
        userData: "#cloud-config\nruncmd: [true]\n",
        tags: { cluster: "c1", role: "cp" },
        clientToken: "vm-running",
      };
      assert.deepEqual(await cloud.createInstance(REGION, launch), answered.replayRunning);
      assert.deepEqual(await cloud.createNetwork(REGION, { cidr: "10.70.0.0/16" }), answered.nextNetwork, "ids continue the saved sequence");
      assert.equal(cloud.authenticate("team-b-token-1"), answered.teamB);
      assert.deepEqual(await cloud.getQuota(REGION), answered.quotaAfter);
    } finally {
      await cloud.close();
    }
  });
});
