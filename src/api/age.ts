// Ages as kubectl prints them (45s, 12m, 3h4m, 5d), for the server's Tables and the CLI alike.

/** The age of an RFC 3339 timestamp at `now`. */
export function humanAge(since: string | undefined, now = Date.now()): string {
  if (!since) return "<unknown>";
  const at = Date.parse(since);
  if (Number.isNaN(at)) return "<invalid>";
  const seconds = Math.max(0, Math.floor((now - at) / 1000));
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  if (seconds < 120) return `${seconds}s`;
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (hours < 3) return `${minutes}m`;
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (days < 2) return `${hours}h`;
  if (days < 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (days < 365 * 2) return `${days}d`;
  return `${Math.floor(days / 365)}y`;
}
