// The controllers of `slipway up`: a controller manager over the object service, holding every shard
// on SQLite (one process) or its share of them through etcd leases when replicas share an etcd cluster.
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { Registry as MetricsRegistry } from "prom-client";
import type { ObjectService } from "../apiserver/objects.ts";
import { registerOperationController } from "../controllers/operation/controller.ts";
import { ControllerManager } from "../runtime/manager.ts";
import { ShardLeases } from "../runtime/shard-leases.ts";
import { EncryptedStore } from "../store/encryption.ts";
import { EtcdStore } from "../store/etcd.ts";
import type { Store } from "../store/store.ts";

export interface ControllersOptions {
  objects: ObjectService;
  /** The store the object service writes to (the etcd store underneath holds the shard leases). */
  store: Store;
  replica: string;
  log: Logger;
  metrics: MetricsRegistry;
  /** TTL of the shard lease on etcd. Default 5 s. */
  shardLeaseTtlSeconds?: number;
  /** How long a stopping replica lets reconciles in flight finish. Default 10 s. */
  shutdownGraceMs?: number;
}

/** The replica name `slipway up` uses unless told otherwise: host and port, unique on one machine. */
export function defaultReplicaName(port: number): string {
  return `${hostname()}:${port}`;
}

function etcdUnder(store: Store): EtcdStore | undefined {
  const inner = store instanceof EncryptedStore ? store.unwrap() : store;
  return inner instanceof EtcdStore ? inner : undefined;
}

export async function startControllers(options: ControllersOptions): Promise<ControllerManager> {
  const etcd = etcdUnder(options.store);
  const log = options.log;
  const manager = new ControllerManager({
    objects: options.objects,
    replica: options.replica,
    log,
    metrics: options.metrics,
    shutdownGraceMs: options.shutdownGraceMs,
    coordinator: etcd
      ? (shards) =>
          new ShardLeases({
            store: etcd,
            leases: etcd.leases(),
            replica: options.replica,
            shards,
            log,
            ttlSeconds: options.shardLeaseTtlSeconds,
          })
      : undefined,
  });
  registerOperationController(manager);
  await manager.start();
  return manager;
}
