// The sim provider's capacity reservations: the sim cloud's reservations (scheduled → active → expired or
// cancelled) through the reservations capability of the contract.
import type { Reservation } from "../../simcloud/reservation-service.ts";
import type * as Sim from "../../simcloud/types.ts";
import type { CreateOptions, ReservationInfo, ReservationPhase, ReservationSpec, Reservations, Tags } from "../provider.ts";
import { unlessNotFound } from "./errors.ts";

/** Runs one cloud call, turning a failure into a classified ProviderError saying what was attempted. */
export type CloudCall = <R>(what: string, run: () => Promise<R>) => Promise<R>;

function phaseOf(state: Reservation["state"]): ReservationPhase {
  return state === "scheduled" ? "scheduled" : state === "active" ? "active" : "ended";
}

export function reservationInfo(r: Reservation): ReservationInfo {
  return {
    id: r.id,
    phase: phaseOf(r.state),
    cloudState: r.state,
    zone: r.zone,
    machineType: r.machineType,
    count: r.instanceCount,
    inUse: r.instancesInUse ?? 0,
    startTime: r.startTime,
    endTime: r.endTime,
    tags: { ...r.tags },
  };
}

export class SimReservations implements Reservations {
  constructor(
    private readonly api: Sim.CloudApi,
    private readonly region: string,
    private readonly call: CloudCall,
  ) {}

  async create(spec: ReservationSpec, { token, tags }: CreateOptions): Promise<ReservationInfo> {
    const created = await this.call(`reserve ${spec.count} × ${spec.machineType} in ${spec.zone}`, () =>
      this.api.createReservation(this.region, {
        zone: spec.zone,
        machineType: spec.machineType,
        instanceCount: spec.count,
        startTime: spec.startTime,
        endTime: spec.endTime,
        tags,
        clientToken: token,
      }),
    );
    return reservationInfo(created);
  }

  async get(id: string): Promise<ReservationInfo | undefined> {
    const found = await unlessNotFound(() => this.call(`get capacity reservation ${id}`, () => this.api.getReservation(this.region, id)));
    return found && reservationInfo(found);
  }

  async findTagged(tags: Tags): Promise<ReservationInfo[]> {
    const found = await this.call("list capacity reservations", () => this.api.listReservations(this.region, { tags }));
    return found.map(reservationInfo);
  }

  async delete(id: string): Promise<void> {
    await unlessNotFound(() => this.call(`cancel capacity reservation ${id}`, () => this.api.deleteReservation(this.region, id)));
  }

}
