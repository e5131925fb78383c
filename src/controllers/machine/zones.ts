// Where a machine goes: the zones its infrastructure has a subnet in, spread. A machine is placed in the
// zone holding the fewest of its siblings — the machines of the same cluster, connection, role and pool
// that are not failed or on their way out — the region's order breaking ties. Siblings not placed yet
// that come before it (oldest first, then by name) are counted where they will go, so machines made
// together (a control plane of 3, a new pool) take one zone each in turn, whichever is reconciled first.
// A replacement finds one zone short of its share, the zone of the machine it replaces, and goes there.
import type { MachineObject } from "../../api/kinds.ts";

function sameGroup(a: MachineObject, b: MachineObject): boolean {
  return (
    a.spec.clusterName === b.spec.clusterName &&
    a.spec.connection === b.spec.connection &&
    a.spec.role === b.spec.role &&
    (a.spec.pool ?? "") === (b.spec.pool ?? "")
  );
}

function counts(machine: MachineObject): boolean {
  return !machine.metadata.deletionTimestamp && machine.status?.phase !== "Failed";
}

function order(a: MachineObject, b: MachineObject): number {
  return (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");
}

/** The zone for `machine` among `zones` (undefined when there is none), given the machines of its cluster. */
export function zoneFor(machine: MachineObject, zones: readonly string[], machines: readonly MachineObject[]): string | undefined {
  if (machine.status?.zone && zones.includes(machine.status.zone)) return machine.status.zone;
  if (zones.length <= 1) return zones[0];
  const load = new Map(zones.map((zone) => [zone, 0]));
  const least = () => zones.reduce((best, zone) => (load.get(zone)! < load.get(best)! ? zone : best));
  const siblings = machines.filter((m) => m.metadata.uid !== machine.metadata.uid && sameGroup(m, machine) && counts(m));
  for (const m of siblings) {
    const zone = m.status?.zone;
    if (zone && load.has(zone)) load.set(zone, load.get(zone)! + 1);
  }
  const unplaced = siblings.filter((m) => !m.status?.zone && order(m, machine) < 0).length;
  for (let placed = 0; placed < unplaced; placed++) {
    const zone = least();
    load.set(zone, load.get(zone)! + 1);
  }
  return least();
}
