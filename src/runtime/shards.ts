// Work sharing. Keys are hashed (by the namespace/name of their root object, so that one cluster's
// objects land together) into a fixed number of shards. A replica works only on the keys of the shards
// it holds; the ShardSet is its local view of them. A coordinator decides which shards are held: all of
// them in a single process (ProcessShards), or through leases on etcd when several replicas share
// the work (shard-leases.ts).

export const SHARD_COUNT = 32;

/** Work on a shard that this replica no longer holds: its writes must not happen. */
export class ShardLostError extends Error {
  override readonly name = "ShardLostError";
  constructor(readonly shard: number) {
    super(`shard ${shard} is no longer held by this replica`);
  }
}

/** FNV-1a over UTF-16 code units, then murmur3's finaliser for a good spread of nearby inputs. */
export function stableHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/** The shard of a root key ("namespace/name"). */
export function shardOf(rootKey: string, count = SHARD_COUNT): number {
  return stableHash(rootKey) % count;
}

/**
 * Rendezvous (highest random weight) hashing: the member that should hold a shard, a function of the
 * member names alone, so every replica computes the same assignment, and a member joining or leaving
 * moves only the shards it wins or held.
 */
export function shardOwner(shard: number, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const member of members) {
    const score = stableHash(`${member}#${shard}`);
    if (score > bestScore || (score === bestScore && best !== undefined && member < best)) {
      best = member;
      bestScore = score;
    }
  }
  return best;
}

/** Work started on a shard; end() it when done. Its signal aborts if the shard is lost meanwhile. */
export interface WorkTicket {
  readonly shard: number;
  readonly signal: AbortSignal;
  end(): void;
}

interface ShardState {
  active: boolean;
  abort: AbortController;
  inFlight: number;
  drained: (() => void)[];
}

export type ShardListener = (shards: number[]) => void;

export class ShardSet {
  private readonly states: ShardState[];
  private readonly listeners = new Set<ShardListener>();
  private readonly changeListeners = new Set<() => void>();

  constructor(readonly count = SHARD_COUNT) {
    this.states = Array.from({ length: count }, () => ({ active: false, abort: new AbortController(), inFlight: 0, drained: [] }));
  }

  shardOf(rootKey: string): number {
    return shardOf(rootKey, this.count);
  }

  isActive(shard: number): boolean {
    return this.states[shard]?.active ?? false;
  }

  activeShards(): number[] {
    return this.states.flatMap((s, i) => (s.active ? [i] : []));
  }

  /** Called with the shards that became active (their keys should be enqueued). */
  onActivated(listener: ShardListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Called whenever the set of active shards changes. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** Starts work on a key of the shard, or refuses (undefined) when the shard is not active. */
  begin(shard: number): WorkTicket | undefined {
    const state = this.states[shard];
    if (!state?.active) return undefined;
    state.inFlight++;
    let ended = false;
    return {
      shard,
      signal: state.abort.signal,
      end: () => {
        if (ended) return;
        ended = true;
        state.inFlight--;
        if (state.inFlight === 0) for (const resolve of state.drained.splice(0)) resolve();
      },
    };
  }

  activate(shards: readonly number[]): void {
    const activated: number[] = [];
    for (const shard of shards) {
      const state = this.states[shard];
      if (!state || state.active) continue;
      state.active = true;
      state.abort = new AbortController();
      activated.push(shard);
    }
    if (activated.length === 0) return;
    this.changed();
    for (const listener of this.listeners) listener(activated);
  }

  /**
   * Hands shards over gracefully: no new work starts on them, work in flight may finish for at most
   * `drainMs`, then whatever still runs is aborted.
   */
  async deactivate(shards: readonly number[], drainMs: number): Promise<void> {
    const stopping = shards.flatMap((shard) => {
      const state = this.states[shard];
      if (!state?.active) return [];
      state.active = false;
      return [{ shard, state, abort: state.abort }];
    });
    if (stopping.length === 0) return;
    this.changed();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, drainMs);
    });
    await Promise.race([Promise.all(stopping.map(({ state }) => this.drained(state))), deadline]);
    clearTimeout(timer);
    for (const { shard, abort } of stopping) abort.abort(new ShardLostError(shard));
  }

  /** Stops work on the shards at once (their lease may be about to expire): work in flight is aborted. */
  revoke(shards: readonly number[]): void {
    let changed = false;
    for (const shard of shards) {
      const state = this.states[shard];
      if (!state) continue;
      changed ||= state.active;
      state.active = false;
      state.abort.abort(new ShardLostError(shard));
    }
    if (changed) this.changed();
  }

  private drained(state: ShardState): Promise<void> {
    if (state.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => state.drained.push(resolve));
  }

  private changed(): void {
    for (const listener of this.changeListeners) listener();
  }
}

/** Decides which shards this replica holds, and gives them up on shutdown. */
export interface ShardCoordinator {
  readonly shards: ShardSet;
  start(): Promise<void>;
  /** Stops work (waiting at most `drainMs` for work in flight) and hands every shard back. */
  stop(drainMs: number): Promise<void>;
  /**
   * Why this replica cannot do its share of the work now, or undefined when it can (holding no shard is
   * fine when other replicas hold them all).
   */
  unready(): string | undefined;
}

/** The single-process mode (SQLite): this process holds every shard. */
export class ProcessShards implements ShardCoordinator {
  constructor(readonly shards: ShardSet) {}

  unready(): string | undefined {
    const held = this.shards.activeShards().length;
    return held === this.shards.count ? undefined : `${held} of ${this.shards.count} shards held`;
  }

  async start(): Promise<void> {
    this.shards.activate(Array.from({ length: this.shards.count }, (_, i) => i));
  }

  async stop(drainMs: number): Promise<void> {
    await this.shards.deactivate(this.shards.activeShards(), drainMs);
  }
}
