// The events view of a cluster: what happened to it and to every object made for it (its
// infrastructures, pools, machines and operations), oldest first.
import type { EventObject, OperationObject } from "../api/kinds.ts";
import type { ClusterFamily } from "./describe.ts";

/** When an event last happened, whichever time its reporter filled in. */
export function eventTime(event: EventObject): string {
  return event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp ?? event.metadata.creationTimestamp ?? "";
}

/** Oldest first; events of the same second keep the order the server stored them in. */
export function sortEvents(events: readonly EventObject[]): EventObject[] {
  const stored = (e: EventObject) => Number(e.metadata.resourceVersion ?? 0);
  return [...events].sort((a, b) => Date.parse(eventTime(a)) - Date.parse(eventTime(b)) || stored(a) - stored(b));
}

/** The events (of those given) about the cluster or an object made for it, oldest first. */
export function clusterEvents(family: ClusterFamily, operations: readonly OperationObject[], events: readonly EventObject[]): EventObject[] {
  const name = family.cluster.metadata.name;
  const involved = new Set<string>([
    `Cluster/${name}`,
    ...family.infrastructures.map((o) => `Infrastructure/${o.metadata.name}`),
    ...family.pools.map((o) => `MachinePool/${o.metadata.name}`),
    ...family.machines.map((o) => `Machine/${o.metadata.name}`),
    ...operations.filter((o) => o.spec.target.kind === "Cluster" && o.spec.target.name === name).map((o) => `Operation/${o.metadata.name}`),
  ]);
  return sortEvents(events.filter((e) => involved.has(`${e.involvedObject.kind}/${e.involvedObject.name}`)));
}
