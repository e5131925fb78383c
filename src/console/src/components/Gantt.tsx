// The timeline as a Gantt chart: each step a bar from its start to its end on one axis from the cluster's
// creation; the critical path (the chain of steps that decided when the last one ended) highlighted.
import type { ClusterObject } from "../../../api/kinds.ts";
import { formatDuration } from "../format.ts";
import { clusterTimeline } from "../../../views/timeline.ts";

export function Gantt({ cluster, now }: { cluster: ClusterObject; now: number }) {
  const view = clusterTimeline(cluster, now);
  const { steps, origin } = view;
  if (steps.length === 0) return <p class="muted">No steps recorded yet.</p>;
  const span = Math.max(view.spanMs, 1000);
  const pct = (t: number) => `${((t - origin) / span) * 100}%`;
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
          const state = s.outcome === "Failed" ? "failed" : s.outcome === "Running" ? "running" : "done";
          const label = `${s.name}: ${formatDuration(s.start - origin)} → ${s.finished ? formatDuration(s.end - origin) : "running"}${s.critical ? " (critical path)" : ""}`;
          return (
            <li key={`${s.name}@${s.start}`} class={`gantt-row ${state}${s.critical ? " critical" : ""}`} data-step={s.name} data-critical={s.critical ? "true" : "false"}>
              <span class="gantt-label" title={s.target ? `${s.target.kind}/${s.target.name}` : s.name}>
                {s.name}
              </span>
              <span class="gantt-track">
                <span class="gantt-bar" style={{ left: pct(s.start), width: `max(3px, ${((s.end - s.start) / span) * 100}%)` }} title={s.message ? `${label} — ${s.message}` : label} aria-label={label} role="img" />
              </span>
              <span class="gantt-time">{s.finished ? formatDuration(s.end - s.start) : "…"}</span>
            </li>
          );
        })}
      </ol>
      <figcaption>
        <span class="legend critical-swatch" /> critical path: {formatDuration(view.criticalMs)} of {formatDuration(view.spanMs)} · <span class="legend running-swatch" /> running · <span class="legend failed-swatch" /> failed
      </figcaption>
    </figure>
  );
}
