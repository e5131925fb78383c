// Long work made visible: how many machines are created, booted, joined and Ready out of those wanted,
// and which steps are running now.
import type { ClusterObject, MachineObject } from "../../../api/kinds.ts";
import { countMachines } from "../../../views/readiness.ts";

export function Progress({ cluster, machines }: { cluster: ClusterObject; machines: MachineObject[] }) {
  const counts = countMachines(cluster, machines);
  const deleting = cluster.metadata.deletionTimestamp !== undefined;
  const running = (cluster.status?.steps ?? []).filter((s) => s.outcome === "Running");
  const settled = cluster.status?.phase === "Running" && counts.ready >= counts.desired && running.length === 0;
  if (settled) return null;
  const total = Math.max(counts.desired, counts.created, 1);
  // Each machine goes through four stages; the bar shows how many of the stages are behind them.
  const done = deleting ? total - counts.created : counts.created + counts.booted + counts.joined + counts.ready;
  const max = deleting ? total : total * 4;
  const label = deleting ? `${counts.created} machines left to delete` : `machines: ${counts.created}/${counts.desired} created, ${counts.booted} booted, ${counts.joined} joined, ${counts.ready} ready`;
  return (
    <div class="progress-box" role="status" aria-live="polite">
      <div class="progress" role="progressbar" aria-valuemin={0} aria-valuemax={max} aria-valuenow={done} aria-label={label}>
        <span style={{ width: `${Math.min(100, (done / max) * 100)}%` }} />
      </div>
      <p data-testid="machine-counts">{label}</p>
      {running.length > 0 && (
        <p class="muted">
          Running now: {running.slice(0, 6).map((s) => s.name).join(", ")}
          {running.length > 6 ? ` and ${running.length - 6} more` : ""}
        </p>
      )}
    </div>
  );
}
