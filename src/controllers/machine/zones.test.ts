import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { MachineObject } from "../../api/kinds.ts";
import { zoneFor } from "./zones.ts";

const ZONES = ["z-a", "z-b", "z-c"];

function machine(name: string, options: { zone?: string; role?: "control-plane" | "worker"; pool?: string; failed?: boolean; deleting?: boolean; connection?: string } = {}): MachineObject {
  const role = options.role ?? "control-plane";
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Machine",
    metadata: {
      name,
      namespace: "ns",
      uid: `uid-${name}`,
      creationTimestamp: "2026-01-01T00:00:00Z",
      ...(options.deleting ? { deletionTimestamp: "2026-01-01T00:05:00Z" } : {}),
    },
    spec: { clusterName: "demo", role, connection: options.connection ?? "sim-east", machineType: "s1.medium", ...(options.pool ? { pool: options.pool } : {}) },
    status: { ...(options.zone ? { zone: options.zone } : {}), ...(options.failed ? { phase: "Failed" as const } : {}) },
  };
}

/** Places the machines one by one in the given order, as their reconciles would, and says where each went. */
function placeInOrder(all: MachineObject[], order: number[]): string[] {
  for (const index of order) all[index]!.status!.zone = zoneFor(all[index]!, ZONES, all);
  return all.map((m) => m.status!.zone!);
}

describe("zoneFor", () => {
  it("spreads a control plane of three over three zones, whichever machine is placed first", () => {
    for (const order of [[0, 1, 2], [2, 1, 0], [1, 2, 0]]) {
      const cp = [machine("demo-cp-0"), machine("demo-cp-1"), machine("demo-cp-2")];
      assert.deepEqual(placeInOrder(cp, order), ZONES, `order ${order.join(",")}`);
    }
  });

  it("goes round the zones again past three machines, and counts each pool apart from the control plane", () => {
    const all = [
      machine("demo-cp-0", { zone: "z-a" }),
      ...["w0", "w1", "w2", "w3", "w4"].map((n) => machine(`demo-workers-${n}`, { role: "worker", pool: "demo-workers" })),
    ];
    assert.deepEqual(placeInOrder(all, [1, 2, 3, 4, 5]).slice(1), ["z-a", "z-b", "z-c", "z-a", "z-b"]);
  });

  it("puts a replacement in the zone of the failed or deleted machine it replaces", () => {
    assert.equal(zoneFor(machine("demo-cp-3"), ZONES, [machine("demo-cp-0", { zone: "z-a" }), machine("demo-cp-1", { zone: "z-b", failed: true }), machine("demo-cp-2", { zone: "z-c" })]), "z-b");
    assert.equal(zoneFor(machine("demo-cp-3"), ZONES, [machine("demo-cp-0", { zone: "z-a", deleting: true }), machine("demo-cp-1", { zone: "z-b" }), machine("demo-cp-2", { zone: "z-c" })]), "z-a");
  });

  it("keeps the zone a machine already has, and uses the only zone there is", () => {
    assert.equal(zoneFor(machine("demo-cp-0", { zone: "z-c" }), ZONES, []), "z-c");
    assert.equal(zoneFor(machine("demo-cp-1"), ["z-a"], [machine("demo-cp-0", { zone: "z-a" })]), "z-a");
    assert.equal(zoneFor(machine("demo-cp-0"), [], []), undefined);
  });

  it("counts only machines of the same connection", () => {
    assert.equal(zoneFor(machine("demo-cp-1"), ZONES, [machine("demo-cp-0", { zone: "z-a", connection: "sim-west" })]), "z-a");
  });
});
