import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Quantity } from "./quantity.ts";
import { addLists, exceeding, fromRecord, mask, maxLists, negativeNames, prettyPrint, removeZeros, subtractNonNegative, toRecord } from "./resource-list.ts";

const list = (record: Record<string, string>) => fromRecord(record);

describe("resource lists", () => {
  it("add, keeping names from either side", () => {
    assert.deepEqual(toRecord(addLists(list({ pods: "1", cpu: "500m" }), list({ cpu: "1", memory: "1Gi" }))), { cpu: "1500m", memory: "1Gi", pods: "1" });
  });

  it("subtract without going below zero, names only on the right counting as zero", () => {
    assert.deepEqual(toRecord(subtractNonNegative(list({ cpu: "2", pods: "1" }), list({ cpu: "3", memory: "1Gi" }))), { cpu: "0", memory: "0", pods: "1" });
  });

  it("take the larger of each", () => {
    assert.deepEqual(toRecord(maxLists(list({ cpu: "2", memory: "1Gi" }), list({ cpu: "3", memory: "512Mi" }))), { cpu: "3", memory: "1Gi" });
  });

  it("mask, drop zeros, and find what exceeds a limit or is negative", () => {
    assert.deepEqual(toRecord(mask(list({ cpu: "1", pods: "2" }), ["pods", "memory"])), { pods: "2" });
    assert.deepEqual(toRecord(removeZeros(list({ cpu: "0", pods: "2" }))), { pods: "2" });
    assert.deepEqual(exceeding(list({ cpu: "2", pods: "5", memory: "9Gi" }), list({ cpu: "2", pods: "4", memory: "8Gi" })), ["memory", "pods"]);
    assert.deepEqual(negativeNames(new Map([["cpu", Quantity.parse("-1")], ["pods", Quantity.parse("1")]])), ["cpu"]);
  });

  it("print sorted by name, as quota errors do", () => {
    assert.equal(prettyPrint(list({ "requests.cpu": "500m", pods: "1", "limits.memory": "1Gi" })), "limits.memory=1Gi,pods=1,requests.cpu=500m");
  });

  it("read stored maps, skipping values that are not quantities", () => {
    assert.deepEqual(toRecord(fromRecord({ pods: "5", cpu: 2, bad: "x", odd: true })), { cpu: "2", pods: "5" });
  });
});
