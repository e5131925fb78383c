// The controllers of `slipway up`: a controller manager over the object service, holding every shard
// on SQLite (one process) or its share of them through etcd leases when replicas share an etcd cluster.
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { Registry as MetricsRegistry } from "prom-client";
import type { ObjectApi } from "../apiserver/objects.ts";
import { PkiWorkers } from "../bootstrap/pki-workers.ts";
import { registerOperationController } from "../controllers/operation/controller.ts";
import { registerClusterController } from "../controllers/cluster/controller.ts";
import { registerConnectionController } from "../controllers/connection/controller.ts";
import { registerRegistrationController } from "../controllers/registration/controller.ts";
import { registerOrphanSweeper, type SweeperOptions } from "../controllers/sweeper/controller.ts";
import { registerResourceSyncController } from "../controllers/resourcesync/controller.ts";
import { registerAddonController } from "../controllers/addon/controller.ts";
import { registerClusterAddonsController } from "../controllers/addon/cluster-status.ts";
import { registerLogicalCloudController } from "../controllers/logicalcloud/controller.ts";
import { registerHostController } from "../controllers/host/controller.ts";
import { registerInfrastructureController } from "../controllers/infrastructure/controller.ts";
import { ProviderResolver } from "../controllers/providers.ts";
import { registerMachineController } from "../controllers/machine/controller.ts";
import { registerMachinePoolController } from "../controllers/machinepool/controller.ts";
import { registerBootstrapConfigController } from "../controllers/bootstrapconfig/controller.ts";
import { registerSimMachinePoolController } from "../controllers/simmachinepool/controller.ts";
import { registerHostMachinePoolController } from "../controllers/hostmachinepool/controller.ts";
import { registerLeaseController } from "../controllers/lease/controller.ts";
import { registerRealmControllers } from "../controllers/realm/controller.ts";
import { WorkloadClients } from "../controllers/workload.ts";
import type { ProviderRegistry } from "../providers/registry.ts";
import { ControllerManager } from "../runtime/manager.ts";
import { ShardLeases } from "../runtime/shard-leases.ts";
import { EncryptedStore } from "../store/encryption.ts";
import { EtcdStore } from "../store/etcd.ts";
import type { Store } from "../store/store.ts";

export interface ControllersOptions {
  objects: ObjectApi;
  /** The store the object service writes to (the etcd store underneath holds the shard leases). */
  store?: Store;
  replica: string;
  log: Logger;
  metrics: MetricsRegistry;
  /** TTL of the shard lease on etcd. Default 5 s. */
  shardLeaseTtlSeconds?: number;
  /** How long a stopping replica lets reconciles in flight finish. Default 10 s. */
  shutdownGraceMs?: number;
  /** The providers installed (`providers/index.ts`). */
  providers: ProviderRegistry;
  /** How often controllers look again at something slow (default 1 s). */
  pollMs?: number;
  /** How long before a Lease ends it warns (default 5 minutes). */
  leaseWarningMs?: number;
  /** How often a ResourceSync looks again at each applied cluster for drift, and a registered cluster is asked (default 30 s). */
  resyncMs?: number;
  /** How often every controller looks again at each object it holds (the informers' resync; default 10 minutes). */
  syncPeriodMs?: number;
  /** The orphan sweeper's interval, grace period and dry-run mode (defaults: 5 minutes, 10 minutes, off). */
  sweeper?: Omit<SweeperOptions, "metrics">;
  /** The control plane's URL (the addons' services are served under it). */
  url?: string;
  /** Where realms are served (the control plane's URL) and the CA of its serving certificate. */
  realms?: { baseUrl: () => string; caPem: string };
  /**
   * Whether the API server answers on this event loop (default true): then controllers take new work
   * only while the loop lags little. On a thread of their own they need not.
   */
  sharesLoopWithApi?: boolean;
}

/** The controllers as `slipway up` runs them, on its event loop or on a worker thread. */
export interface RunningControllers {
  /** Why they cannot work now, or undefined when they can (/readyz). */
  unready(): string | undefined | Promise<string | undefined>;
  /** Graceful: work in flight finishes (bounded), shards are handed back. */
  stop(): Promise<void>;
}

/** The replica name `slipway up` uses unless told otherwise: host and port, unique on one machine. */
export function defaultReplicaName(port: number): string {
  return `${hostname()}:${port}`;
}

function etcdUnder(store: Store | undefined): EtcdStore | undefined {
  const inner = store instanceof EncryptedStore ? store.unwrap() : store;
  return inner instanceof EtcdStore ? inner : undefined;
}

export async function startControllers(options: ControllersOptions): Promise<RunningControllers & { manager: ControllerManager }> {
  const etcd = etcdUnder(options.store);
  const log = options.log;
  const manager = new ControllerManager({
    objects: options.objects,
    replica: options.replica,
    log,
    metrics: options.metrics,
    shutdownGraceMs: options.shutdownGraceMs,
    resyncMs: options.syncPeriodMs,
    // The API server answers on the same event loop: controllers take new work only while it lags
    // less than this, so requests stay quick when a whole fleet is being built.
    pacer: options.sharesLoopWithApi === false ? undefined : { maxLagMs: 15 },
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
  const providers = new ProviderResolver(manager.client, options.providers);
  const workloads = new WorkloadClients(manager.client);
  // Certificates are made on a worker thread: X.509 encoding in JavaScript would otherwise be a tenth of
  // this process's event loop while a fleet is built.
  const pki = new PkiWorkers(1);
  const pollMs = options.pollMs ?? 1000;
  // Reconciles wait on the cloud and on workload clusters far longer than they compute: with a fleet in
  // flight, more of them at once keep the CPU busy instead of the queues long.
  registerConnectionController(manager, { providers });
  registerClusterController(manager, { providers, workloads, pki }, { pollMs, concurrency: 16 });
  registerInfrastructureController(manager, { providers }, { pollMs: Math.min(pollMs, 500), concurrency: 16 });
  registerMachinePoolController(manager, { providers, workloads }, { pollMs, concurrency: 16 });
  registerMachineController(manager, { providers, workloads }, { pollMs, concurrency: 32 });
  registerBootstrapConfigController(manager, { workloads }, { pollMs });
  registerSimMachinePoolController(manager, { providers }, { pollMs });
  registerHostMachinePoolController(manager, { providers }, { pollMs });
  registerOperationController(manager, { concurrency: 8 });
  registerLeaseController(manager, { providers }, { endingSoonMs: options.leaseWarningMs });
  registerRegistrationController(manager, { workloads }, options.resyncMs === undefined ? {} : { recheckMs: options.resyncMs });
  registerResourceSyncController(manager, { workloads }, options.resyncMs === undefined ? {} : { resyncMs: options.resyncMs });
  registerLogicalCloudController(manager, { workloads });
  registerAddonController(manager, { workloads }, { pollMs, ...(options.resyncMs === undefined ? {} : { resyncMs: options.resyncMs }) });
  registerClusterAddonsController(manager, { url: () => options.url ?? "" });
  registerHostController(manager);
  registerOrphanSweeper(manager, { providers }, { ...options.sweeper, metrics: options.metrics });
  if (options.realms) registerRealmControllers(manager, { ...options.realms, workloads, pollMs });
  await manager.start();
  return {
    manager,
    unready: () => manager.unready(),
    stop: async () => {
      await manager.stop();
      workloads.close();
      await pki.close();
    },
  };
}
