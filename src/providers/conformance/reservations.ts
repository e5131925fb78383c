// Conformance of the reservations capability: capacity held for a window, made once per token, tagged,
// active from its start, used by instances launched into it, refused with the shortfall named when the
// cloud cannot hold it, and cancelled tolerantly. Where the provider also has machines, an instance is
// launched into the reservation and ends with it.
import { it } from "node:test";
import assert from "node:assert/strict";
import type { ReservationInfo, ReservationSpec } from "../provider.ts";
import { machineTemplate, rejectsWith, type Case, type CaseStarter } from "./case.ts";
import { instanceSpec } from "./machines.ts";

/** More instances than any one zone of a test cloud holds. */
const TOO_MANY = 10_000;

async function reservationSpec(c: Case, count: number, startInMs = 0, lengthMs = 10 * 60_000): Promise<ReservationSpec> {
  const { zone, machineType } = await machineTemplate(c);
  const start = Date.now() + startInMs;
  return { zone, machineType, count, startTime: new Date(start).toISOString(), endTime: new Date(start + lengthMs).toISOString() };
}

/** Starts a case that cancels its reservations afterwards. */
async function reservationCase(start: CaseStarter, t: Parameters<CaseStarter>[0], label: string): Promise<{ c: Case; made: (r: ReservationInfo) => ReservationInfo }> {
  const c = await start(t, label);
  const made = (r: ReservationInfo) => {
    c.onTeardown(() => c.capability("reservations").delete(r.id));
    return r;
  };
  return { c, made };
}

export function reservationsConformance(start: CaseStarter): void {
  it("holds capacity from its start, once per token, tagged, and lets an instance launch into it", async (t) => {
    const { c, made } = await reservationCase(start, t, "reserve");
    const reservations = c.capability("reservations");
    const spec = await reservationSpec(c, 1);
    const create = () => reservations.create(spec, { token: c.token("reservation"), tags: c.tagsFor("reservation") });
    const reservation = made(await create());
    assert.equal((await create()).id, reservation.id, "the same token returns the same reservation");
    assert.equal(reservation.machineType, spec.machineType);
    assert.equal(reservation.zone, spec.zone);
    assert.equal(reservation.count, 1);
    assert.deepEqual((await reservations.findTagged(c.tags)).map((r) => r.id), [reservation.id], "findTagged finds exactly the one made");
    const active = await c.eventually("the reservation to be active", async () => {
      const now = await reservations.get(reservation.id);
      assert.ok(now, "the reservation exists");
      return now.phase === "active" ? now : undefined;
    });
    assert.equal(active.inUse, 0);

    if (c.has("machines")) {
      const instance = await c.machines.create("instance", { ...(await instanceSpec(c)), zone: spec.zone, reservationId: reservation.id }, { token: c.token("reserved-instance"), tags: c.tagsFor("instance") });
      c.track("instance", instance.id);
      assert.equal((await reservations.get(reservation.id))?.inUse, 1, "the instance uses the reservation's capacity");
      await rejectsWith(
        c.machines.create("instance", { ...(await instanceSpec(c)), zone: spec.zone, reservationId: reservation.id }, { token: c.token("second-instance"), tags: c.tags }),
        "capacity",
        "a second instance in a reservation of one",
      );
    }

    await reservations.delete(reservation.id);
    await reservations.delete(reservation.id);
    const ended = await reservations.get(reservation.id);
    assert.ok(ended === undefined || ended.phase === "ended", `a cancelled reservation has ended, not ${ended?.phase}`);
  });

  it("is scheduled until its start time", async (t) => {
    const { c, made } = await reservationCase(start, t, "reserve-later");
    const reservations = c.capability("reservations");
    const reservation = made(await reservations.create(await reservationSpec(c, 1, 60 * 60_000), { token: c.token("reservation"), tags: c.tags }));
    assert.equal(reservation.phase, "scheduled");
  });

  it("refuses capacity it cannot hold with a capacity error naming the shortfall, and a window ending before it starts as invalid", async (t) => {
    const { c } = await reservationCase(start, t, "reserve-refused");
    const reservations = c.capability("reservations");
    const error = await rejectsWith(reservations.create(await reservationSpec(c, TOO_MANY), { token: c.token("too-many"), tags: c.tags }), "capacity", "reserve more than the zone holds");
    assert.match(error.message, /short by \d+/);
    const spec = await reservationSpec(c, 1);
    await rejectsWith(reservations.create({ ...spec, endTime: spec.startTime, startTime: spec.endTime }, { token: c.token("backwards"), tags: c.tags }), "invalid", "reserve a window that ends before it starts");
    assert.deepEqual(await reservations.findTagged(c.tags), [], "refused reservations leave nothing");
  });
}
