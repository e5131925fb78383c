// `slipway events CLUSTER`: the events view of the cluster (views/events.ts) as a table — what happened
// to it and to every object made for it, oldest first.
import type { Command } from "commander";
import type { EventObject, OperationObject } from "../api/kinds.ts";
import { clusterEvents, eventTime } from "../views/events.ts";
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

async function clusterEventsText(session: Session, name: string): Promise<string | undefined> {
  const family = await getClusterFamily(session, name);
  const { client, namespace } = session;
  const operations = await client.listAll<OperationObject>(await slipwayPath(client, "Operation", namespace));
  const eventsPath = await client.resourcePath({ apiVersion: "v1", kind: "Event", namespace });
  const events = clusterEvents(family, operations, await client.listAll<EventObject>(eventsPath));
  if (events.length === 0) return undefined;
  const now = Date.now();
  return renderTable(
    ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
    events.map((e) => [
      formatAge(eventTime(e), now),
      e.type ?? "",
      e.reason ?? "",
      `${(e.involvedObject.kind ?? "").toLowerCase()}/${e.involvedObject.name ?? ""}`,
      (e.message ?? "").replace(/\s*\n\s*/g, " "),
    ]),
  );
}
