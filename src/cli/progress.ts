// Live progress of clusters being made or deleted. In a terminal, a block redrawn in place (a spinner
// for each running step, machine counts, elapsed time) under the lines of what finished; in a pipe or
// in CI, one plain line per change, without carriage returns or escape codes.
import type { ClusterStep } from "../api/kinds.ts";
import { ProgressTracker, stepDurationMs, type ClusterProgress, type ProgressChange, type ProgressOutcome } from "../views/progress.ts";
import { formatDuration } from "../views/duration.ts";
import { fitWidth, type Output } from "./output.ts";

export interface ProgressReporter {
  update(progress: ClusterProgress): void;
  finish(label: string, outcome: ProgressOutcome): void;
  /** A line about the wait itself (e.g. the connection was lost and is being retried). */
  note(label: string, text: string): void;
  /** Stops redrawing; the screen keeps what was drawn last. */
  close(): void;
}

const DONE = "✓";
const FAILED = "✗";
const STARTED = "▸";

function stepDuration(step: ClusterStep, now: number): string {
  return formatDuration(stepDurationMs(step, now));
}

function machinesLine(p: Pick<ClusterProgress, "machines" | "deleting">, separator: string): string {
  const m = p.machines;
  if (p.deleting) return `machines ${m.created} left`;
  return `machines ${[`${m.created}/${m.desired} created`, `${m.booted} booted`, `${m.joined} joined`, `${m.ready} ready`].join(separator)}`;
}

/** A change of the progress view as one line of text. */
export function changeText(change: ProgressChange): string {
  switch (change.kind) {
    case "phase":
      return `phase ${change.phase}${change.message ? ` (${change.message})` : ""}`;
    case "reason":
      return `${change.reason}${change.message ? `: ${change.message}` : ""}`;
    case "stepsDone":
      return `${change.count} step${change.count === 1 ? "" : "s"} done`;
    case "step": {
      const { step, durationMs } = change;
      const took = durationMs === undefined ? "" : ` (${formatDuration(durationMs)})`;
      if (step.outcome === "Succeeded") return `${DONE} ${step.name}${took}`;
      if (step.outcome === "Failed") return `${FAILED} ${step.name}${took}${step.message ? `: ${step.message}` : ""}`;
      return `${STARTED} ${step.name}`;
    }
    case "machines":
      return machinesLine(change, ", ");
  }
}

export function outcomeLine(outcome: ProgressOutcome, elapsedMs: number): string {
  switch (outcome.result) {
    case "ready":
      return `${DONE} Ready after ${formatDuration(elapsedMs)}`;
    case "failed":
      return `${FAILED} Failed: ${outcome.reason}${outcome.message ? `: ${outcome.message}` : ""}`;
    case "deleted":
      return `${DONE} deleted after ${formatDuration(elapsedMs)}`;
    case "timeout":
      if (outcome.failure) return `${FAILED} still Failed after ${formatDuration(elapsedMs)}: ${outcome.failure.reason}${outcome.failure.message ? `: ${outcome.failure.message}` : ""}`;
      return `${FAILED} gave up waiting after ${formatDuration(elapsedMs)} (phase ${outcome.phase})`;
  }
}

/** `[  12.3s]`: time since the wait began. */
export function elapsedStamp(ms: number): string {
  return `[${(ms / 1000).toFixed(1).padStart(6)}s]`;
}

abstract class Reporter implements ProgressReporter {
  protected readonly tracker = new ProgressTracker();
  protected readonly started: number;

  constructor(
    protected readonly out: Output,
    protected readonly clock: () => number,
  ) {
    this.started = clock();
  }

  protected line(label: string, text: string): string {
    return `${elapsedStamp(this.clock() - this.started)} ${label}  ${text}`;
  }

  /** Records the moment and answers what changed. */
  protected record(progress: ClusterProgress): ProgressChange[] {
    return this.tracker.track(progress, this.clock());
  }

  abstract update(progress: ClusterProgress): void;
  abstract finish(label: string, outcome: ProgressOutcome): void;
  abstract note(label: string, text: string): void;
  close(): void {}
}

/** One line per change, for pipes, files and CI logs. */
export class PlainProgress extends Reporter {
  update(progress: ClusterProgress): void {
    for (const change of this.record(progress)) this.out.write(`${this.line(progress.label, changeText(change))}\n`);
  }

  finish(label: string, outcome: ProgressOutcome): void {
    this.out.write(`${this.line(label, outcomeLine(outcome, this.clock() - this.started))}\n`);
  }

  note(label: string, text: string): void {
    this.out.write(`${this.line(label, text)}\n`);
  }
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/** Running steps shown per cluster; the rest are counted. */
const MAX_RUNNING_SHOWN = 8;

/** A block redrawn in place under the lines of what finished, for terminals. */
export class LiveProgress extends Reporter {
  private drawnLines = 0;
  private frame = 0;
  private readonly finished = new Set<string>();
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly color: boolean;

  constructor(out: Output, clock: () => number, options: { color?: boolean; tickMs?: number } = {}) {
    super(out, clock);
    this.color = options.color ?? true;
    if (options.tickMs !== 0) {
      this.timer = setInterval(() => {
        this.frame = (this.frame + 1) % SPINNER.length;
        this.draw([]);
      }, options.tickMs ?? 100);
      this.timer.unref();
    }
  }

  update(progress: ClusterProgress): void {
    this.draw(this.record(progress).filter((c) => c.lasting).map((c) => this.line(progress.label, changeText(c))));
  }

  finish(label: string, outcome: ProgressOutcome): void {
    this.finished.add(label);
    this.draw([this.line(label, outcomeLine(outcome, this.clock() - this.started))]);
  }

  note(label: string, text: string): void {
    this.draw([this.line(label, text)]);
  }

  override close(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** The block: per cluster still followed, its phase and elapsed time, running steps, machine counts. */
  private block(): string[] {
    const now = this.clock();
    const spinner = SPINNER[this.frame] ?? "";
    const lines: string[] = [];
    for (const [label, p] of this.tracker.moments()) {
      if (this.finished.has(label)) continue;
      const detail = p.reason ? `${p.reason}${p.message ? `: ${p.message}` : ""}` : (p.message ?? "");
      lines.push(`${spinner} ${label}  ${p.phase}  ${formatDuration(now - this.started)}${detail ? `  ${detail}` : ""}`);
      const running = p.steps.filter((s) => s.outcome === "Running");
      const width = Math.max(0, ...running.slice(0, MAX_RUNNING_SHOWN).map((s) => s.name.length));
      for (const step of running.slice(0, MAX_RUNNING_SHOWN)) lines.push(`    ${spinner} ${step.name.padEnd(width)}  ${stepDuration(step, now)}`);
      if (running.length > MAX_RUNNING_SHOWN) lines.push(`    … and ${running.length - MAX_RUNNING_SHOWN} more running`);
      if (p.machines.desired > 0 || p.machines.created > 0) lines.push(`    ${machinesLine(p, " · ")}`);
    }
    return lines;
  }

  private paint(line: string): string {
    const fitted = fitWidth(line, this.out.columns || 80);
    if (!this.color) return fitted;
    return fitted.replace(DONE, `\x1b[32m${DONE}\x1b[0m`).replace(FAILED, `\x1b[31m${FAILED}\x1b[0m`);
  }

  /** Moves up over the block, writes the lasting lines, then the block anew, and clears what is left. */
  private draw(lasting: string[]): void {
    let text = this.drawnLines > 0 ? `\x1b[${this.drawnLines}A\r` : "";
    const block = this.block();
    for (const line of [...lasting, ...block]) text += `\x1b[2K${this.paint(line)}\n`;
    text += "\x1b[J";
    this.drawnLines = block.length;
    this.out.write(text);
  }
}

/** Live redrawing in a terminal; plain lines in a pipe, a file, or CI. */
export function progressReporter(out: Output & { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env, clock: () => number = Date.now): ProgressReporter {
  const live = out.isTTY === true && !env.CI && env.TERM !== "dumb";
  return live ? new LiveProgress(out, clock, { color: env.NO_COLOR === undefined }) : new PlainProgress(out, clock);
}
