// The sim cloud's persistent state in its own SQLite file (WAL): resources with their pending transitions,
// idempotency tokens, and settings (accounts, quotas, capacity, generator state). Everything is also kept
// in memory; every change is written through at once, so a restart loses nothing.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import type { Database as SqliteDatabase, Statement } from "better-sqlite3";
import type { RecordFor } from "./records.ts";
import type { StoredResource } from "./resource-kinds.ts";

export interface ClientTokenEntry {
  paramsHash: string;
  resourceId: string;
  /** The resource's last view (JSON) once it is gone, so the token keeps answering. */
  tombstone: string | undefined;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS resources (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS client_tokens (
  account TEXT NOT NULL,
  kind TEXT NOT NULL,
  token TEXT NOT NULL,
  params_hash TEXT NOT NULL,
  resource_id TEXT NOT NULL,
  tombstone TEXT,
  PRIMARY KEY (account, kind, token)
);
CREATE INDEX IF NOT EXISTS client_tokens_by_resource ON client_tokens (resource_id);
CREATE TABLE IF NOT EXISTS settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
`;

export class StateStore {
  private readonly db: SqliteDatabase;
  private readonly records = new Map<string, StoredResource>();
  /** The same records by kind, so that listing one kind does not walk every other (thousands of instances). */
  private readonly byKind = new Map<string, Map<string, StoredResource>>();
  private readonly statements: {
    put: Statement<[string, string, string]>;
    remove: Statement<[string]>;
    findToken: Statement<[string, string, string]>;
    saveToken: Statement<[string, string, string, string, string]>;
    tombstone: Statement<[string, string]>;
    getSetting: Statement<[string]>;
    putSetting: Statement<[string, string]>;
    settingsLike: Statement<[string]>;
  };

  private readonly listeners = new Set<(record: StoredResource, removed: boolean) => void>();

  /** Opens (or creates) the state file; ":memory:" keeps the state in memory only. */
  constructor(readonly path: string) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    if (path !== ":memory:") this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.exec(SCHEMA);
    this.statements = {
      put: this.db.prepare(
        "INSERT INTO resources (id, kind, body) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body",
      ),
      remove: this.db.prepare("DELETE FROM resources WHERE id = ?"),
      findToken: this.db.prepare(
        "SELECT params_hash, resource_id, tombstone FROM client_tokens WHERE account = ? AND kind = ? AND token = ?",
      ),
      saveToken: this.db.prepare(
        "INSERT INTO client_tokens (account, kind, token, params_hash, resource_id) VALUES (?, ?, ?, ?, ?)",
      ),
      tombstone: this.db.prepare("UPDATE client_tokens SET tombstone = ? WHERE resource_id = ?"),
      getSetting: this.db.prepare("SELECT value FROM settings WHERE key = ?"),
      putSetting: this.db.prepare("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)"),
      settingsLike: this.db.prepare("SELECT key, value FROM settings WHERE key LIKE ? ORDER BY key"),
    };
    for (const row of this.db.prepare("SELECT body FROM resources ORDER BY rowid").all() as { body: string }[]) {
      const record = JSON.parse(row.body) as StoredResource;
      this.records.set(record.id, record);
      this.ofKind(record.kind).set(record.id, record);
    }
  }

  /** Runs `fn` in one SQLite transaction (all its writes land, or none). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  has(id: string): boolean {
    return this.records.has(id);
  }

  /** The record with that id, whatever its kind. */
  find(id: string): StoredResource | undefined {
    return this.records.get(id);
  }

  /** The record with that id if it is of that kind. */
  get<K extends string>(kind: K, id: string): RecordFor<K> | undefined {
    const record = this.records.get(id);
    return record && record.kind === kind ? (record as RecordFor<K>) : undefined;
  }

  /** Every record of a kind, in creation order (kept across restarts: an update keeps the row). */
  all<K extends string>(kind: K): RecordFor<K>[] {
    return [...this.ofKind(kind).values()] as RecordFor<K>[];
  }

  private ofKind(kind: string): Map<string, StoredResource> {
    let records = this.byKind.get(kind);
    if (!records) this.byKind.set(kind, (records = new Map()));
    return records;
  }

  /** Every record, in creation order. */
  everything(): StoredResource[] {
    return [...this.records.values()];
  }

  /** Tells `listener` of every record written (new or changed) or removed from now on. */
  onChange(listener: (record: StoredResource, removed: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Writes a record (new or changed). */
  put(record: StoredResource): void {
    this.statements.put.run(record.id, record.kind, JSON.stringify(record));
    this.records.set(record.id, record);
    this.ofKind(record.kind).set(record.id, record);
    for (const listener of this.listeners) listener(record, false);
  }

  /** Removes a record; idempotency tokens that named it keep `tombstone` as their answer. */
  remove(id: string, tombstone: object): void {
    this.statements.remove.run(id);
    this.statements.tombstone.run(JSON.stringify(tombstone), id);
    const record = this.records.get(id);
    if (record) this.byKind.get(record.kind)?.delete(id);
    this.records.delete(id);
    if (record) for (const listener of this.listeners) listener(record, true);
  }

  findToken(account: string, kind: string, token: string): ClientTokenEntry | undefined {
    const row = this.statements.findToken.get(account, kind, token) as
      | { params_hash: string; resource_id: string; tombstone: string | null }
      | undefined;
    if (!row) return undefined;
    return { paramsHash: row.params_hash, resourceId: row.resource_id, tombstone: row.tombstone ?? undefined };
  }

  saveToken(account: string, kind: string, token: string, paramsHash: string, resourceId: string): void {
    this.statements.saveToken.run(account, kind, token, paramsHash, resourceId);
  }

  setting<T>(key: string): T | undefined {
    const row = this.statements.getSetting.get(key) as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  setSetting(key: string, value: unknown): void {
    this.statements.putSetting.run(key, JSON.stringify(value));
  }

  /** Settings whose key starts with `prefix`, in key order. */
  settingsWithPrefix<T>(prefix: string): [string, T][] {
    const rows = this.statements.settingsLike.all(`${prefix.replaceAll("%", "")}%`) as { key: string; value: string }[];
    return rows.map((row) => [row.key, JSON.parse(row.value) as T]);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
