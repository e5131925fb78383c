// Opens the store `slipway up` was asked for, with the objects of sensitive kinds (Secrets) and the
// control plane's credentials encrypted at rest.
import { join } from "node:path";
import type { Registry } from "../api/registry.ts";
import { encryptedPrefixes } from "../apiserver/storage-keys.ts";
import { EncryptedStore, loadEncryptionKey } from "../store/encryption.ts";
import { EtcdStore } from "../store/etcd.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { Store } from "../store/store.ts";

export type StoreKind = "sqlite" | "etcd";

export async function openStore(options: { kind: StoreKind; dataDir: string; etcdEndpoints?: string[]; registry: Registry }): Promise<Store> {
  const key = loadEncryptionKey({ dataDir: options.dataDir, env: process.env });
  let inner: Store;
  if (options.kind === "etcd") {
    if (!options.etcdEndpoints || options.etcdEndpoints.length === 0) throw new Error("--store etcd needs --etcd-endpoints");
    inner = await EtcdStore.connect(options.etcdEndpoints);
  } else {
    inner = SqliteStore.open(join(options.dataDir, "state.db"));
  }
  return new EncryptedStore(inner, { key, prefixes: encryptedPrefixes(options.registry) });
}
