// The embedded store: one SQLite file (WAL mode) used by a single process.
//
// Layout: `log` holds every write (the history: watch replay, lists at a past revision), `current` maps
// each live key to the log row of its value (gets and lists at the head), `meta` remembers compaction.
// Each write is one SQLite transaction. better-sqlite3 is synchronous and the process is the file's only
// user, so the revision counter lives in memory and nothing can run between reading and writing a key.
import { setImmediate as nextTurn } from "node:timers/promises";
import Database from "better-sqlite3";
import type { Statement } from "better-sqlite3";
import {
  CompactedError,
  FutureRevisionError,
  KeyExistsError,
  KeyNotFoundError,
  RevisionMismatchError,
  StoreClosedError,
  type KeyValue,
  type ListOptions,
  type ListResult,
  type SparseKeyValue,
  type SparseListResult,
  type Store,
  type Watch,
  type WatchEvent,
  type WatchOptions,
  type Wanted,
} from "./store.ts";
import { WatchChannel } from "./watch-channel.ts";

export interface SqliteStoreOptions {
  /** How long opening waits for another process to release the file (default 5000 ms). */
  busyTimeoutMs?: number;
}

export class StoreInUseError extends Error {
  override readonly name = "StoreInUseError";
  constructor(readonly path: string) {
    super(`the store ${path} is in use by another process`);
  }
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS log (
  rev INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  deleted INTEGER NOT NULL,
  value TEXT,
  create_rev INTEGER NOT NULL,
  prev_rev INTEGER
);
CREATE INDEX IF NOT EXISTS log_by_key ON log (key, rev);
CREATE TABLE IF NOT EXISTS current (key TEXT PRIMARY KEY, rev INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
`;

/** Revisions a replaying watch reads per turn of the event loop. */
const REPLAY_WINDOW = 2_000;
/** History rows a compaction examines or deletes per transaction. */
const COMPACT_BATCH = 2_000;
/** Past this many retired rows listed for a compaction (16 MB), the list is dropped and the history scanned. */
const RETIRED_LIMIT = 1_000_000;

interface KeyRow {
  key: string;
  modRevision: number;
}

interface ValueRow {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
}

interface HistoryRow {
  rev: number;
  key: string;
  deleted: number;
  value: string | null;
  createRevision: number;
  prevValue: string | null;
  prevCreateRevision: number | null;
  prevRevision: number | null;
}

interface HistoryWrite {
  rev: number;
  key: string;
  /** null for a deletion */
  value: string | null;
  createRev: number;
  /** The key's previous value row, if it had a value. */
  prevRev: number | null;
}

interface CompactionCandidate {
  rev: number;
  deleted: number;
  superseded: number;
}

// Key ranges are compared as UTF-8 bytes (SQLite's BINARY collation). The upper bound of a prefix is the
// prefix followed by the byte 0xFF, which no UTF-8 text contains, bound as a blob and read back as text.
function inRange(column: string): string {
  return `${column} >= @start AND ${column} < CAST(@end AS TEXT)`;
}

function rangeEnd(prefix: string): Buffer {
  return Buffer.concat([Buffer.from(prefix, "utf8"), Buffer.from([0xff])]);
}

function toKeyValue(row: ValueRow): KeyValue {
  return { key: row.key, value: row.value, createRevision: row.createRevision, modRevision: row.modRevision };
}

interface LiveWatcher {
  prefix: string;
  channel: WatchChannel;
  /** The last revision this watcher has covered; events at or below it are not sent again. */
  cursor: number;
  live: boolean;
}

/**
 * Live watchers by prefix. A write looks up the prefixes of its key that end at a "/" instead of testing
 * every watcher: a store shared by ten thousand workload clusters holds a node watch of each, and every
 * write tested all of them. A watcher whose prefix ends elsewhere is tested as before.
 */
class Watchers {
  private readonly byPrefix = new Map<string, Set<LiveWatcher>>();
  private readonly unaligned = new Set<LiveWatcher>();

  add(watcher: LiveWatcher): void {
    if (!aligned(watcher.prefix)) {
      this.unaligned.add(watcher);
      return;
    }
    const same = this.byPrefix.get(watcher.prefix);
    if (same) same.add(watcher);
    else this.byPrefix.set(watcher.prefix, new Set([watcher]));
  }

  delete(watcher: LiveWatcher): void {
    this.unaligned.delete(watcher);
    const same = this.byPrefix.get(watcher.prefix);
    if (same?.delete(watcher) && same.size === 0) this.byPrefix.delete(watcher.prefix);
  }

  /** The watchers whose prefix `key` starts with. */
  *of(key: string): Generator<LiveWatcher> {
    if (this.byPrefix.size > 0) {
      yield* this.byPrefix.get("") ?? [];
      for (let i = key.indexOf("/"); i >= 0; i = key.indexOf("/", i + 1)) yield* this.byPrefix.get(key.slice(0, i + 1)) ?? [];
    }
    for (const watcher of this.unaligned) if (key.startsWith(watcher.prefix)) yield watcher;
  }

  values(): LiveWatcher[] {
    return [...this.unaligned, ...[...this.byPrefix.values()].flatMap((same) => [...same])];
  }

  clear(): void {
    this.unaligned.clear();
    this.byPrefix.clear();
  }
}

/** A prefix that ends at a "/" (or is empty): found by the prefixes of a key. */
function aligned(prefix: string): boolean {
  return prefix === "" || prefix.endsWith("/");
}

export class SqliteStore implements Store {
  private head: number;
  private compacted: number;
  private closed = false;
  private readonly watchers = new Watchers();
  private compaction: Promise<void> = Promise.resolve();
  /**
   * History rows this process retired (superseded by a newer value of their key, or tombstones), with
   * the revision that retired them, as flat [row, by] pairs in the order of the writes. A compaction
   * deletes the rows retired at or below its revision from here, without scanning the history.
   */
  private retired: number[] = [];
  private retiredStart = 0;
  /**
   * Rows retired at or below this revision may be missing from `retired` (retired before this process
   * opened the store, or forgotten past RETIRED_LIMIT): compactions scan the history until one reaches
   * it. 0 once none are missing.
   */
  private unlistedUpTo: number;

  private readonly getCurrent: Statement<[string], ValueRow>;
  private readonly insertLog: Statement<[number, string, number, string | null, number, number | null]>;
  private readonly upsertCurrent: Statement<[string, number]>;
  private readonly deleteCurrent: Statement<[string]>;
  private readonly countCurrent: Statement<{ start: string; end: Buffer }, number>;
  private readonly listStatements = new Map<string, Statement<Record<string, unknown>, ValueRow>>();
  private readonly keyStatements = new Map<string, Statement<Record<string, unknown>, KeyRow>>();
  private readonly valueAt: Statement<[number], { value: string; createRevision: number }>;
  private readonly countStatements = new Map<string, Statement<Record<string, unknown>, number>>();
  private readonly replayRows: Statement<{ start: string; end: Buffer; from: number; to: number }, HistoryRow>;
  private readonly replayRowsByKey: Statement<{ start: string; end: Buffer; from: number; to: number }, HistoryRow>;
  private readonly historyUnder: Statement<{ start: string; end: Buffer; limit: number }, number>;
  private readonly compactionCandidates: Statement<{ after: number; upTo: number; limit: number }, CompactionCandidate>;
  private readonly deleteLogRow: Statement<[number]>;
  private readonly setMeta: Statement<[string, number]>;
  /** Appends a history row and points `current` at it (or drops the key when `value` is null). */
  private readonly writeRow: (row: HistoryWrite) => void;

  private constructor(private readonly db: Database.Database) {
    db.exec(SCHEMA);
    const meta = db.prepare<[string], number>("SELECT value FROM meta WHERE name = ?").pluck();
    const maxRev = db.prepare<[], number | null>("SELECT max(rev) FROM log").pluck().get() ?? 0;
    this.head = Math.max(1, maxRev, meta.get("head_at_compaction") ?? 0);
    this.compacted = meta.get("compacted") ?? 0;
    this.unlistedUpTo = this.head;

    this.getCurrent = db.prepare(
      `SELECT l.key, l.value, l.create_rev AS createRevision, l.rev AS modRevision
       FROM current c JOIN log l ON l.rev = c.rev WHERE c.key = ?`,
    );
    this.insertLog = db.prepare(
      "INSERT INTO log (rev, key, deleted, value, create_rev, prev_rev) VALUES (?, ?, ?, ?, ?, ?)",
    );
    this.upsertCurrent = db.prepare(
      "INSERT INTO current (key, rev) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET rev = excluded.rev",
    );
    this.deleteCurrent = db.prepare("DELETE FROM current WHERE key = ?");
    this.valueAt = db.prepare("SELECT value, create_rev AS createRevision FROM log WHERE rev = ?");
    this.countCurrent = db
      .prepare<{ start: string; end: Buffer }, number>(`SELECT count(*) FROM current WHERE ${inRange("key")}`)
      .pluck();
    const historyRows = (index: string) =>
      db.prepare<{ start: string; end: Buffer; from: number; to: number }, HistoryRow>(
        `SELECT l.rev, l.key, l.deleted, l.value, l.create_rev AS createRevision,
                p.value AS prevValue, p.create_rev AS prevCreateRevision, p.rev AS prevRevision
         FROM log l ${index} LEFT JOIN log p ON p.rev = l.prev_rev
         WHERE l.rev > @from AND l.rev <= @to AND ${inRange("l.key")}
         ORDER BY l.rev`,
      );
    this.replayRows = historyRows("");
    // The same rows found through the keys: for a watch of a few keys (one workload cluster's nodes among
    // ten thousand clusters' writes), reading the span of revisions would read everyone's history.
    this.replayRowsByKey = historyRows("INDEXED BY log_by_key");
    this.historyUnder = db
      .prepare<{ start: string; end: Buffer; limit: number }, number>(
        `SELECT count(*) FROM (SELECT 1 FROM log INDEXED BY log_by_key WHERE ${inRange("key")} LIMIT @limit)`,
      )
      .pluck();
    this.compactionCandidates = db.prepare(
      `SELECT rev, deleted,
              EXISTS (SELECT 1 FROM log later WHERE later.key = log.key AND later.rev > log.rev AND later.rev <= @upTo)
                AS superseded
       FROM log WHERE rev > @after AND rev <= @upTo ORDER BY rev LIMIT @limit`,
    );
    this.deleteLogRow = db.prepare("DELETE FROM log WHERE rev = ?");
    this.setMeta = db.prepare(
      "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    );
    this.writeRow = db.transaction(({ rev, key, value, createRev, prevRev }: HistoryWrite) => {
      this.insertLog.run(rev, key, value === null ? 1 : 0, value, createRev, prevRev);
      if (value === null) this.deleteCurrent.run(key);
      else this.upsertCurrent.run(key, rev);
    });
  }

  /** Opens (creating if needed) the store in a file, or in memory with ":memory:". */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteStore {
    const db = new Database(path, { timeout: Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5_000)) });
    try {
      // The revision counter lives in this process, so no other connection may write the file; an
      // exclusive lock makes a second process fail at open instead of corrupting the history.
      db.pragma("locking_mode = EXCLUSIVE");
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      db.pragma("cache_size = -16000");
      db.pragma("temp_store = MEMORY");
      return new SqliteStore(db);
    } catch (error) {
      db.close();
      if (error instanceof Database.SqliteError && error.code === "SQLITE_BUSY") throw new StoreInUseError(path);
      throw error;
    }
  }

  async revision(): Promise<number> {
    this.assertOpen();
    return this.head;
  }

  async get(key: string): Promise<KeyValue | undefined> {
    this.assertOpen();
    const row = this.getCurrent.get(key);
    return row ? toKeyValue(row) : undefined;
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListResult> {
    this.assertOpen();
    const { revision, limit, atHead, after } = this.listed(options);
    const rows = this.listStatement(atHead, after !== undefined).all({ start: prefix, end: rangeEnd(prefix), after, revision, limit: limit > 0 ? limit + 1 : -1 });
    const { rows: paged, ...page } = this.paged(rows, prefix, options, atHead, revision, limit);
    return { ...page, items: paged.map(toKeyValue) };
  }

  /**
   * At the head, the keys come from `current` alone and each wanted value is read by its revision in the
   * history (a row that is never rewritten), all in one synchronous call: the same state as list(). At a
   * past revision every value is read (list()).
   */
  async listSparse(prefix: string, wanted: Wanted, options: ListOptions = {}): Promise<SparseListResult> {
    this.assertOpen();
    const { revision, limit, atHead, after } = this.listed(options);
    if (!atHead) return this.list(prefix, options);
    const rows = this.keyStatement(after !== undefined).all({ start: prefix, end: rangeEnd(prefix), after, limit: limit > 0 ? limit + 1 : -1 });
    const { rows: paged, ...page } = this.paged(rows, prefix, options, atHead, revision, limit);
    const items = paged.map(({ key, modRevision }): SparseKeyValue => {
      if (!wanted(key, modRevision)) return { key, modRevision };
      const { value, createRevision } = this.valueAt.get(modRevision)!;
      return { key, modRevision, value, createRevision };
    });
    return { ...page, items };
  }

  /** The revision a list reads at (refused when compacted or not reached), its limit, and where it resumes. */
  private listed(options: ListOptions): { revision: number; limit: number; atHead: boolean; after: string | undefined } {
    const revision = options.revision && options.revision > 0 ? options.revision : this.head;
    if (revision < this.compacted) throw new CompactedError(revision, this.compacted);
    if (revision > this.head) throw new FutureRevisionError(revision, this.head);
    const limit = options.limit && options.limit > 0 ? Math.trunc(options.limit) : 0;
    return { revision, limit, atHead: revision === this.head, after: options.continueAfter };
  }

  /**
   * A page of the rows read (`limit` + 1 asked for, to tell whether more remain): the rows of the page,
   * whether more remain, and how many.
   */
  private paged<R extends { key: string }>(rows: R[], prefix: string, options: ListOptions, atHead: boolean, revision: number, limit: number): { rows: R[]; revision: number; more: boolean; remaining?: number } {
    const more = limit > 0 && rows.length > limit;
    if (!more) return { rows, revision, more };
    rows.length = limit;
    // Counting what is left of the range at a past revision walks all of it: for the pages after the
    // first, the previous page's count less this page is the same number. (Counted again for each
    // page, the Events of 6,000 clusters in pages of 500 took half a minute to list.)
    const counted = options.continueAfter !== undefined && options.remainingAfter !== undefined && options.remainingAfter > limit ? options.remainingAfter - limit : undefined;
    const remaining = counted ?? this.countStatement(atHead).get({ start: prefix, end: rangeEnd(prefix), after: rows[limit - 1]!.key, revision }) ?? 0;
    return { rows, revision, more, remaining };
  }

  async count(prefix: string): Promise<number> {
    this.assertOpen();
    return this.countCurrent.get({ start: prefix, end: rangeEnd(prefix) }) ?? 0;
  }

  async create(key: string, value: string): Promise<KeyValue> {
    this.assertOpen();
    if (this.getCurrent.get(key)) throw new KeyExistsError(key);
    const rev = this.head + 1;
    this.write({ rev, key, value, createRev: rev, prevRev: null });
    this.head = rev;
    const kv: KeyValue = { key, value, createRevision: rev, modRevision: rev };
    this.notify({ type: "put", kv: { ...kv } });
    return kv;
  }

  async update(key: string, value: string, expectedModRevision: number): Promise<KeyValue> {
    this.assertOpen();
    const current = this.getCurrent.get(key);
    if (!current) throw new KeyNotFoundError(key);
    if (current.modRevision !== expectedModRevision) throw new RevisionMismatchError(key, toKeyValue(current));
    const rev = this.head + 1;
    this.write({ rev, key, value, createRev: current.createRevision, prevRev: current.modRevision });
    this.head = rev;
    const kv: KeyValue = { key, value, createRevision: current.createRevision, modRevision: rev };
    this.notify({ type: "put", kv: { ...kv }, prev: toKeyValue(current) });
    return kv;
  }

  async delete(key: string, expectedModRevision?: number): Promise<KeyValue> {
    this.assertOpen();
    const current = this.getCurrent.get(key);
    if (!current) throw new KeyNotFoundError(key);
    if (expectedModRevision !== undefined && current.modRevision !== expectedModRevision) {
      throw new RevisionMismatchError(key, toKeyValue(current));
    }
    const rev = this.head + 1;
    this.write({ rev, key, value: null, createRev: current.createRevision, prevRev: current.modRevision });
    this.head = rev;
    this.notify({ type: "delete", key, revision: rev, prev: toKeyValue(current) });
    return { key, value: current.value, createRevision: current.createRevision, modRevision: rev };
  }

  watch(prefix: string, options: WatchOptions): Watch {
    const watcher: LiveWatcher = {
      prefix,
      // A live watcher has been pushed every change up to the head: notify() runs in the write itself.
      channel: new WatchChannel(
        options,
        () => this.watchers.delete(watcher),
        () => (watcher.live ? this.head : undefined),
      ),
      cursor: options.afterRevision,
      live: false,
    };
    if (this.closed) {
      watcher.channel.fail(new StoreClosedError());
      return watcher.channel;
    }
    this.watchers.add(watcher);
    this.replay(watcher);
    return watcher.channel;
  }

  async compact(revision: number): Promise<void> {
    this.assertOpen();
    const run = this.compaction.then(() => this.compactTo(revision));
    this.compaction = run.catch(() => {});
    return run;
  }

  async compactedRevision(): Promise<number> {
    this.assertOpen();
    return this.compacted;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const watcher of this.watchers.values()) watcher.channel.close();
    this.watchers.clear();
    await this.compaction;
    this.db.close();
  }

  /** Writes a history row, and lists the rows it retires for a later compaction. */
  private write(row: HistoryWrite): void {
    this.writeRow(row);
    if (row.prevRev !== null) this.retired.push(row.prevRev, row.rev);
    if (row.value === null) this.retired.push(row.rev, row.rev);
    if (this.retired.length - this.retiredStart > 2 * RETIRED_LIMIT) {
      this.retired = [];
      this.retiredStart = 0;
      this.unlistedUpTo = row.rev;
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreClosedError();
  }

  /** Counts the keys of a range after `@after`, at the head or at `@revision` (what a page leaves for later). */
  private countStatement(atHead: boolean): Statement<Record<string, unknown>, number> {
    const id = atHead ? "head" : "past";
    let statement = this.countStatements.get(id);
    if (statement) return statement;
    const sql = atHead
      ? `SELECT count(*) FROM current c WHERE ${inRange("c.key")} AND c.key > @after`
      : `SELECT count(*) FROM log l
         WHERE ${inRange("l.key")} AND l.key > @after AND l.rev <= @revision
           AND l.rev = (SELECT max(x.rev) FROM log x WHERE x.key = l.key AND x.rev <= @revision)
           AND l.deleted = 0`;
    statement = this.db.prepare<Record<string, unknown>, number>(sql).pluck();
    this.countStatements.set(id, statement);
    return statement;
  }

  /** The keys of a range at the head with their revisions, without reading a value. */
  private keyStatement(continuing: boolean): Statement<Record<string, unknown>, KeyRow> {
    const id = continuing ? "after" : "start";
    let statement = this.keyStatements.get(id);
    if (statement) return statement;
    statement = this.db.prepare<Record<string, unknown>, KeyRow>(
      `SELECT key, rev AS modRevision FROM current WHERE ${inRange("key")} ${continuing ? "AND key > @after" : ""} ORDER BY key LIMIT @limit`,
    );
    this.keyStatements.set(id, statement);
    return statement;
  }

  private listStatement(atHead: boolean, continuing: boolean): Statement<Record<string, unknown>, ValueRow> {
    const id = `${atHead ? "head" : "past"}:${continuing ? "after" : "start"}`;
    let statement = this.listStatements.get(id);
    if (statement) return statement;
    const after = (column: string): string => (continuing ? `AND ${column} > @after` : "");
    const sql = atHead
      ? `SELECT l.key, l.value, l.create_rev AS createRevision, l.rev AS modRevision
         FROM current c JOIN log l ON l.rev = c.rev
         WHERE ${inRange("c.key")} ${after("c.key")}
         ORDER BY c.key LIMIT @limit`
      : // Walks the (key, rev) index in key order, keeping each key's last row at or before the revision,
        // so a page stops after `limit` keys instead of sorting the whole range.
        `SELECT l.key, l.value, l.create_rev AS createRevision, l.rev AS modRevision
         FROM log l
         WHERE ${inRange("l.key")} ${after("l.key")} AND l.rev <= @revision
           AND l.rev = (SELECT max(x.rev) FROM log x WHERE x.key = l.key AND x.rev <= @revision)
           AND l.deleted = 0
         ORDER BY l.key LIMIT @limit`;
    statement = this.db.prepare<Record<string, unknown>, ValueRow>(sql);
    this.listStatements.set(id, statement);
    return statement;
  }

  /** Hands a committed change to every live watcher of its key. */
  private notify(event: WatchEvent): void {
    const key = event.type === "put" ? event.kv.key : event.key;
    const revision = event.type === "put" ? event.kv.modRevision : event.revision;
    for (const watcher of this.watchers.of(key)) {
      if (!watcher.live || revision <= watcher.cursor) continue;
      watcher.channel.push(event);
    }
  }

  /**
   * Sends a watcher the history after its cursor, one window per turn of the event loop. The window
   * that reaches the head and the switch to live delivery happen in one synchronous step, so no write
   * can fall between them: nothing is missed and nothing is sent twice.
   */
  private replay(watcher: LiveWatcher): void {
    if (this.closed || watcher.channel.isEnded) return;
    if (watcher.cursor < this.compacted) {
      watcher.channel.fail(new CompactedError(watcher.cursor, this.compacted));
      return;
    }
    if (watcher.cursor >= this.head) {
      watcher.live = true;
      return;
    }
    const range = { start: watcher.prefix, end: rangeEnd(watcher.prefix) };
    // Fewer history rows under the prefix than one window holds, in a span longer than one: they are read
    // by key, all at once (the count stops at a window's worth).
    if (this.head - watcher.cursor > REPLAY_WINDOW && this.historyUnder.get({ ...range, limit: REPLAY_WINDOW })! < REPLAY_WINDOW) {
      for (const row of this.replayRowsByKey.all({ ...range, from: watcher.cursor, to: this.head })) watcher.channel.push(historyEvent(row));
      watcher.cursor = this.head;
      watcher.live = true;
      return;
    }
    const to = Math.min(this.head, watcher.cursor + REPLAY_WINDOW);
    const rows = this.replayRows.all({ ...range, from: watcher.cursor, to });
    for (const row of rows) watcher.channel.push(historyEvent(row));
    watcher.cursor = to;
    if (to >= this.head) {
      watcher.live = true;
      return;
    }
    setImmediate(() => this.replay(watcher));
  }

  private async compactTo(revision: number): Promise<void> {
    if (this.closed) return;
    if (revision <= this.compacted) return;
    if (revision > this.head) throw new FutureRevisionError(revision, this.head);
    this.db.transaction(() => {
      this.setMeta.run("compacted", revision);
      this.setMeta.run("head_at_compaction", this.head);
    })();
    this.compacted = revision;
    // Rows superseded at or before the compaction revision are never read again (lists and watches
    // start at or after it), nor are tombstones at or before it once the rows they superseded are gone.
    if (this.unlistedUpTo > 0) {
      await this.scanHistory(revision);
      this.dropRetired(revision);
      if (revision >= this.unlistedUpTo && !this.closed) this.unlistedUpTo = 0;
      return;
    }
    const rows = this.dropRetired(revision);
    try {
      for (let start = 0; start < rows.length && !this.closed; start += COMPACT_BATCH) {
        const batch = rows.slice(start, start + COMPACT_BATCH);
        this.db.transaction(() => {
          for (const row of batch) this.deleteLogRow.run(row);
        })();
        await nextTurn();
      }
    } catch (error) {
      // Rows off the list but maybe not deleted: the next compaction looks for them in the history.
      this.unlistedUpTo = revision;
      throw error;
    }
  }

  /** Takes the listed rows retired at or below `revision` off the list, and returns them. */
  private dropRetired(revision: number): number[] {
    const rows: number[] = [];
    let at = this.retiredStart;
    while (at < this.retired.length && this.retired[at + 1]! <= revision) {
      rows.push(this.retired[at]!);
      at += 2;
    }
    this.retiredStart = at;
    if (at > 65_536 && at * 2 > this.retired.length) {
      this.retired = this.retired.slice(at);
      this.retiredStart = 0;
    }
    return rows;
  }

  /** Finds and deletes every retired row at or below `revision` by reading the whole history. */
  private async scanHistory(revision: number): Promise<void> {
    // A row is judged before anything in its batch is deleted, and earlier rows in earlier batches.
    let after = 0;
    while (!this.closed) {
      const candidates = this.compactionCandidates.all({ after, upTo: revision, limit: COMPACT_BATCH });
      if (candidates.length === 0) return;
      this.db.transaction(() => {
        for (const candidate of candidates) {
          if (candidate.superseded || candidate.deleted) this.deleteLogRow.run(candidate.rev);
        }
      })();
      after = candidates[candidates.length - 1]?.rev ?? revision;
      await nextTurn();
    }
  }
}

function historyEvent(row: HistoryRow): WatchEvent {
  const prev: KeyValue | undefined =
    row.prevRevision !== null && row.prevValue !== null
      ? {
          key: row.key,
          value: row.prevValue,
          createRevision: row.prevCreateRevision ?? 0,
          modRevision: row.prevRevision,
        }
      : undefined;
  if (row.deleted) {
    return {
      type: "delete",
      key: row.key,
      revision: row.rev,
      prev: prev ?? { key: row.key, value: "", createRevision: row.createRevision, modRevision: 0 },
    };
  }
  const kv: KeyValue = {
    key: row.key,
    value: row.value ?? "",
    createRevision: row.createRevision,
    modRevision: row.rev,
  };
  return prev ? { type: "put", kv, prev } : { type: "put", kv };
}
