import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { admit, admitted, cell, manifest } from "../testing.ts";
import { leaseKind, leaseReservationFor, type LeaseObject } from "./lease.ts";

function lease(spec: Record<string, unknown>): LeaseObject {
  return manifest(leaseKind, "demo", spec);
}

const good = { connection: "east", sizes: [{ name: "small", machineType: "s1.small", count: 2 }], startTime: "2030-01-01T00:00:00Z", endTime: "2030-01-01T04:00:00Z" };

describe("Lease", () => {
  it("admits sizes in a window", () => {
    admitted(leaseKind, lease(good));
  });

  it("refuses an end not after the start, counts below 1, duplicate and malformed size names, naming each field", () => {
    const result = admit(
      leaseKind,
      lease({
        ...good,
        endTime: good.startTime,
        sizes: [
          { name: "small", machineType: "s1.small", count: 0 },
          { name: "small", machineType: "s1.large", count: 1 },
          { name: "Big_One", machineType: "s1.large", count: 1 },
        ],
      }),
    );
    assert.deepEqual(result.errors.map((e) => e.field), ["spec.endTime", "spec.sizes[0].count", "spec.sizes[1].name", "spec.sizes[2].name"]);
    assert.match(result.errors[0]!.message, /must be after spec.startTime/);
    assert.match(result.errors[1]!.message, /must be from 1 to 1000/);
  });

  it("refuses a time that is not RFC 3339, and a lease without sizes", () => {
    assert.deepEqual(admit(leaseKind, lease({ ...good, endTime: "tomorrow" })).errors.map((e) => e.field), ["spec.endTime"]);
    assert.deepEqual(admit(leaseKind, lease({ ...good, sizes: [] })).schemaErrors.map(([p]) => p), ["/spec/sizes"]);
  });

  it("refuses any change of its reservations once made", () => {
    const old = admit(leaseKind, lease(good)).object;
    const changed = admit(leaseKind, lease({ ...good, endTime: "2030-01-01T05:00:00Z" }), old);
    assert.deepEqual(changed.errors.map((e) => e.field), ["spec.endTime"]);
    assert.match(changed.errors[0]!.message, /field is immutable/);
  });

  it("shows its sizes and window in columns, and hands machines the reservation of their type while Active", () => {
    const object = admit(leaseKind, lease(good)).object;
    assert.equal(cell(leaseKind, "SIZES", object), "small=2×s1.small");
    assert.equal(cell(leaseKind, "END", object), good.endTime);
    object.status = { phase: "Active", reservations: [{ size: "small", machineType: "s1.small", count: 2, zone: "z", reservationId: "cr-1" }] };
    assert.equal(leaseReservationFor(object, "east", "s1.small"), "cr-1");
    assert.equal(leaseReservationFor(object, "west", "s1.small"), undefined);
    assert.equal(leaseReservationFor(object, "east", "s1.large"), undefined);
    object.status.phase = "Expired";
    assert.equal(leaseReservationFor(object, "east", "s1.small"), undefined);
  });
});
