import { SqliteStore } from "./src/store/sqlite.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
const value = JSON.stringify({ apiVersion: "v1", kind: "Pod", metadata: { name: "x" }, spec: { pad: "x".repeat(2300) } });
for (const variant of ["default", "ckpt10000", "syncoff"]) {
  const dir = mkdtempSync("/tmp/wb-");
  const store = SqliteStore.open(join(dir, "s.db"));
  const db = (store as unknown as { db: { pragma(s: string): unknown } }).db;
  if (variant === "ckpt10000") db.pragma("wal_autocheckpoint = 10000");
  if (variant === "syncoff") db.pragma("synchronous = OFF");
  const N = 40000;
  const t0 = process.cpuUsage(); const w0 = performance.now();
  for (let i = 0; i < N; i++) {
    const k = `/clusters/lb-${(i % 4000).toString(16).padStart(8, "0")}//registry/core/pods/kube-system/p${Math.floor(i / 4000)}`;
    const kv = await store.create(k, value);
    await store.update(k, value, kv.modRevision);
  }
  const u = process.cpuUsage(t0);
  console.log(variant, "us/write user", (u.user / (2 * N)).toFixed(1), "sys", (u.system / (2 * N)).toFixed(1), "wall", ((performance.now() - w0) * 1000 / (2 * N)).toFixed(1));
  await store.close(); rmSync(dir, { recursive: true, force: true });
}
