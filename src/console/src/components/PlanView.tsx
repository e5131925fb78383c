// A plan as a person reviews it before pressing Create: problems first, then cost, expected time, quota,
// the cloud resources per connection and the machines.
import type { ClusterPlanStatus } from "../../../api/slipway/clusterplan.ts";
import { formatDuration, money } from "../format.ts";
import { DataTable } from "./DataTable.tsx";

const KIND_NAMES: Record<string, string> = {
  network: "Network",
  subnet: "Subnet",
  securityGroup: "Security group",
  keyPair: "Key pair",
  loadBalancer: "Load balancer",
  publicIp: "Public address",
};

const QUOTA_NAMES: Record<string, string> = { vcpus: "vCPUs", instances: "Instances", networks: "Networks", loadBalancers: "Load balancers", publicIps: "Public addresses" };

function signed(dollars: number): string {
  return `${dollars >= 0 ? "+" : "−"}${money(Math.abs(dollars))}`;
}

export function PlanView({ plan }: { plan: ClusterPlanStatus }) {
  const { cost, estimate } = plan;
  return (
    <section class="plan" aria-labelledby="plan-title" data-testid="plan">
      <h2 id="plan-title">Plan {plan.action === "Update" ? "of the change" : ""}</h2>
      {plan.problems.length > 0 && (
        <div class="notice error" role="alert" data-testid="plan-problems">
          <strong>{plan.problems.length === 1 ? "1 problem" : `${plan.problems.length} problems`} to fix before it can be built</strong>
          <ul class="causes">
            {plan.problems.map((p, i) => (
              <li key={i}>
                <code class="field">{p.field}</code> {p.message}
              </li>
            ))}
          </ul>
        </div>
      )}
      <dl class="facts plan-summary">
        <div>
          <dt>Cost per hour</dt>
          <dd data-testid="plan-hourly">{money(cost.hourly, 4)}</dd>
        </div>
        <div>
          <dt>Cost per month</dt>
          <dd data-testid="plan-monthly">{money(cost.monthly)}</dd>
        </div>
        {cost.delta && (
          <div>
            <dt>Change per month</dt>
            <dd data-testid="plan-delta">{signed(cost.delta.monthly)}</dd>
          </div>
        )}
        <div>
          <dt>{plan.action === "Update" ? "Expected time to apply" : "Expected time to Running"}</dt>
          <dd data-testid="plan-time">{formatDuration(estimate.seconds * 1000)}</dd>
        </div>
      </dl>
      {estimate.criticalPath.length > 0 && (
        <p class="muted">
          Critical path: {estimate.criticalPath.map((s) => `${s.step} (${formatDuration(s.seconds * 1000)})`).join(" → ")}. {estimate.basis.join("; ")}.
        </p>
      )}
      {cost.unpriced.length > 0 && <p class="muted">Not priced by the provider: {cost.unpriced.join(", ")}.</p>}

      <h3>Cost</h3>
      <DataTable columns={["Item", "Connection", { label: "Count", numeric: true }, { label: "Each / h", numeric: true }, { label: "Per hour", numeric: true }]}>
            {cost.lines.map((l, i) => (
              <tr key={i}>
                <th scope="row">{l.item === "machines" ? `Machines ${l.type ?? ""}` : (KIND_NAMES[l.item.replace(/s$/, "")] ?? l.item)}</th>
                <td>{l.connection}</td>
                <td class="num">{l.count}</td>
                <td class="num">{money(l.unitHourly, 4)}</td>
                <td class="num">{money(l.hourly, 4)}</td>
              </tr>
            ))}
      </DataTable>

      <h3>Quota</h3>
      <DataTable testId="plan-quota" columns={["Connection", "Resource", { label: "Needed", numeric: true }, { label: "Free", numeric: true }, { label: "Limit", numeric: true }]}>
            {plan.quota.map((q) => (
              <tr key={`${q.connection}/${q.resource}`} class={q.sufficient ? "" : "short"}>
                <td>{q.connection}</td>
                <th scope="row">{QUOTA_NAMES[q.resource] ?? q.resource}</th>
                <td class="num">{q.needed}</td>
                <td class="num">
                  {q.free} {q.sufficient ? "" : "✗ short"}
                </td>
                <td class="num">{q.limit}</td>
              </tr>
            ))}
      </DataTable>

      <h3>Cloud resources</h3>
      {plan.resources.length === 0 ? (
        <p class="muted">No cloud resource changes.</p>
      ) : (
        <ul class="resources">
          {plan.resources.map((r, i) => (
            <li key={i} data-change={r.change}>
              <span class={`change ${r.change.toLowerCase()}`}>{r.change}</span> {KIND_NAMES[r.kind] ?? r.kind} in {r.connection}
              {r.detail ? <span class="muted"> · {r.detail}</span> : null}
            </li>
          ))}
        </ul>
      )}

      <h3>Machines</h3>
      {plan.unchangedMachines ? <p class="muted">{plan.unchangedMachines} machines stay as they are.</p> : null}
      <DataTable testId="plan-machines" columns={["Change", "Machine", "Type", "Connection", "Zone", { label: "Per hour", numeric: true }]}>
            {plan.machines.map((m) => (
              <tr key={m.name} data-change={m.change}>
                <td>
                  <span class={`change ${m.change.toLowerCase()}`}>{m.change}</span>
                </td>
                <th scope="row">{m.name}</th>
                <td>{m.machineType}</td>
                <td>{m.connection}</td>
                <td>{m.zone ?? "—"}</td>
                <td class="num">{m.hourlyPrice === undefined ? "—" : money(m.hourlyPrice, 4)}</td>
              </tr>
            ))}
      </DataTable>
    </section>
  );
}
