// Periodic compaction of the store's history, as Kubernetes does: history older than the retention is
// forgotten, so watches that fall that far behind get 410 Gone and relist.
import type { Logger } from "pino";
import type { Store } from "../store/store.ts";

export interface CompactorOptions {
  intervalMs?: number;
  /** How many intervals of history to keep. */
  keepIntervals?: number;
}

export class Compactor {
  private readonly marks: number[] = [];
  private timer?: NodeJS.Timeout;
  private readonly intervalMs: number;
  private readonly keep: number;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    options: CompactorOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 60_000;
    this.keep = options.keepIntervals ?? 5;
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Records the current revision and compacts to the one recorded `keep` intervals ago. */
  async tick(): Promise<void> {
    try {
      this.marks.push(await this.store.revision());
      if (this.marks.length <= this.keep) return;
      const target = this.marks.shift()!;
      if (target > (await this.store.compactedRevision())) {
        await this.store.compact(target);
        this.log.debug({ revision: target }, "compacted store history");
      }
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, "compaction failed");
    }
  }
}
