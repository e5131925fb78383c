// `slipway plan -f FILE [-o json]`: what applying the manifest would do to each Cluster in it, before
// anything is built — the cloud resources per connection, the machines with types and zones, the quota
// taken next to what is free, every problem validation would report, the cost per hour and month, and
// the expected time to Running. For a cluster that exists, only what changes, and the cost's change.
// It asks the API (a Cluster's `plan` subresource), so the console and scripts see the same plan.
import type { Command } from "commander";
import type { ClusterPlanObject, ClusterPlanStatus } from "../api/slipway/clusterplan.ts";
import type { KubeObject } from "../kubeclient/index.ts";
import { readManifest } from "./apply.ts";
import { SLIPWAY_API_VERSION } from "../api/slipway/group.ts";
import { slipwayPath } from "./clusters.ts";
import { withSession, type Session } from "./connect.ts";
import { ReportedFailure } from "./errors.ts";
import { formatDuration } from "../views/duration.ts";
import { renderTable } from "./output.ts";
import { UsageError } from "./usage.ts";

interface PlanFlags {
  filename: string;
  output?: string;
}

const QUOTA_NAMES: Record<string, string> = { vcpus: "vCPUs", instances: "instances", networks: "networks", loadBalancers: "load balancers", publicIps: "public addresses" };
const ITEM_NAMES: Record<string, string> = { machines: "machines", loadBalancers: "load balancer", publicIps: "public address" };

export function registerPlanCommand(program: Command): void {
  program
    .command("plan")
    .description("show what applying a manifest would build, what it costs and how long it takes, without building anything")
    .requiredOption("-f, --filename <file>", "manifest (YAML or JSON), a directory of them, or - for stdin")
    .option("-o, --output <format>", "json for the plans as the API answers them")
    .action(async (flags: PlanFlags, command: Command) => {
      if (flags.output !== undefined && flags.output !== "json") throw new UsageError(`--output must be json (got "${flags.output}")`);
      const manifest = readManifest(flags.filename).map((m) => m.object);
      const clusters = manifest.filter((o) => o.kind === "Cluster" && o.apiVersion === SLIPWAY_API_VERSION);
      if (clusters.length === 0) throw new UsageError(`${flags.filename} declares no Cluster to plan`);
      await withSession(command, async (session) => {
        const explicit = command.optsWithGlobals<{ namespace?: string }>().namespace;
        const plans: ClusterPlanObject[] = [];
        for (const cluster of clusters) plans.push(await requestPlan(session, cluster, manifest, explicit));
        if (flags.output === "json") {
          const body = plans.length === 1 ? plans[0] : { apiVersion: "v1", kind: "List", items: plans };
          session.out.write(`${JSON.stringify(body, null, 2)}\n`);
        } else {
          session.out.write(plans.map(renderPlan).join("\n"));
        }
        if (plans.some((p) => (p.status?.problems.length ?? 0) > 0)) throw new ReportedFailure();
      });
    });
}

async function requestPlan(session: Session, cluster: KubeObject, manifest: KubeObject[], explicit: string | undefined): Promise<ClusterPlanObject> {
  const namespace = explicit || cluster.metadata?.namespace || session.namespace;
  const name = cluster.metadata?.name ?? "";
  if (!name) throw new UsageError("a Cluster in the manifest has no metadata.name");
  // Connections of the same manifest (in the cluster's namespace) are planned as they would be applied.
  const connections = manifest.filter((o) => o.kind === "Connection" && (explicit || o.metadata?.namespace || session.namespace) === namespace);
  const body = {
    apiVersion: SLIPWAY_API_VERSION,
    kind: "ClusterPlan",
    metadata: { name, namespace },
    spec: { cluster: { ...cluster, metadata: { ...cluster.metadata, namespace } }, ...(connections.length > 0 ? { connections: connections.map((c) => ({ ...c, metadata: { ...c.metadata, namespace } })) } : {}) },
  };
  const path = `${await slipwayPath(session.client, "Cluster", namespace, name)}/plan`;
  return (await session.client.raw<ClusterPlanObject>("POST", path, body)).body;
}

function dollars(value: number, digits = 4): string {
  return `$${value.toFixed(digits)}`;
}

function signed(value: number, digits: number): string {
  return `${value < 0 ? "-" : "+"}${dollars(Math.abs(value), digits)}`;
}

function indent(text: string): string {
  return text.replace(/^(?=.)/gm, "  ");
}

/** A plan as people read it: sections of aligned columns, the sums, the time, and the problems last. */
export function renderPlan(plan: ClusterPlanObject): string {
  const st = plan.status as ClusterPlanStatus;
  const name = `cluster/${plan.metadata.name}`;
  const lines: string[] = [];
  const counts = (change: string) => st.machines.filter((m) => m.change === change).length;
  if (st.action === "Create") {
    lines.push(`${name} (namespace ${plan.metadata.namespace}): will be created`);
  } else if (st.action === "Unchanged") {
    lines.push(`${name} (namespace ${plan.metadata.namespace}): no change`);
  } else {
    lines.push(
      `${name} (namespace ${plan.metadata.namespace}): will be changed — ${counts("Create")} machine(s) added, ${counts("Replace")} replaced, ${counts("Remove")} removed; ${st.unchangedMachines ?? 0} unchanged`,
    );
  }
  if (st.resources.length > 0) {
    lines.push("", "Cloud resources:");
    lines.push(indent(renderTable(["CONNECTION", "RESOURCE", "CHANGE", "DETAIL"], st.resources.map((r) => [r.connection, r.kind, r.change, r.detail ?? r.id ?? ""]))).trimEnd());
  }
  if (st.machines.length > 0) {
    lines.push("", "Machines:");
    lines.push(
      indent(
        renderTable(
          ["MACHINE", "ROLE", "TYPE", "CONNECTION", "ZONE", "PER HOUR", "CHANGE"],
          st.machines.map((m) => [m.name, m.role, m.machineType, m.connection, m.zone ?? "", m.hourlyPrice === undefined ? "?" : dollars(m.hourlyPrice), m.change]),
        ),
      ).trimEnd(),
    );
  }
  if (st.quota.length > 0) {
    lines.push("", "Quota:");
    lines.push(
      indent(
        renderTable(
          ["CONNECTION", "RESOURCE", "NEEDED", "FREE", "LIMIT", ""],
          st.quota.map((q) => [q.connection, QUOTA_NAMES[q.resource] ?? q.resource, String(q.needed), String(q.free), String(q.limit), q.sufficient ? "ok" : `short by ${q.needed - q.free}`]),
        ),
      ).trimEnd(),
    );
  }
  const cost = st.cost;
  lines.push("", "Cost (USD, catalogue prices):");
  // A change shows what it adds to or takes from the bill; a new cluster, every line of it.
  if (cost.lines.length > 0 && st.action === "Create") {
    lines.push(
      indent(
        renderTable(
          ["ITEM", "CONNECTION", "COUNT", "EACH PER HOUR", "PER HOUR"],
          cost.lines.map((l) => [l.item === "machines" ? `machines ${l.type ?? ""}` : (ITEM_NAMES[l.item] ?? l.item), l.connection, String(l.count), dollars(l.unitHourly), dollars(l.hourly)]),
        ),
      ).trimEnd(),
    );
  }
  lines.push(`  total: ${dollars(cost.hourly)} per hour, ${dollars(cost.monthly, 2)} per month`);
  if (cost.before && cost.delta) {
    lines.push(`  change: ${dollars(cost.before.hourly)} → ${dollars(cost.hourly)} per hour (${signed(cost.delta.hourly, 4)} per hour, ${signed(cost.delta.monthly, 2)} per month)`);
  }
  if (cost.unpriced.length > 0) lines.push(`  not priced by the provider: ${cost.unpriced.join(", ")}`);
  const est = st.estimate;
  lines.push("", `${st.action === "Create" ? "Expected time to Running" : "Expected time to apply"}: ${formatDuration(est.seconds * 1000)}`);
  if (est.criticalPath.length > 0) lines.push(`  critical path: ${est.criticalPath.map((s) => `${s.step} ${formatDuration(s.seconds * 1000)}`).join(" → ")}`);
  for (const basis of est.basis) lines.push(`  ${basis}`);
  lines.push("", st.problems.length === 0 ? "Problems: none" : `Problems (${st.problems.length}):`);
  for (const p of st.problems) lines.push(`  ✗ ${p.field}: ${p.message}`);
  return `${lines.join("\n")}\n`;
}
