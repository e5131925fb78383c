// Time for the sim cloud: the system clock in service, a manual clock in tests, so a test can move time
// forward by a minute without waiting for it.

export interface TimerHandle {
  readonly timerId: number;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once after `delayMs` (0: on the next tick). */
  setTimer(delayMs: number, fn: () => void): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

export class SystemClock implements Clock {
  private readonly timers = new Map<number, NodeJS.Timeout>();
  private nextId = 1;

  now(): number {
    return Date.now();
  }

  setTimer(delayMs: number, fn: () => void): TimerHandle {
    const timerId = this.nextId++;
    const timeout = setTimeout(
      () => {
        this.timers.delete(timerId);
        fn();
      },
      Math.max(0, delayMs),
    );
    this.timers.set(timerId, timeout);
    return { timerId };
  }

  clearTimer(handle: TimerHandle): void {
    const timeout = this.timers.get(handle.timerId);
    if (timeout) clearTimeout(timeout);
    this.timers.delete(handle.timerId);
  }
}

interface ManualTimer {
  timerId: number;
  dueAt: number;
  fn: () => void;
}

/** A clock that only moves when told to; timers run in due order during `advance`. */
export class ManualClock implements Clock {
  private current: number;
  private timers: ManualTimer[] = [];
  private nextId = 1;

  constructor(startMs = Date.UTC(2025, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(delayMs: number, fn: () => void): TimerHandle {
    const timerId = this.nextId++;
    this.timers.push({ timerId, dueAt: this.current + Math.max(0, delayMs), fn });
    return { timerId };
  }

  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.timerId !== handle.timerId);
  }

  /** Moves time forward by `ms`, running every timer that falls due (including ones those timers set). */
  advance(ms: number): void {
    const target = this.current + ms;
    while (true) {
      const due = this.timers
        .filter((t) => t.dueAt <= target)
        .sort((a, b) => a.dueAt - b.dueAt || a.timerId - b.timerId)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = Math.max(this.current, due.dueAt);
      due.fn();
    }
    this.current = target;
  }

  /** Number of timers not yet run. */
  get pendingTimers(): number {
    return this.timers.length;
  }
}
