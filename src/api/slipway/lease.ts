// Lease: machines reserved in one connection for a time window (a capacity reservation per size), as
// azimuth's leases are Blazar leases. A Cluster naming a lease (`spec.leaseName`) waits until it is Active,
// takes its machine types from it, adopts it, and is deleted when it ends.
import { Type, type Static } from "@sinclair/typebox";
import { Condition, MapOf, StringEnum, Struct, objectSchema, type ObjectOf } from "../meta.ts";
import type { FieldError, KindDefinition } from "../registry.ts";
import { ageColumn, computedColumn, fieldColumn } from "../columns.ts";
import { dnsLabelErrors, duplicate, immutable, invalid } from "../field-errors.ts";
import { ObservedGeneration, SLIPWAY_API_VERSION, slipwayKindBase } from "./group.ts";

export const LEASE_PHASES = ["Pending", "Active", "Expired", "Failed"] as const;
export type LeasePhase = (typeof LEASE_PHASES)[number];

export const FINALIZER_LEASE = "slipway.dev/lease";
/** Cloud reservations made for a lease carry its namespace/name under this tag. */
export const TAG_LEASE = "slipway.dev/lease";
/** The most machines one size may reserve. */
export const MAX_LEASE_COUNT = 1000;

const LeaseSize = Struct(
  {
    name: Type.String({ minLength: 1, description: "Name of the size, a DNS label unique in the lease; a Cluster's machineType may name it." }),
    machineType: Type.String({ minLength: 1, description: "Machine type reserved for this size." }),
    count: Type.Integer({ description: `Machines of this size reserved (1 to ${MAX_LEASE_COUNT}).` }),
  },
  { description: "Machines of one type reserved for the window." },
);

export const LeaseSpecSchema = Struct(
  {
    connection: Type.String({ minLength: 1, description: "Connection (in this namespace) the machines are reserved in. Cannot be changed." }),
    zone: Type.Optional(Type.String({ minLength: 1, description: "Zone of the reservation (default: the region's first zone, where clusters place machines). Cannot be changed." })),
    sizes: Type.Array(LeaseSize, { minItems: 1, description: "What is reserved, by size name. Cannot be changed." }),
    startTime: Type.Optional(Type.String({ description: "When the reservation starts (RFC 3339); default: as soon as it is made. Cannot be changed." })),
    endTime: Type.String({ description: "When the reservation ends (RFC 3339, after startTime): a cluster using the lease is deleted then. Cannot be changed." }),
  },
  { description: "Machines to reserve, where and when." },
);
export type LeaseSpec = Static<typeof LeaseSpecSchema>;

const LeaseReservation = Struct(
  {
    size: Type.String({ description: "The size it reserves." }),
    machineType: Type.String({ description: "Machine type reserved." }),
    count: Type.Integer({ description: "Machines reserved." }),
    zone: Type.String({ description: "Zone of the reservation." }),
    reservationId: Type.String({ description: "The cloud's id of the capacity reservation." }),
    inUse: Type.Optional(Type.Integer({ description: "Machines launched into it that hold a place now." })),
  },
  { description: "One capacity reservation made in the cloud." },
);
export type LeaseReservation = Static<typeof LeaseReservation>;

export const LeaseStatusSchema = Struct(
  {
    phase: Type.Optional(StringEnum(LEASE_PHASES, { description: "Pending (being reserved, or reserved and before its start), Active, Expired or Failed." })),
    reason: Type.Optional(Type.String({ description: "Why the lease failed or ended, e.g. InsufficientCapacity." })),
    message: Type.Optional(Type.String({ description: "Human-readable details of the reason." })),
    sizes: Type.Optional(MapOf(Type.String({ description: "Machine type." }), "Each size name mapped to the machine type reserved for it (azimuth's sizeNameMap).")),
    reservations: Type.Optional(Type.Array(LeaseReservation, { description: "The capacity reservations made, one per size." })),
    startTime: Type.Optional(Type.String({ description: "When the reservations start, as the cloud holds them." })),
    endTime: Type.Optional(Type.String({ description: "When the reservations end, as the cloud holds them." })),
    conditions: Type.Optional(Type.Array(Condition, { description: "Reserved and Active." })),
    observedGeneration: ObservedGeneration,
  },
  { description: "The observed state of the lease." },
);
export type LeaseStatus = Static<typeof LeaseStatusSchema>;

export const LeaseSchema = objectSchema(SLIPWAY_API_VERSION, "Lease", "Machines reserved in one connection for a time window.", {
  spec: LeaseSpecSchema,
  status: Type.Optional(LeaseStatusSchema),
});
export type LeaseObject = ObjectOf<typeof LeaseSchema>;

function timeErrors(field: string, value: string | undefined): { errors: FieldError[]; ms?: number } {
  if (value === undefined) return { errors: [] };
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) return { errors: [invalid(field, value, "must be an RFC 3339 time, e.g. 2026-01-01T12:00:00Z")] };
  return { errors: [], ms };
}

export function validateLease(lease: LeaseObject, old?: LeaseObject): FieldError[] {
  const { spec } = lease;
  const errors: FieldError[] = [];
  const start = timeErrors("spec.startTime", spec.startTime);
  const end = timeErrors("spec.endTime", spec.endTime);
  errors.push(...start.errors, ...end.errors);
  const startMs = start.ms ?? (spec.startTime === undefined ? Date.parse(lease.metadata.creationTimestamp ?? "") : undefined);
  if (end.ms !== undefined && startMs !== undefined && !Number.isNaN(startMs) && end.ms <= startMs) {
    errors.push(invalid("spec.endTime", spec.endTime, spec.startTime === undefined ? "must be after the lease is made (startTime defaults to then)" : `must be after spec.startTime (${spec.startTime})`));
  }
  const names = new Set<string>();
  spec.sizes.forEach((size, i) => {
    const field = `spec.sizes[${i}]`;
    errors.push(...dnsLabelErrors(`${field}.name`, size.name));
    if (names.has(size.name)) errors.push(duplicate(`${field}.name`, size.name));
    names.add(size.name);
    if (size.count < 1 || size.count > MAX_LEASE_COUNT) errors.push(invalid(`${field}.count`, size.count, `must be from 1 to ${MAX_LEASE_COUNT}`));
  });
  if (old) {
    const why = "a lease's reservations are made once; make another lease instead";
    errors.push(
      ...immutable("spec.connection", spec.connection, old.spec.connection, why),
      ...immutable("spec.zone", spec.zone, old.spec.zone, why),
      ...immutable("spec.sizes", spec.sizes, old.spec.sizes, why),
      ...immutable("spec.startTime", spec.startTime, old.spec.startTime, why),
      ...immutable("spec.endTime", spec.endTime, old.spec.endTime, why),
    );
  }
  return errors;
}

/** The reservation of the lease that machines of `machineType` in `connection` launch into, if it holds one. */
export function leaseReservationFor(lease: LeaseObject | undefined, connection: string, machineType: string): string | undefined {
  return leaseReservationOf(lease, connection, machineType)?.reservationId;
}

/** The lease's reservation a machine launches into (its id and its zone, where the machine must go). */
export function leaseReservationOf(lease: LeaseObject | undefined, connection: string, machineType: string): LeaseReservation | undefined {
  if (!lease || lease.spec.connection !== connection || lease.status?.phase !== "Active") return undefined;
  return lease.status.reservations?.find((r) => r.machineType === machineType);
}

export const leaseKind: KindDefinition<LeaseObject> = {
  ...slipwayKindBase,
  kind: "Lease",
  plural: "leases",
  singular: "lease",
  shortNames: ["ls"],
  schema: LeaseSchema,
  description: "Machines reserved in one connection for a time window; a Cluster naming it waits until it is Active and is deleted when it ends.",
  printerColumns: [
    fieldColumn("NAME", ".metadata.name", "Name of the lease."),
    fieldColumn("CONNECTION", ".spec.connection", "Connection the machines are reserved in."),
    fieldColumn("PHASE", ".status.phase", "Pending, Active, Expired or Failed."),
    computedColumn<LeaseObject>("SIZES", ".spec.sizes", "Sizes reserved: name=count×machine type.", (o) => o.spec.sizes.map((s) => `${s.name}=${s.count}×${s.machineType}`).join(",")),
    fieldColumn("START", ".status.startTime", "When the reservation starts."),
    fieldColumn("END", ".spec.endTime", "When the reservation ends."),
    ageColumn,
    fieldColumn("REASON", ".status.reason", "Why the lease failed or ended.", { priority: 1 }),
  ],
  validate: validateLease,
};
