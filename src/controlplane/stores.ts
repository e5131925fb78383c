// Opens the store `slipway up` was asked for, with secrets and credentials encrypted at rest.
import { join } from "node:path";
import { EncryptedStore, loadEncryptionKey } from "../store/encryption.ts";
import { EtcdStore } from "../store/etcd.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { Store } from "../store/store.ts";

export type StoreKind = "sqlite" | "etcd";

/** Key prefixes whose values are encrypted: Secrets and the control plane's own credentials. */
export const ENCRYPTED_PREFIXES = ["/registry/core/secrets/", "/slipway/"];

export async function openStore(options: { kind: StoreKind; dataDir: string; etcdEndpoints?: string[] }): Promise<Store> {
  const key = loadEncryptionKey({ dataDir: options.dataDir, env: process.env });
  let inner: Store;
  if (options.kind === "etcd") {
    if (!options.etcdEndpoints || options.etcdEndpoints.length === 0) throw new Error("--store etcd needs --etcd-endpoints");
    inner = await EtcdStore.connect(options.etcdEndpoints);
  } else {
    inner = SqliteStore.open(join(options.dataDir, "state.db"));
  }
  return new EncryptedStore(inner, { key, prefixes: ENCRYPTED_PREFIXES });
}
