import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { ManualClock } from "./clock.ts";
import { SimCloud } from "./cloud.ts";
import { InsufficientCapacityError, InvalidParameterError } from "./errors.ts";
import { readyNetwork } from "./test-support.ts";

const REGION = "sim-east-1";
const clouds: SimCloud[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
});

const iso = (ms: number) => new Date(ms).toISOString();

/** An instant-profile cloud on a manual clock with a second account, a ready network in each, and a zone holding 4 s1.small. */
async function reservationCloud() {
  const clock = new ManualClock();
  const cloud = new SimCloud({ profile: "instant", clock, accounts: [{ id: "other", token: "other-token" }] });
  clouds.push(cloud);
  const tick = () => clock.advance(10);
  const net = await readyNetwork(cloud, { tick });
  const other = cloud.forAccount("other");
  const otherNet = await readyNetwork(other, { tick, cidr: "10.9.0.0/16" });
  const zone = net.subnet.zone;
  cloud.setCapacity(REGION, zone, "s1.small", 4);
  const launch = (api = cloud as typeof cloud | typeof other, reservationId?: string) =>
    api.createInstance(REGION, {
      subnetId: api === other ? otherNet.subnet.id : net.subnet.id,
      machineType: "s1.small",
      imageId: net.imageId,
      ...(reservationId ? { reservationId } : {}),
    });
  return { clock, cloud, other, zone, launch };
}

describe("capacity reservations", () => {
  it("holds capacity for its window: scheduled, active for its owner only, then expired with its instances terminated", async () => {
    const { clock, cloud, other, zone, launch } = await reservationCloud();
    const start = clock.now() + 20_000;
    const reservation = await cloud.createReservation(REGION, {
      zone,
      machineType: "s1.small",
      instanceCount: 3,
      startTime: iso(start),
      endTime: iso(start + 60_000),
      tags: { lease: "demo" },
    });
    assert.equal(reservation.state, "scheduled");
    assert.match(reservation.id, /^cr-/);
    await assert.rejects(launch(cloud, reservation.id), /is scheduled; it starts at/, "a scheduled reservation takes no instance yet");

    clock.advance(20_000);
    assert.equal((await cloud.getReservation(REGION, reservation.id)).state, "active");
    const inside = [await launch(cloud, reservation.id), await launch(cloud, reservation.id)];
    assert.equal(inside[0]!.reservationId, reservation.id);
    assert.equal((await cloud.getReservation(REGION, reservation.id)).instancesInUse, 2);

    // One place is free outside the reservation; the reservation's unused third is nobody else's.
    await launch(other);
    await assert.rejects(launch(other), (e: unknown) => e instanceof InsufficientCapacityError && /3 of 4 held by capacity reservations/.test(e.message));
    await assert.rejects(launch(cloud), InsufficientCapacityError, "the owner's launch without the reservation cannot take it either");
    await assert.rejects(launch(other, reservation.id), /capacity reservation cr-\w+ not found/, "another account cannot launch into it");
    const third = await launch(cloud, reservation.id);
    await assert.rejects(launch(cloud, reservation.id), /is full: 3 of 3/);

    clock.advance(60_000);
    const ended = await cloud.getReservation(REGION, reservation.id);
    assert.equal(ended.state, "expired");
    assert.ok(ended.endedAt);
    for (const instance of [...inside, third]) {
      const now = await cloud.getInstance(REGION, instance.id);
      assert.equal(now.state, "terminated", `instance ${instance.id} ends with its reservation`);
      assert.equal(now.stateReason?.code, "ReservationExpired");
    }
    await launch(other);
    assert.ok((await cloud.listResources()).some((r) => r.kind === "reservation" && r.id === reservation.id), "listed with every resource");
  });

  it("refuses a reservation the zone cannot hold for the window, naming the shortfall", async () => {
    const { clock, cloud, other, zone, launch } = await reservationCloud();
    await launch(cloud);
    const start = clock.now() + 10_000;
    await cloud.createReservation(REGION, { zone, machineType: "s1.small", instanceCount: 2, startTime: iso(start), endTime: iso(start + 10_000) });
    await assert.rejects(
      other.createReservation(REGION, { zone, machineType: "s1.small", instanceCount: 3, startTime: iso(start + 5_000), endTime: iso(start + 20_000) }),
      (e: unknown) => e instanceof InsufficientCapacityError && /requested 3, available 1, short by 2/.test(e.message),
    );
    // A window after the first one ends overlaps only the instance already placed.
    const later = await other.createReservation(REGION, { zone, machineType: "s1.small", instanceCount: 3, startTime: iso(start + 10_000), endTime: iso(start + 20_000) });
    assert.equal(later.state, "scheduled");
  });

  it("refuses a window that ends before it starts, naming the field", async () => {
    const { clock, cloud, zone } = await reservationCloud();
    await assert.rejects(
      cloud.createReservation(REGION, { zone, machineType: "s1.small", instanceCount: 1, startTime: iso(clock.now() + 5_000), endTime: iso(clock.now()) }),
      (e: unknown) => e instanceof InvalidParameterError && /reservation\.endTime: .* must be after startTime/.test(e.message),
    );
    await assert.rejects(cloud.createReservation(REGION, { zone, machineType: "s1.small", instanceCount: 0, startTime: iso(0), endTime: iso(1) }), /instanceCount/);
  });

  it("cancels a reservation on delete, terminating what was launched into it", async () => {
    const { clock, cloud, zone, launch } = await reservationCloud();
    const reservation = await cloud.createReservation(REGION, { zone, machineType: "s1.small", instanceCount: 1, startTime: iso(clock.now()), endTime: iso(clock.now() + 60_000) });
    clock.advance(1);
    const instance = await launch(cloud, reservation.id);
    await cloud.deleteReservation(REGION, reservation.id);
    clock.advance(10);
    assert.equal((await cloud.getReservation(REGION, reservation.id)).state, "cancelled");
    assert.equal((await cloud.getInstance(REGION, instance.id)).state, "terminated");
    await cloud.deleteReservation(REGION, reservation.id);
  });
});
