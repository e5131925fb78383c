// `slipway describe cluster NAME`: the describe view of the cluster (views/describe.ts) drawn as
// `clusterctl describe cluster` draws it — a tree with READY, REASON, SINCE and MESSAGE — then its
// summary and conditions: why it is or is not Ready. `slipway describe logicalcloud NAME` draws a
// logical cloud alike (views/logicalcloud.ts): its member clusters and what was made on each, then its users.
import type { Command } from "commander";
import { describeCluster, type ClusterFamily, type TreeNode } from "../views/describe.ts";
import { getClusterFamily } from "./clusters.ts";
import type { LogicalCloudObject } from "../api/slipway/logicalcloud.ts";
import { describeLogicalCloud } from "../views/logicalcloud.ts";
import { addonsText } from "./services.ts";
import { findResource, objectPath, withSession } from "./connect.ts";
import { orNotFound } from "./errors.ts";
import { formatAge, renderTable } from "./output.ts";
import { UsageError } from "./usage.ts";

export function registerDescribeCommand(program: Command): void {
  program
    .command("describe")
    .description("show a cluster's (or a logical cloud's) objects as a tree with their readiness, and its conditions")
    .argument("<kind>", "cluster or logicalcloud")
    .argument("<name>", "name of the cluster or logical cloud")
    .action(async (kind: string, name: string, _flags: unknown, command: Command) => {
      await withSession(command, async (session) => {
        const resource = await findResource(session, kind);
        if (resource.kind === "LogicalCloud") {
          const cloud = await orNotFound(session.client.get<LogicalCloudObject>(await objectPath(session, resource, name)), resource, name, session.namespace);
          session.out.write(describeLogicalCloudText(cloud, Date.now()));
          return;
        }
        if (resource.kind !== "Cluster") {
          throw new UsageError(`describe shows clusters and logical clouds; for a ${resource.singularName}, try: slipway get ${resource.name} ${name} -o yaml`);
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

function treeTable(tree: TreeNode, now: number): string {
  const rows: { name: string; node: TreeNode }[] = [];
  flatten(tree, "", "", rows);
  return renderTable(
    ["NAME", "READY", "REASON", "SINCE", "MESSAGE"],
    rows.map(({ name, node }) => [name, node.ready, node.reason, node.since ? formatAge(node.since, now) : "", node.message]),
  );
}

export function describeLogicalCloudText(cloud: LogicalCloudObject, now: number): string {
  const { tree, users } = describeLogicalCloud(cloud);
  const lines = [treeTable(tree, now)];
  if (users.length > 0) {
    const table = renderTable(
      ["USER", "CLUSTERS", "KUBECONFIG"],
      users.map((u) => [u.name, u.clusters.join(",") || "(none yet)", `slipway kubeconfig --logical-cloud ${cloud.metadata.name} --user ${u.name}`]),
    );
    lines.push(`\nUsers:\n${table.replace(/^/gm, "  ")}`);
  }
  return lines.join("");
}

export function describeClusterText(family: ClusterFamily, now: number): string {
  const { tree, summary, conditions } = describeCluster(family);
  const lines = [treeTable(tree, now)];
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
  lines.push(addonsText(family.cluster));
  return lines.join("");
}
