import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { ManualClock } from "./clock.ts";
import { SimCloud, type SimCloudOptions } from "./cloud.ts";
import { InternalError, InvalidParameterError, ThrottlingError, type SimCloudError } from "./errors.ts";
import { checkFaultConfig, loadFaultConfig, type FaultConfig } from "./faults.ts";
import { readyNetwork } from "./test-support.ts";

const REGION = "sim-east-1";
const clouds: SimCloud[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
});

function open(options: SimCloudOptions): SimCloud {
  const cloud = new SimCloud({ profile: "instant", ...options });
  clouds.push(cloud);
  return cloud;
}

const NOISY: FaultConfig = {
  errors: {
    "*": { InternalError: 0.15, Throttling: 0.1 },
    createInstance: { InternalError: 0.1, InsufficientCapacity: 0.2 },
  },
  slowBoot: { probability: 0.3, factor: 4 },
  instanceDeath: { probability: 0.3, afterMs: [1_000, 20_000] },
};

/** Runs a fixed sequence of calls on a manual clock and writes down everything a caller would see. */
async function transcript(seed: number): Promise<string[]> {
  const clock = new ManualClock();
  const cloud = open({ profile: "demo", clock, seed });
  const net = await readyNetwork(cloud, { tick: () => clock.advance(1000) });
  cloud.setFaults(NOISY);
  const seen: string[] = [];
  const record = async (label: string, call: () => Promise<{ id: string; state: string }>) => {
    try {
      const result = await call();
      seen.push(`${label} ${result.id} ${result.state}`);
    } catch (error) {
      seen.push(`${label} ${(error as SimCloudError).code} ${(error as SimCloudError).retryAfterMs ?? ""}`);
    }
  };
  for (let i = 0; i < 12; i++) {
    await record(`launch ${i}`, () =>
      cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId, clientToken: `vm-${i}` }),
    );
    await record(`subnet ${i}`, () => cloud.getSubnet(REGION, net.subnet.id));
  }
  clock.advance(60_000);
  cloud.setFaults({});
  for (const instance of await cloud.listInstances(REGION)) seen.push(`${instance.id} ${instance.state} ${instance.stateReason?.code ?? ""}`);
  return seen;
}

describe("fault injection", () => {
  it("gives the same faults, ids and outcomes for the same seed and calls", async () => {
    const first = await transcript(42);
    const second = await transcript(42);
    assert.deepEqual(second, first);
    const text = first.join("\n");
    for (const expected of ["InternalError", "Throttling", "InsufficientCapacity", "running", "InstanceFailure"]) {
      assert.ok(text.includes(expected), `the run shows ${expected}:\n${text}`);
    }
    assert.notDeepEqual(await transcript(43), first, "another seed gives another run");
  });

  it("counts what it injected: errors by code, those after the change took effect, slow boots and deaths", async () => {
    const clock = new ManualClock();
    const cloud = open({ clock, seed: 5 });
    const net = await readyNetwork(cloud, { tick: () => clock.advance(1000) });
    cloud.setFaults({ errors: { getSubnet: { InternalError: 0.3, Throttling: 0.3 } }, slowBoot: { probability: 1, factor: 2 }, instanceDeath: { probability: 1, afterMs: [1_000, 1_000] } });
    const seen = { InternalError: 0, Throttling: 0 };
    for (let i = 0; i < 40; i++) {
      await cloud.getSubnet(REGION, net.subnet.id).catch((e: SimCloudError) => void seen[e.code as keyof typeof seen]++);
    }
    await cloud.createInstance(REGION, { subnetId: net.subnet.id, machineType: "s1.small", imageId: net.imageId, clientToken: "dies" });
    clock.advance(5_000);
    const counts = cloud.faultCounts;
    assert.ok(seen.InternalError > 0 && seen.Throttling > 0, JSON.stringify(seen));
    assert.deepEqual(counts, { ...seen, InsufficientCapacity: 0, QuotaExceeded: 0, afterCommit: 0, slowBoot: 1, instanceDeath: 1 });
  });

  it("can fail a create after it took effect, so only the idempotency token avoids a duplicate", async () => {
    const cloud = open({ faults: { errors: { createNetwork: { InternalError: 1 } }, failAfterCommit: 1 } });
    await assert.rejects(cloud.createNetwork(REGION, { cidr: "10.0.0.0/16", clientToken: "n1" }), InternalError);
    cloud.setFaults({});
    const retried = await cloud.createNetwork(REGION, { cidr: "10.0.0.0/16", clientToken: "n1" });
    assert.deepEqual((await cloud.listNetworks(REGION)).map((n) => n.id), [retried.id]);
  });

  it("throttles with a Retry-After in real time (scaled) and changes at run time", async () => {
    const cloud = open({ timeScale: 0.5, faults: { errors: { getQuota: { Throttling: 1 } }, retryAfterMs: 2000 } });
    await assert.rejects(cloud.getQuota(REGION), (e: unknown) => e instanceof ThrottlingError && e.retryAfterMs === 1000 && e.retryable);
    assert.ok(await cloud.describeRegions(), "other operations are not affected");
    cloud.setFaults({ errors: { "*": { QuotaExceeded: 1 } } });
    await assert.rejects(cloud.describeRegions(), { code: "QuotaExceeded" });
    cloud.setFaults({});
    assert.equal((await cloud.getQuota(REGION)).region, REGION);
  });

  it("refuses configurations it cannot apply", () => {
    assert.throws(() => checkFaultConfig({ errors: { launchRocket: { InternalError: 0.1 } } }), /unknown operation "launchRocket"/);
    assert.throws(() => checkFaultConfig({ errors: { "*": { InternalError: 0.7, Throttling: 0.6 } } }), /add up to 1.3/);
    assert.throws(() => checkFaultConfig({ errors: { "*": { Boom: 0.1 } } }), InvalidParameterError);
    assert.throws(() => checkFaultConfig({ slowBoot: { probability: 2, factor: 3 } }), /faults.slowBoot.probability/);
    const dir = mkdtempSync(join(tmpdir(), "simcloud-faults-"));
    writeFileSync(join(dir, "faults.json"), JSON.stringify({ errors: { createInstance: { InternalError: 0.1 } } }));
    assert.deepEqual(loadFaultConfig(join(dir, "faults.json")), { errors: { createInstance: { InternalError: 0.1 } } });
    writeFileSync(join(dir, "broken.json"), "{");
    assert.throws(() => loadFaultConfig(join(dir, "broken.json")), /cannot read fault configuration/);
    rmSync(dir, { recursive: true, force: true });
  });
});
