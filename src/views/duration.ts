// How long something took, written for people — the same words in a terminal and in a console.

/** A duration for people: 0.4s, 12.0s, 3m05s, 1h02m. */
export function formatDuration(ms: number): string {
  const clamped = Math.max(0, ms);
  if (clamped < 60_000) return `${(clamped / 1000).toFixed(1)}s`;
  const seconds = Math.floor(clamped / 1000);
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, "0")}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}
