// The timeline as a Gantt chart: each step a bar from its start to its end on one axis from the cluster's
// creation; the critical path (the chain of steps that decided when the last one ended) highlighted.
import type { ClusterObject } from "../../../api/kinds.ts";
import { formatDuration } from "../format.ts";
import { criticalPath, settledSteps, stepEnd } from "../views.ts";

export function Gantt({ cluster, now }: { cluster: ClusterObject; now: number }) {
  const steps = settledSteps(cluster);
  if (steps.length === 0) return <p class="muted">No steps recorded yet.</p>;
  const origin = Math.min(Date.parse(cluster.metadata.creationTimestamp ?? steps[0]!.startedAt), ...steps.map((s) => Date.parse(s.startedAt)));
  const finish = Math.max(...steps.map((s) => stepEnd(s, now)));
  const span = Math.max(finish - origin, 1000);
  const critical = new Set(criticalPath(steps, now).map((s) => `${s.name}@${s.startedAt}`));
  const pct = (t: number) => `${((t - origin) / span) * 100}%`;
  const busy = steps.filter((s) => critical.has(`${s.name}@${s.startedAt}`)).reduce((sum, s) => sum + stepEnd(s, now) - Date.parse(s.startedAt), 0);
  return (
    <figure class="gantt" aria-label="Timeline of the cluster's steps">
      <div class="gantt-axis" aria-hidden="true">
        {[0, 0.25, 0.5, 0.75, 1].map((f) => (
          <span key={f} style={{ left: `${f * 100}%` }}>
            {formatDuration(span * f)}
          </span>
        ))}
      </div>
      <ol class="gantt-rows">
        {steps.map((s) => {
          const start = Date.parse(s.startedAt);
          const end = stepEnd(s, now);
          const onPath = critical.has(`${s.name}@${s.startedAt}`);
          const state = s.outcome === "Failed" ? "failed" : s.outcome === "Running" ? "running" : "done";
          const label = `${s.name}: ${formatDuration(start - origin)} → ${s.finishedAt || s.outcome === "Failed" ? formatDuration(end - origin) : "running"}${onPath ? " (critical path)" : ""}`;
          return (
            <li key={`${s.name}@${s.startedAt}`} class={`gantt-row ${state}${onPath ? " critical" : ""}`} data-step={s.name} data-critical={onPath ? "true" : "false"}>
              <span class="gantt-label" title={s.target ? `${s.target.kind}/${s.target.name}` : s.name}>
                {s.name}
              </span>
              <span class="gantt-track">
                <span class="gantt-bar" style={{ left: pct(start), width: `max(3px, ${((end - start) / span) * 100}%)` }} title={s.message ? `${label} — ${s.message}` : label} aria-label={label} role="img" />
              </span>
              <span class="gantt-time">{s.finishedAt || s.outcome === "Failed" ? formatDuration(end - start) : "…"}</span>
            </li>
          );
        })}
      </ol>
      <figcaption>
        <span class="legend critical-swatch" /> critical path: {formatDuration(busy)} of {formatDuration(finish - origin)} · <span class="legend running-swatch" /> running · <span class="legend failed-swatch" /> failed
      </figcaption>
    </figure>
  );
}
