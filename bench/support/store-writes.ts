// Store writes by resource, counted from a SQLite store's history (the `log` table: one row per write).
// Read from a copy of the store's files, so the running server is not disturbed. Rows a compaction
// has removed are not in the history: the table says how many of the writes it could not attribute.
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { fixed } from "./report.ts";

/** "/registry/slipway.dev/machines/default/x" → "slipway.dev/machines"; "/registry/core/events/ns/x" → "core/events". */
export function resourceOfKey(key: string): string {
  const parts = key.split("/").filter(Boolean).slice(1);
  return parts.length >= 4 ? parts.slice(0, parts.length - 2).join("/") : parts.slice(0, -1).join("/");
}

/**
 * Runs `read` on a read-only copy of the SQLite store in `dataDir` (the running server is not disturbed),
 * made in a temporary directory, or as `keepAs` (+ "-wal", "-shm") when the copy is to be kept. The server
 * holds the file exclusively and keeps writing, so the files are copied one after the other: a copy taken
 * while a checkpoint moved pages between them reads as malformed, and is taken again.
 */
export function readStoreCopy<T>(dataDir: string, read: (db: Database.Database) => T, keepAs?: string): T {
  for (let attempt = 1; ; attempt++) {
    try {
      return readOneCopy(dataDir, read, keepAs);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= 5 || (code !== "SQLITE_CORRUPT" && code !== "SQLITE_NOTADB")) throw error;
    }
  }
}

function readOneCopy<T>(dataDir: string, read: (db: Database.Database) => T, keepAs: string | undefined): T {
  const copy = keepAs ? undefined : mkdtempSync(join(tmpdir(), "bench-store-"));
  const target = keepAs ?? join(copy!, "state.db");
  try {
    for (const file of readdirSync(dataDir).filter((f) => f.startsWith("state.db"))) copyFileSync(join(dataDir, file), target + file.slice("state.db".length));
    const db = new Database(target, { readonly: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  } finally {
    if (copy) rmSync(copy, { recursive: true, force: true });
  }
}

/** Writes after `afterRevision` by resource, most first, from a copy of a SQLite store (see readStoreCopy). */
export function writesByResource(db: Database.Database, afterRevision: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const row of db.prepare("SELECT key FROM log WHERE rev > ?").iterate(afterRevision) as Iterable<{ key: string }>) {
    const resource = resourceOfKey(row.key);
    counts.set(resource, (counts.get(resource) ?? 0) + 1);
  }
  return new Map([...counts].sort((a, b) => b[1] - a[1]));
}

/** Rows of the report's table: writes by resource, per cluster, and those compacted away. */
export function writesRows(byResource: Map<string, number>, total: number, clusters: number, title = "store writes until all Running"): string[][] {
  const counted = [...byResource.values()].reduce((a, b) => a + b, 0);
  const rows = [...byResource].map(([resource, count]) => [resource, String(count), fixed(count / clusters, 1)]);
  if (counted < total) rows.push(["(compacted, not attributed)", String(total - counted), fixed((total - counted) / clusters, 1)]);
  return [[title, "count", "per cluster"], ...rows, ["all", String(total), fixed(total / clusters, 1)]];
}
