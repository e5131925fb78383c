// `slipway events CLUSTER`: what happened to the cluster and to every object made for it, oldest first.
import type { Command } from "commander";
import type { EventObject, OperationObject } from "../api/kinds.ts";
import { getClusterFamily, slipwayPath } from "./clusters.ts";
import { withSession, type Session } from "./connect.ts";
import { formatAge, renderTable } from "./output.ts";

export function registerEventsCommand(program: Command): void {
  program
    .command("events")
    .description("list the events of a cluster and of the objects made for it, oldest first")
    .argument("<cluster>", "name of the cluster")
    .action(async (name: string, _flags: unknown, command: Command) => {
      await withSession(command, async (session) => {
        const text = await clusterEventsText(session, name);
        if (text === undefined) session.err.write(`No events for cluster ${name} in namespace ${session.namespace}.\n`);
        else session.out.write(text);
      });
    });
}

/** When an event last happened, whichever time its reporter filled in. */
export function eventTime(event: EventObject): string {
  return event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp ?? event.metadata.creationTimestamp ?? "";
}

/** Oldest first; events of the same second keep the order the server stored them in. */
export function sortEvents(events: EventObject[]): EventObject[] {
  const stored = (e: EventObject) => Number(e.metadata.resourceVersion ?? 0);
  return [...events].sort((a, b) => Date.parse(eventTime(a)) - Date.parse(eventTime(b)) || stored(a) - stored(b));
}

async function clusterEventsText(session: Session, name: string): Promise<string | undefined> {
  const family = await getClusterFamily(session, name);
  const { client, namespace } = session;
  const operations = await client.listAll<OperationObject>(await slipwayPath(client, "Operation", namespace));
  const involved = new Set<string>([
    `Cluster/${name}`,
    ...family.infrastructures.map((o) => `Infrastructure/${o.metadata.name}`),
    ...family.pools.map((o) => `MachinePool/${o.metadata.name}`),
    ...family.machines.map((o) => `Machine/${o.metadata.name}`),
    ...operations.filter((o) => o.spec.target.kind === "Cluster" && o.spec.target.name === name).map((o) => `Operation/${o.metadata.name}`),
  ]);
  const eventsPath = await client.resourcePath({ apiVersion: "v1", kind: "Event", namespace });
  const events = (await client.listAll<EventObject>(eventsPath)).filter((e) => involved.has(`${e.involvedObject.kind}/${e.involvedObject.name}`));
  if (events.length === 0) return undefined;
  const now = Date.now();
  return renderTable(
    ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
    sortEvents(events).map((e) => [
      formatAge(eventTime(e), now),
      e.type ?? "",
      e.reason ?? "",
      `${(e.involvedObject.kind ?? "").toLowerCase()}/${e.involvedObject.name ?? ""}`,
      (e.message ?? "").replace(/\s*\n\s*/g, " "),
    ]),
  );
}
