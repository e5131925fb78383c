// Resident memory of the processes a benchmark started, sampled every second: the peak of each group
// of processes (e.g. the three members of an etcd cluster, summed at each sample), and the kernel's own
// high-water mark (VmHWM) of each process, which catches peaks between samples.
import { readFileSync } from "node:fs";

function statusField(pid: number, field: "VmRSS" | "VmHWM"): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Current resident memory of a process, bytes (undefined once it has exited). */
export function residentBytes(pid: number): number | undefined {
  return statusField(pid, "VmRSS");
}

export class MemorySampler {
  private readonly groups = new Map<string, number[]>();
  private readonly peaks = new Map<string, number>();
  private readonly highWater = new Map<number, number>();
  private timer?: NodeJS.Timeout;

  /** Follows a group of processes under one name. */
  track(name: string, pids: number[]): void {
    this.groups.set(name, pids);
  }

  start(intervalMs = 1000): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }

  /** The group's resident memory now, bytes. */
  current(name: string): number {
    return (this.groups.get(name) ?? []).reduce((sum, pid) => sum + (residentBytes(pid) ?? 0), 0);
  }

  /**
   * The group's peak, bytes: the largest sampled sum, or for a single process its VmHWM when that is
   * larger (the kernel saw a peak between two samples).
   */
  peak(name: string): number {
    const pids = this.groups.get(name) ?? [];
    const sampled = this.peaks.get(name) ?? 0;
    if (pids.length !== 1) return sampled;
    return Math.max(sampled, this.highWater.get(pids[0]!) ?? 0);
  }

  private sample(): void {
    for (const [name, pids] of this.groups) {
      let sum = 0;
      for (const pid of pids) {
        sum += residentBytes(pid) ?? 0;
        const hwm = statusField(pid, "VmHWM");
        if (hwm !== undefined) this.highWater.set(pid, Math.max(hwm, this.highWater.get(pid) ?? 0));
      }
      this.peaks.set(name, Math.max(sum, this.peaks.get(name) ?? 0));
    }
  }
}

export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "-";
  if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
  if (bytes >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(0)} MiB`;
  return `${(bytes / 2 ** 10).toFixed(0)} KiB`;
}
