// What every benchmark prints: the machine it ran on and its figures as one aligned table.
import { readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";

export interface Machine {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  node: string;
  date: string;
}

export function describeMachine(now: Date = new Date()): Machine {
  let cpuModel = cpus()[0]?.model ?? "unknown";
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    if (match) cpuModel = match[1]!.trim();
  } catch {
    // Not Linux: os.cpus() named it already.
  }
  return {
    cpuModel,
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    date: now.toISOString(),
  };
}

export function formatMachine(machine: Machine): string {
  return [
    `machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB`,
    `node:    ${machine.node}`,
    `date:    ${machine.date}`,
  ].join("\n");
}

/** Right-aligns every column but the first; the first row is the header. */
export function formatTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length)));
  const line = (row: string[]) =>
    row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join("  ");
  return [line(rows[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...rows.slice(1).map(line)].join("\n");
}

export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "-";
}
