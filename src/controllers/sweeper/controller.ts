// The orphan sweeper: now and then, for every Connection, it lists what the cloud holds under Slipway's
// tags and looks for each resource's owner (the object named by its owner tag, with the uid of its
// owner-uid tag). A resource whose owner is gone — left by a crash between a cloud create and its
// record, or by objects deleted out from under Slipway — is an orphan. One that stays an orphan for the
// grace period is deleted (or, in dry-run mode, only reported), with an Event on the Connection and a
// metric per resource. Owners that exist are never second-guessed: their own controllers adopt what
// they made through idempotency tokens.
import { setImmediate as nextTurn } from "node:timers/promises";
import { Counter, type Registry as MetricsRegistry } from "prom-client";
import type { ConnectionObject } from "../../api/kinds.ts";
import { apiVersionOf } from "../../api/registry.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import type { Tags } from "../../providers/provider.ts";
import type { Controller, ReconcileContext } from "../../runtime/controller.ts";
import { keyFor } from "../../runtime/keys.ts";
import type { ControllerManager } from "../../runtime/manager.ts";
import { TAG_CLUSTER, TAG_OWNER, TAG_OWNER_UID } from "../contract.ts";
import type { ProviderResolver } from "../providers.ts";

export const SWEEPER_COMPONENT = "slipway.dev/orphan-sweeper";

export interface SweeperOptions {
  /** How often each connection is swept (default 5 minutes). */
  intervalMs?: number;
  /** How long a resource must stay an orphan before it is deleted (default 10 minutes). */
  graceMs?: number;
  /** Report orphans (Events, metric) without deleting them. */
  dryRun?: boolean;
  metrics?: MetricsRegistry;
}

/** One cloud resource of a connection, whatever capability holds it, and how to delete it. */
interface Swept {
  kind: string;
  id: string;
  tags: Tags;
  delete(): Promise<void>;
}

const INFRASTRUCTURE_KINDS = ["loadBalancer", "securityGroup", "subnet", "network", "keyPair"] as const;

/** Everything the connection's provider holds under Slipway's owner tag, capability by capability. */
async function tagged(providers: ProviderResolver, connection: ConnectionObject): Promise<Swept[]> {
  const provider = await providers.open(connection);
  const { machines, clusterInfrastructure, reservations, dns, poolInfrastructure, bootstrapSecrets } = provider.capabilities;
  const found: Swept[] = [];
  // Pools before instances: an instance of a pool that is left is replaced by the cloud.
  for (const pool of (await poolInfrastructure?.findTagged({})) ?? []) {
    found.push({ kind: "pool", id: pool.id, tags: pool.tags, delete: () => poolInfrastructure!.delete(pool.id) });
  }
  // Then instances, before the infrastructure: deleting them frees what it is held by.
  for (const instance of (await machines?.findTagged("instance", {})) ?? []) {
    found.push({ kind: "instance", id: instance.id, tags: instance.tags, delete: () => machines!.delete("instance", instance.id) });
  }
  // A bootstrap secret of a machine that is gone (a crash between its create and the machine's record).
  for (const secret of (await bootstrapSecrets?.findTagged({})) ?? []) {
    found.push({ kind: "bootstrapSecret", id: secret.id, tags: secret.tags, delete: () => bootstrapSecrets!.delete(secret.id) });
  }
  for (const record of (await dns?.findTagged({})) ?? []) found.push({ kind: "dnsRecord", id: record.id, tags: record.tags, delete: () => dns!.delete(record.id) });
  for (const reservation of (await reservations?.findTagged({})) ?? []) {
    found.push({ kind: "reservation", id: reservation.id, tags: reservation.tags, delete: () => reservations!.delete(reservation.id) });
  }
  for (const kind of INFRASTRUCTURE_KINDS) {
    for (const resource of (await clusterInfrastructure?.findTagged(kind, {})) ?? []) {
      found.push({ kind, id: resource.id, tags: resource.tags, delete: () => clusterInfrastructure!.delete(kind, resource.id) });
    }
  }
  return found.filter((r) => r.tags[TAG_OWNER] !== undefined && r.tags[TAG_OWNER_UID] !== undefined);
}

/**
 * Whether the resource's owner still exists (same uid); undefined when the owner is not a kind Slipway
 * knows. The cache of an informer some controller already runs answers for an owner it holds with that
 * uid (nearly every resource of a fleet); anything else is read from the store, so a cache behind the
 * store never makes an orphan. No informer is started for the sweep's sake.
 */
async function ownerExists(ctx: ReconcileContext, manager: ControllerManager, connection: ConnectionObject, tags: Tags): Promise<boolean | undefined> {
  const [kind, name] = tags[TAG_OWNER]!.split("/", 2);
  const def = ctx.client.objects.registry.byKind(apiVersionOf(connectionKind), kind ?? "");
  if (!def || !name) return undefined;
  const namespace = def.namespaced ? (tags[TAG_CLUSTER]?.split("/", 1)[0] ?? connection.metadata.namespace) : undefined;
  const informer = manager.informers.existing(def);
  if (informer?.hasSynced() && informer.cache.get(keyFor(namespace, name))?.metadata.uid === tags[TAG_OWNER_UID]) return true;
  const owner = await ctx.client.of(def).tryGet(namespace, name);
  return owner?.metadata.uid === tags[TAG_OWNER_UID];
}

export function registerOrphanSweeper(manager: ControllerManager, deps: { providers: ProviderResolver }, options: SweeperOptions = {}): Controller<ConnectionObject> {
  const intervalMs = options.intervalMs ?? 5 * 60_000;
  const graceMs = options.graceMs ?? 10 * 60_000;
  const connections = manager.informer(connectionKind);
  const swept = options.metrics
    ? new Counter({
        name: "slipway_orphaned_cloud_resources_total",
        help: "Cloud resources found without their owner, by connection, kind and what was done (deleted, reported).",
        labelNames: ["connection", "kind", "action"],
        registers: [options.metrics],
      })
    : undefined;
  /** When each resource was first seen orphaned, by connection key and resource id. */
  const orphanSince = new Map<string, Map<string, number>>();

  const reconcile = async (ctx: ReconcileContext) => {
    const connection = connections.cache.get(ctx.key);
    if (!connection || connection.metadata.deletionTimestamp) {
      orphanSince.delete(ctx.key);
      return;
    }
    if (connection.status?.phase !== "Ready") return { requeueAfterMs: intervalMs };
    const seen = orphanSince.get(ctx.key) ?? new Map<string, number>();
    const now = ctx.clock.now();
    const stillOrphaned = new Set<string>();
    // One read per owner (a cluster's infrastructure owns several resources), and the API's requests
    // between every few hundred: a fleet's connection has tens of thousands of tagged resources.
    const owners = new Map<string, boolean | undefined>();
    let looked = 0;
    for (const resource of await tagged(deps.providers, connection)) {
      if (++looked % 256 === 0) await nextTurn();
      const owner = `${resource.tags[TAG_CLUSTER] ?? ""} ${resource.tags[TAG_OWNER]} ${resource.tags[TAG_OWNER_UID]}`;
      if (!owners.has(owner)) owners.set(owner, await ownerExists(ctx, manager, connection, resource.tags));
      if (owners.get(owner) !== false) continue;
      stillOrphaned.add(resource.id);
      const since = seen.get(resource.id) ?? now;
      seen.set(resource.id, since);
      if (now - since < graceMs) continue;
      const what = `${resource.kind} ${resource.id} (tagged for ${resource.tags[TAG_OWNER]} of cluster ${resource.tags[TAG_CLUSTER] ?? "none"}, which no longer exists)`;
      if (options.dryRun) {
        await ctx.event(connection, "Warning", "OrphanFound", `${what}: would be deleted (dry run)`);
        swept?.inc({ connection: connection.metadata.name!, kind: resource.kind, action: "reported" });
        continue;
      }
      await resource.delete();
      ctx.log.info({ kind: resource.kind, id: resource.id, owner: resource.tags[TAG_OWNER] }, "deleted an orphaned cloud resource");
      await ctx.event(connection, "Normal", "OrphanDeleted", `deleted ${what}`);
      swept?.inc({ connection: connection.metadata.name!, kind: resource.kind, action: "deleted" });
      stillOrphaned.delete(resource.id);
    }
    for (const id of seen.keys()) if (!stillOrphaned.has(id)) seen.delete(id);
    orphanSince.set(ctx.key, seen);
    // Orphans inside their grace period are looked at again when it ends, not a whole interval later.
    const due = [...seen.values()].map((since) => since + graceMs - now);
    return { requeueAfterMs: Math.max(1_000, Math.min(intervalMs, ...due)) };
  };
  return manager.add<ConnectionObject>({ name: "orphan-sweeper", component: SWEEPER_COMPONENT, informer: connections, reconcile, concurrency: 2 });
}
