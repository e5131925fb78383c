// CPU time spent by the load generator (this process) and by a server child during one phase, as a
// share of one core: a side near 100% is what limits the phase's throughput.
import { readFileSync } from "node:fs";

/** Linux reports process times in USER_HZ ticks, 100 per second on every architecture Node runs on. */
const TICKS_PER_SECOND = 100;

export interface CpuShare {
  /** CPU time the server process used during the phase, ms. */
  serverMs: number;
  /** Percent of one core used by the server process during the phase. */
  serverPct: number;
  /** Percent of one core used by the load generator during the phase. */
  generatorPct: number;
}

/**
 * CPU time (user + system) of process `pid`, in ms: all its threads, or only thread `tid` (the main
 * thread's is the pid); NaN where /proc is unavailable.
 */
export function processCpuMs(pid: number | undefined, tid?: number): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, "utf8");
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/** Starts measuring; the returned function ends the phase and gives both sides' shares. */
export function startCpuMeter(serverPid: number | undefined): () => CpuShare {
  const server = processCpuMs(serverPid);
  const generator = process.cpuUsage();
  const start = process.hrtime.bigint();
  return () => {
    const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
    const used = process.cpuUsage(generator);
    const serverMs = processCpuMs(serverPid) - server;
    return {
      serverMs,
      serverPct: (serverMs / wallMs) * 100,
      generatorPct: ((used.user + used.system) / 1000 / wallMs) * 100,
    };
  };
}
