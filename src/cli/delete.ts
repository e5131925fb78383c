// `slipway delete KIND NAME [--wait]`: deletes an object; with --wait, follows it until it is gone (for a
// cluster, each step of taking its machines and cloud resources down).
import type { Command } from "commander";
import type { KubeObject } from "../kubeclient/index.ts";
import { findResource, objectPath, withSession, type Session } from "./connect.ts";
import { CliError, orNotFound } from "./errors.ts";
import { followCluster, waitUntilGone } from "./follow.ts";
import { resourceLabel } from "./output.ts";
import { progressReporter } from "./progress.ts";
import { parseDuration } from "./usage.ts";

interface DeleteFlags {
  wait?: boolean;
  timeout: string;
}

export function registerDeleteCommand(program: Command): void {
  program
    .command("delete")
    .description("delete an object; a cluster takes its machines and cloud resources with it")
    .argument("<kind>", "kind, plural or short name: cluster, cl, connection, …")
    .argument("<name>", "name of the object")
    .option("--wait", "follow the deletion until the object is gone")
    .option("--timeout <duration>", "how long --wait waits, e.g. 90s, 30m", "30m")
    .action(async (kind: string, name: string, flags: DeleteFlags, command: Command) => {
      const timeoutMs = parseDuration(flags.timeout, "--timeout");
      await withSession(command, (session) => runDelete(session, kind, name, { wait: flags.wait === true, timeoutMs, timeoutText: flags.timeout }));
    });
}

function isHeld(answer: unknown): answer is KubeObject {
  const object = answer as Partial<KubeObject> | undefined;
  return object?.kind !== undefined && object.kind !== "Status" && (object.metadata?.finalizers?.length ?? 0) > 0;
}

async function runDelete(session: Session, kind: string, name: string, options: { wait: boolean; timeoutMs: number; timeoutText: string }): Promise<void> {
  const resource = await findResource(session, kind);
  const label = `${resourceLabel(resource)} "${name}"`;
  const path = await objectPath(session, resource, name);
  const answer = await orNotFound(session.client.delete<unknown>(path), resource, name, session.namespace);
  if (!options.wait) {
    session.out.write(isHeld(answer) ? `${label} deleting (finalizers: ${answer.metadata.finalizers!.join(", ")}); follow it with --wait\n` : `${label} deleted\n`);
    return;
  }
  let gone: boolean;
  if (resource.kind === "Cluster" && resource.group === "slipway.dev") {
    const reporter = progressReporter(session.out);
    try {
      const outcome = await followCluster(session.client, { namespace: session.namespace, name, goal: "deleted", timeoutMs: options.timeoutMs, reporter });
      gone = outcome.result === "deleted";
    } finally {
      reporter.close();
    }
  } else {
    const collection = await objectPath(session, resource);
    gone = await waitUntilGone(session.client, collection, name, options.timeoutMs, (why) => session.err.write(`lost the API (${why}); retrying\n`));
  }
  if (!gone) throw new CliError(`${label} was still there after ${options.timeoutText}`);
  session.out.write(`${label} deleted\n`);
}
