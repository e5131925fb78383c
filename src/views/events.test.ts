import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { EventObject, OperationObject } from "../api/kinds.ts";
import { clusterEvents, sortEvents } from "./events.ts";
import { family } from "./testing.ts";

const event = (kind: string, name: string, time: string, resourceVersion: string, reason = "Happened"): EventObject =>
  ({ apiVersion: "v1", kind: "Event", metadata: { name: `${name}.${resourceVersion}`, namespace: "default", resourceVersion }, involvedObject: { kind, name }, reason, lastTimestamp: time }) as EventObject;

describe("the events view", () => {
  it("keeps the events of the cluster and of what was made for it, oldest first", () => {
    const operation = { metadata: { name: "op-1" }, spec: { target: { kind: "Cluster", name: "tree" } } } as OperationObject;
    const other = { metadata: { name: "op-2" }, spec: { target: { kind: "Cluster", name: "other" } } } as OperationObject;
    const events = [
      event("Machine", "tree-east-1", "2026-01-01T00:05:00Z", "9"),
      event("Cluster", "other", "2026-01-01T00:01:00Z", "2"),
      event("Cluster", "tree", "2026-01-01T00:01:00Z", "3"),
      event("Operation", "op-1", "2026-01-01T00:00:30Z", "1"),
      event("Operation", "op-2", "2026-01-01T00:00:40Z", "4"),
      event("MachinePool", "tree-east", "2026-01-01T00:01:00Z", "2"),
    ];
    assert.deepEqual(
      clusterEvents(family(), [operation, other], events).map((e) => `${e.involvedObject.kind}/${e.involvedObject.name}`),
      ["Operation/op-1", "MachinePool/tree-east", "Cluster/tree", "Machine/tree-east-1"],
    );
  });

  it("orders events of the same second as the server stored them", () => {
    const same = "2026-01-01T00:01:00Z";
    assert.deepEqual(sortEvents([event("Cluster", "a", same, "12"), event("Cluster", "b", same, "3")]).map((e) => e.involvedObject.name), ["b", "a"]);
  });
});
