import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "../../src/store/sqlite.ts";
import { fleetStages, stageRows } from "./fleet-stages.ts";
import { readStoreCopy } from "./store-writes.ts";

const condition = (type: string, at: string) => ({ type, status: "True", lastTransitionTime: at });

describe("fleet stages", () => {
  it("times each stage from the cluster's creation, a role's machines by the last of them to get there", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fleet-stages-"));
    try {
      const store = SqliteStore.open(join(dir, "state.db"));
      const put = (key: string, value: object) => store.create(key, JSON.stringify(value));
      await put("/registry/slipway.dev/clusters/default/a", {
        metadata: { name: "a", creationTimestamp: "2026-01-01T00:00:00Z" },
        spec: {},
        status: { conditions: [condition("InfrastructureReady", "2026-01-01T00:00:20Z"), { type: "Ready", status: "False", lastTransitionTime: "2026-01-01T00:00:30Z" }] },
      });
      await put("/registry/slipway.dev/machines/default/a-cp-0", {
        metadata: { name: "a-cp-0", creationTimestamp: "2026-01-01T00:00:20Z" },
        spec: { clusterName: "a", role: "control-plane" },
        status: { conditions: [condition("NodeJoined", "2026-01-01T00:00:40Z")] },
      });
      for (const [name, joined] of [["a-w-0", "2026-01-01T00:00:50Z"], ["a-w-1", "2026-01-01T00:01:10Z"]] as const) {
        await put(`/registry/slipway.dev/machines/default/${name}`, {
          metadata: { name, creationTimestamp: "2026-01-01T00:00:01Z" },
          spec: { clusterName: "a", role: "worker" },
          status: { conditions: [condition("NodeJoined", joined)] },
        });
      }
      await store.close();
      const stages = readStoreCopy(dir, fleetStages);
      assert.deepEqual(Object.fromEntries(stages), {
        "cluster InfrastructureReady": [20],
        "control-plane machines created": [20],
        "control-plane machines NodeJoined": [40],
        "worker machines created": [1],
        "worker machines NodeJoined": [70],
      });
      // A condition that is not True is no stage reached; rows are in the order of their medians.
      assert.deepEqual(stageRows(stages).slice(1).map((row) => row[0]), ["worker machines created", "cluster InfrastructureReady", "control-plane machines created", "control-plane machines NodeJoined", "worker machines NodeJoined"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
