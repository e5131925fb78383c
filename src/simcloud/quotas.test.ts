import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { QuotaBook } from "./quotas.ts";
import type { ResourceRecord } from "./records.ts";
import { StateStore } from "./state.ts";

function instance(id: string, account: string, vcpus: number, state = "running", ephemeralPublicIp?: string): ResourceRecord {
  return { id, kind: "instance", account, region: "sim-east-1", vcpus, state, ...(ephemeralPublicIp ? { ephemeralPublicIp } : {}) } as unknown as ResourceRecord;
}

describe("QuotaBook usage", () => {
  it("follows every create, change and removal, per account and region, and survives a reopen", () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-quotas-"));
    try {
      const state = new StateStore(join(dir, "state.db"));
      const book = new QuotaBook(state);
      state.put(instance("i-1", "a", 2));
      state.put(instance("i-2", "a", 4, "running", "198.51.100.7"));
      state.put(instance("i-3", "b", 8));
      state.put({ id: "vpc-1", kind: "network", account: "a", region: "sim-east-1" } as unknown as ResourceRecord);
      assert.deepEqual(book.usage("a", "sim-east-1"), { vcpus: 6, instances: 2, networks: 1, loadBalancers: 0, publicIps: 1 });
      assert.deepEqual(book.usage("b", "sim-east-1"), { vcpus: 8, instances: 1, networks: 0, loadBalancers: 0, publicIps: 0 });
      assert.deepEqual(book.usage("a", "sim-west-1"), { vcpus: 0, instances: 0, networks: 0, loadBalancers: 0, publicIps: 0 });

      // Changed in place and written again (as the services do): a terminated instance counts no more.
      const changed = state.get("instance", "i-2")!;
      (changed as { state: string }).state = "terminated";
      state.put(changed);
      state.remove("vpc-1", {});
      assert.deepEqual(book.usage("a", "sim-east-1"), { vcpus: 2, instances: 1, networks: 0, loadBalancers: 0, publicIps: 0 });

      const reopened = new QuotaBook(new StateStore(join(dir, "state.db")));
      assert.deepEqual(reopened.usage("a", "sim-east-1"), book.usage("a", "sim-east-1"));
      assert.deepEqual(reopened.usage("b", "sim-east-1"), book.usage("b", "sim-east-1"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
