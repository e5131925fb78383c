import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { HostObject } from "../../api/kinds.ts";
import type { HostMachinePoolObject } from "../../api/slipway/hostmachinepool.ts";
import type { PoolInfo, PoolInstanceInfo, PoolSpec } from "../../providers/provider.ts";
import { Client } from "../../runtime/client.ts";
import { ManualClock, memoryObjects, reconcileContext } from "../../runtime/testing.ts";
import { poolWithBootstrapData } from "../testing.ts";
import { holdWhilePoolDeleting } from "../pool-parts.ts";
import { awaitOwner, ensureHostSet, freeHosts, releaseHosts, type HostMachinePoolScope } from "./controller.ts";

function host(name: string, labels: Record<string, string>, claimed = false): HostObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Host",
    metadata: { name, namespace: "default", labels: { "slipway.dev/connection": "lab", ...labels } },
    spec: { address: "10.0.0.1", sshKeySecretRef: { name: "lab-key" } },
    status: { conditions: [{ type: "Reachable", status: "True", reason: "LoggedIn", message: "", lastTransitionTime: "2026-01-01T00:00:00Z" }], ...(claimed ? { claim: { token: "other", tags: {}, claimedAt: "2026-01-01T00:00:00Z" } } : {}) },
  } as HostObject;
}

/** A pool of `replicas` on hosts labelled pool=w, three Hosts of the pool's connection: two of them free and selected. */
async function setUp(replicas: number) {
  const client = new Client(await memoryObjects());
  const pool = await poolWithBootstrapData(client, { infrastructure: { kind: "HostMachinePool", name: "w-hosts" }, connection: "lab", machineType: "host", replicas, data: { value: Buffer.from("#cloud-config\n").toString("base64") } });
  const made: PoolSpec[] = [];
  const deleted: string[] = [];
  let instances: PoolInstanceInfo[] = [];
  let set: PoolInfo | undefined;
  const info = (desired: number): PoolInfo => ({ id: "default-w-hosts", name: "default-w-hosts", state: "ready", cloudState: "holding", tags: {}, zones: ["lab"], minSize: 0, maxSize: desired, desired, replicas: instances.length, readyReplicas: 0, instances });
  const pools = {
    create: async (spec: PoolSpec) => {
      made.push(spec);
      instances = ["h1", "h2"].slice(0, spec.desired).map((h) => ({ instanceId: h, providerId: `ssh://default/lab/${h}`, zone: "lab", state: "pending", healthy: true, protected: true, upToDate: true }));
      return (set = info(spec.desired));
    },
    get: async () => set,
    update: async () => set!,
    instances: async () => instances,
    delete: async (id: string) => void deleted.push(id),
  };
  const object = { apiVersion: "slipway.dev/v1alpha1", kind: "HostMachinePool", metadata: { name: "w-hosts", namespace: "default", uid: "hmp-uid", ownerReferences: [{ apiVersion: "slipway.dev/v1alpha1", kind: "MachinePool", name: "w", uid: "pool-uid", controller: true }] }, spec: { hostSelector: { matchLabels: { pool: "w" } } } } as HostMachinePoolObject;
  const ctx = reconcileContext({ client, clock: new ManualClock(), event: async () => {} });
  const scope = {
    original: object,
    object: structuredClone(object),
    providers: { capability: async () => pools },
    pollMs: 10,
    pool,
    cluster: { metadata: { name: "demo", namespace: "default", uid: "cluster-uid" } },
    connection: { metadata: { name: "lab", namespace: "default" } },
    hosts: [host("h1", { pool: "w" }), host("h2", { pool: "w" }), host("h3", { pool: "other" }), host("h4", { pool: "w" }, true)],
  } as unknown as HostMachinePoolScope;
  return { ctx, scope, made, deleted, clearInstances: () => void (instances = []) };
}

describe("the HostMachinePool controller", () => {
  it("does nothing until a MachinePool owns it", async () => {
    const { ctx, scope, made } = await setUp(1);
    scope.object.metadata.ownerReferences = [];
    assert.equal((await awaitOwner(ctx, scope))?.halt, true);
    assert.equal(scope.waiting?.reason, "WaitingForOwner");
    assert.match(scope.waiting?.message ?? "", /spec\.template\.infrastructureRef/);
    assert.equal(made.length, 0);
  });

  it("counts as free only the reachable, unclaimed Hosts its selector picks", async () => {
    const { scope } = await setUp(1);
    assert.deepEqual(freeHosts(scope), ["h1", "h2"]);
    scope.object.spec = { hostSelector: { matchLabels: { pool: "w" } }, hosts: ["h2", "h3"] };
    assert.deepEqual(freeHosts(scope), ["h2"]);
  });

  it("claims nothing when spec.replicas exceeds the free selected hosts, and says how many there are", async () => {
    const { ctx, scope, made } = await setUp(3);
    assert.equal((await ensureHostSet(ctx, scope))?.halt, true);
    assert.equal(scope.waiting?.reason, "InsufficientHosts");
    assert.match(scope.waiting?.message ?? "", /spec\.replicas of MachinePool w \(3\) exceeds the hosts available to HostMachinePool w-hosts: 2 \(0 held, 2 free/);
    assert.equal(made.length, 0, "no host is claimed");
    assert.equal(scope.object.status?.available, 2);
  });

  it("claims nothing more once its pool is being deleted, whose machines release their hosts", async () => {
    const { ctx, scope } = await setUp(2);
    assert.equal(await holdWhilePoolDeleting(ctx, scope), undefined, "a live pool goes on");
    scope.pool!.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    assert.equal((await holdWhilePoolDeleting(ctx, scope))?.halt, true);
    assert.equal(scope.waiting?.reason, "PoolDeleting");
  });

  it("counts the hosts its set already holds as held when the provider has to make the set again (after a restart)", async () => {
    const { ctx, scope, made } = await setUp(3);
    const mine = host("h4", { pool: "w" }, true);
    mine.status!.claim!.tags = { "slipway.dev/host-pool": "default-w-hosts" };
    scope.hosts = [...scope.hosts.filter((h) => h.metadata.name !== "h4"), mine];
    await ensureHostSet(ctx, scope);
    assert.equal(scope.waiting, undefined, "1 held and 2 free are enough for 3 replicas");
    assert.equal(made[0]!.desired, 3);
  });

  it("claims one host per replica among those selected, reports them, and releases them all on deletion", async () => {
    const { ctx, scope, made, deleted, clearInstances } = await setUp(2);
    assert.equal((await ensureHostSet(ctx, scope))?.halt, undefined, JSON.stringify(scope.waiting));
    assert.equal(made.length, 1);
    assert.deepEqual(made[0]!.hosts, { labels: { pool: "w" } });
    assert.equal(made[0]!.desired, 2);
    assert.deepEqual(scope.object.status?.hostNames, ["h1", "h2"]);
    assert.deepEqual(scope.object.status?.providerIDList, ["ssh://default/lab/h1", "ssh://default/lab/h2"]);

    assert.equal((await releaseHosts(ctx, scope))?.halt, true, "waits while hosts are held");
    assert.deepEqual(deleted, ["default-w-hosts"]);
    clearInstances();
    assert.equal(await releaseHosts(ctx, scope), undefined, "done once every host is released");
  });
});
