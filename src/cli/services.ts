// `slipway services CLUSTER`: the user-facing services of a cluster's addons, with the URL Slipway serves
// each at (the control plane's HTTPS endpoint, for callers allowed to see the cluster); and the addons
// and services tables `slipway describe cluster` shows.
import type { Command } from "commander";
import type { ClusterObject } from "../api/kinds.ts";
import { getCluster } from "./clusters.ts";
import { withSession } from "./connect.ts";
import { renderTable } from "./output.ts";

/** The cluster's addons and services as indented tables (empty when it has none). */
export function addonsText(cluster: ClusterObject): string {
  const lines: string[] = [];
  const addons = cluster.status?.addons ?? [];
  if (addons.length > 0) {
    const table = renderTable(["ADDON", "VERSION", "PHASE", "MESSAGE"], addons.map((a) => [a.name, a.version ?? "", a.phase, a.message ?? ""]));
    lines.push(`\nAddons:\n${table.replace(/^/gm, "  ")}`);
  }
  const services = cluster.status?.services ?? [];
  if (services.length > 0) lines.push(`\nServices:\n${servicesTable(cluster).replace(/^/gm, "  ")}`);
  return lines.join("");
}

function servicesTable(cluster: ClusterObject): string {
  return renderTable(
    ["NAME", "LABEL", "ADDON", "URL"],
    (cluster.status?.services ?? []).map((s) => [s.name, s.label, s.addon, s.url]),
  );
}

export function registerServicesCommand(program: Command): void {
  program
    .command("services")
    .description("list the services a cluster's addons expose, with the URL Slipway serves each at")
    .argument("<cluster>", "name of the cluster")
    .action(async (name: string, _flags: unknown, command: Command) => {
      await withSession(command, async (session) => {
        const cluster = await getCluster(session, name);
        if ((cluster.status?.services ?? []).length === 0) {
          session.out.write(`cluster ${name} exposes no services (an addon declares them: spec.services, or its bundle's)\n`);
          return;
        }
        session.out.write(servicesTable(cluster));
      });
    });
}
