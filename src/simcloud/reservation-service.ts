// Capacity reservations, as EC2's On-Demand Capacity Reservations and OpenStack Blazar's leases make them:
// N instances of one machine type in one zone, held for a window [startTime, endTime) on the cloud's
// clock. A reservation is scheduled until its start, active until its end, then expired (or cancelled when
// deleted first). While it is active only instances launched into it (by its id, by its account) use its
// capacity; nobody else can take it. When it ends the instances launched into it are terminated, as Blazar
// ends a lease. A reservation the zone cannot hold for its whole window is refused naming the shortfall.
import { Type, type Static } from "@sinclair/typebox";
import { checkZone, machineType } from "./catalog.ts";
import type { CloudCore } from "./core.ts";
import { InsufficientCapacityError, InvalidParameterError } from "./errors.ts";
import { findOwned } from "./lookup.ts";
import type { Transition } from "./records.ts";
import { defineResource, type ResourceView } from "./resource-kinds.ts";
import { CreateCommon, Strict } from "./schemas.ts";
import { plainView } from "./views.ts";

export const CreateReservationInputSchema = Strict({
  zone: Type.String({ minLength: 1, description: "Zone the capacity is held in." }),
  machineType: Type.String({ minLength: 1 }),
  instanceCount: Type.Integer({ minimum: 1, maximum: 10_000, description: "Instances of the machine type held." }),
  startTime: Type.String({ minLength: 1, description: "When the capacity is held from (RFC 3339); a past time means now." }),
  endTime: Type.String({ minLength: 1, description: "When the reservation ends and its instances are terminated (RFC 3339)." }),
  ...CreateCommon,
});
export type CreateReservationInput = Static<typeof CreateReservationInputSchema>;

/** scheduled → active → expired; cancelled when deleted before it expired. */
export type ReservationState = "scheduled" | "active" | "expired" | "cancelled";

export interface Reservation extends ResourceView<"reservation"> {
  state: ReservationState;
  zone: string;
  machineType: string;
  instanceCount: number;
  startTime: string;
  endTime: string;
  /** Instances launched into it that hold a place now (pending, running, stopping, stopped). */
  instancesInUse: number;
  /** When it expired or was cancelled. */
  endedAt?: string;
}

export type ReservationRecord = Omit<Reservation, "instancesInUse"> & { transition?: Transition<"activate" | "expire" | "purge"> };

/** States in which a reservation holds (or will hold) capacity. */
const HOLDING: ReadonlySet<string> = new Set(["scheduled", "active"]);

function parseTime(value: string, field: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) {
    throw new InvalidParameterError(`reservation.${field}: "${value}" is not a time (RFC 3339, e.g. 2026-01-01T12:00:00Z)`, {
      details: { field: `reservation.${field}` },
    });
  }
  return ms;
}

function checkWindow(input: CreateReservationInput): void {
  const start = parseTime(input.startTime, "startTime");
  const end = parseTime(input.endTime, "endTime");
  if (end <= start) {
    throw new InvalidParameterError(`reservation.endTime: ${input.endTime} must be after startTime ${input.startTime}`, {
      details: { field: "reservation.endTime" },
    });
  }
}

export class ReservationService {
  constructor(private readonly core: CloudCore) {
    core.onTransition("reservation", (record, action) => this.transition(record, action));
  }

  createReservation(account: string, region: string, input: CreateReservationInput): ReservationRecord {
    const core = this.core;
    checkZone(region, input.zone);
    const type = machineType(region, input.machineType);
    const now = core.now();
    const startMs = Math.max(parseTime(input.startTime, "startTime"), now);
    const endMs = parseTime(input.endTime, "endTime");
    if (endMs <= now) {
      throw new InvalidParameterError(`reservation.endTime: ${input.endTime} has already passed`, { details: { field: "reservation.endTime" } });
    }
    const available = core.quotas.reservable(region, input.zone, type.name, startMs, endMs);
    if (input.instanceCount > available) {
      const shortfall = input.instanceCount - available;
      throw new InsufficientCapacityError(
        `insufficient ${type.name} capacity in ${input.zone} for ${input.startTime} to ${input.endTime}: requested ${input.instanceCount}, available ${available}, short by ${shortfall}`,
        { details: { zone: input.zone, machineType: type.name, requested: input.instanceCount, available, shortfall } },
      );
    }
    const record: ReservationRecord = {
      id: core.newId("reservation"),
      kind: "reservation",
      account,
      region,
      tags: { ...input.tags },
      createdAt: core.iso(now),
      state: "scheduled",
      zone: input.zone,
      machineType: type.name,
      instanceCount: input.instanceCount,
      startTime: core.iso(startMs),
      endTime: core.iso(endMs),
    };
    core.schedule(record, "activate", startMs - now);
    return record;
  }

  /** Cancels a reservation (its instances are terminated, as when it expires); a no-op once it ended. */
  deleteReservation(account: string, region: string, id: string): void {
    const record = findOwned(this.core, account, region, "reservation", id);
    if (!HOLDING.has(record.state)) return;
    this.end(record, "cancelled", "ReservationCancelled", `reservation ${id} was cancelled`);
  }

  private transition(record: ReservationRecord, action: "activate" | "expire" | "purge"): void {
    const core = this.core;
    switch (action) {
      case "activate":
        core.write(() => {
          core.cancelTransition(record);
          record.state = "active";
          core.schedule(record, "expire", Date.parse(record.endTime) - core.now());
        });
        return;
      case "expire":
        this.end(record, "expired", "ReservationExpired", `reservation ${record.id} ended at ${record.endTime}`);
        return;
      case "purge":
        core.write(() => {
          core.cancelTransition(record);
          core.state.remove(record.id, reservationView(core, record));
        });
        return;
    }
  }

  /** Ends the reservation and terminates what was launched into it (each instance's own transition). */
  private end(record: ReservationRecord, state: "expired" | "cancelled", code: string, message: string): void {
    const core = this.core;
    core.write(() => {
      core.cancelTransition(record);
      record.state = state;
      record.endedAt = core.iso();
      for (const instance of core.state.all("instance")) {
        if (instance.reservationId !== record.id || instance.state === "terminated" || instance.transition?.action === "terminated") continue;
        instance.state = "stopping";
        instance.stateReason = { code, message };
        core.schedule(instance, "terminated", core.sampleDelay("instanceTerminate"));
      }
      core.schedule(record, "purge", core.scale(core.terminatedRetentionMs));
    });
    core.logger.info({ reservation: record.id, state, zone: record.zone, machineType: record.machineType }, "sim cloud reservation ended");
  }
}

/**
 * Checks that an instance of `type` may launch into the reservation now, in `zone`, for `account`: it must
 * be the account's (another account's is not found), active, of that type and zone, and have room.
 */
export function requireReservationRoom(core: CloudCore, account: string, region: string, id: string, zone: string, type: string): void {
  const record = findOwned(core, account, region, "reservation", id);
  const field = { details: { field: "instance.reservationId" } };
  if (record.state !== "active") {
    const when = record.state === "scheduled" ? `; it starts at ${record.startTime}` : "";
    throw new InvalidParameterError(`reservation ${id} is ${record.state}${when}`, field);
  }
  if (record.machineType !== type) throw new InvalidParameterError(`reservation ${id} holds ${record.machineType}, not ${type}`, field);
  if (record.zone !== zone) throw new InvalidParameterError(`reservation ${id} is in zone ${record.zone}, not ${zone}`, field);
  const used = core.quotas.inReservation(id);
  if (used >= record.instanceCount) {
    throw new InsufficientCapacityError(`reservation ${id} is full: ${used} of ${record.instanceCount} ${type} instances in use`, {
      details: { reservationId: id, instanceCount: record.instanceCount, inUse: used },
    });
  }
}

export function reservationView(core: CloudCore, record: ReservationRecord): Reservation {
  return { ...plainView(record), instancesInUse: core.quotas.inReservation(record.id) };
}

export const reservations = defineResource({
  kind: "reservation",
  noun: "capacity reservation",
  names: { one: "Reservation", many: "Reservations" },
  collection: "reservations",
  idPrefix: "cr",
  service: (core) => new ReservationService(core),
  create: {
    input: CreateReservationInputSchema,
    check: checkWindow,
    build: (service, account, region, input) => service.createReservation(account, region, input),
  },
  /** Deleting a reservation cancels it. */
  delete: { run: (service, account, region, id) => service.deleteReservation(account, region, id) },
  view: (core, record: ReservationRecord): Reservation => reservationView(core, record),
  actions: {},
});
