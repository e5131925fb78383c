// `slipway describe cluster NAME`: the describe view of the cluster (views/describe.ts) drawn as
// `clusterctl describe cluster` draws it — a tree with READY, REASON, SINCE and MESSAGE — then its
// summary and conditions: why it is or is not Ready.
import type { Command } from "commander";
import { describeCluster, type ClusterFamily, type TreeNode } from "../views/describe.ts";
import { getClusterFamily } from "./clusters.ts";
import { findResource, withSession } from "./connect.ts";
import { formatAge, renderTable } from "./output.ts";
import { UsageError } from "./usage.ts";

export function registerDescribeCommand(program: Command): void {
  program
    .command("describe")
    .description("show a cluster's objects as a tree with their readiness, and its conditions")
    .argument("<kind>", "cluster (the only kind described)")
    .argument("<name>", "name of the cluster")
    .action(async (kind: string, name: string, _flags: unknown, command: Command) => {
      await withSession(command, async (session) => {
        const resource = await findResource(session, kind);
        if (resource.kind !== "Cluster") {
          throw new UsageError(`describe shows clusters only; for a ${resource.singularName}, try: slipway get ${resource.name} ${name} -o yaml`);
        }
        const family = await getClusterFamily(session, name);
        session.out.write(describeClusterText(family, Date.now()));
      });
    });
}

/** Tree rows: NAME drawn with ├─ └─ │ as clusterctl draws it. */
function flatten(node: TreeNode, prefix: string, branch: string, rows: { name: string; node: TreeNode }[]): void {
  rows.push({ name: `${prefix}${branch}${node.label}`, node });
  const childPrefix = prefix + (branch === "" ? "" : branch === "└─" ? "  " : "│ ");
  node.children.forEach((child, i) => flatten(child, childPrefix, i === node.children.length - 1 ? "└─" : "├─", rows));
}

export function describeClusterText(family: ClusterFamily, now: number): string {
  const { tree, summary, conditions } = describeCluster(family);
  const rows: { name: string; node: TreeNode }[] = [];
  flatten(tree, "", "", rows);
  const lines = [
    renderTable(
      ["NAME", "READY", "REASON", "SINCE", "MESSAGE"],
      rows.map(({ name, node }) => [name, node.ready, node.reason, node.since ? formatAge(node.since, now) : "", node.message]),
    ),
  ];
  const summaryLines = [`Phase:      ${summary.phase}${summary.reason ? ` (${summary.reason}${summary.message ? `: ${summary.message}` : ""})` : ""}`];
  summaryLines.push(`Version:    ${summary.version}`);
  if (summary.endpoint) summaryLines.push(`Endpoint:   ${summary.endpoint}`);
  if (summary.kubeconfigSecretName) summaryLines.push(`Kubeconfig: slipway kubeconfig ${family.cluster.metadata.name} (Secret ${summary.kubeconfigSecretName})`);
  if (summary.operation) summaryLines.push(`Operation:  ${summary.operation}`);
  lines.push(`\n${summaryLines.join("\n")}\n`);
  if (conditions.length > 0) {
    const table = renderTable(
      ["TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"],
      conditions.map((c) => [c.type, c.status, c.reason ?? "", c.lastTransitionTime ? formatAge(c.lastTransitionTime, now) : "", c.message ?? ""]),
    );
    lines.push(`\nConditions:\n${table.replace(/^/gm, "  ")}`);
  } else {
    lines.push("\nConditions: none reported yet (is the cluster controller running?)\n");
  }
  return lines.join("");
}
