import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SimMachinePoolObject } from "../../api/slipway/simmachinepool.ts";
import { joinBootstrap, renderUserData } from "../../bootstrap/cloudinit.ts";
import type { BootstrapSecretInfo, BootstrapSecretSpec, PoolChange, PoolInfo, PoolSpec, PoolTemplate } from "../../providers/provider.ts";
import { Client } from "../../runtime/client.ts";
import { ManualClock, memoryObjects, reconcileContext } from "../../runtime/testing.ts";
import { BOOTSTRAP_PARTS_KEY } from "../bootstrapconfig/controller.ts";
import { TAG_OWNER_UID } from "../contract.ts";
import { poolWithBootstrapData } from "../testing.ts";
import { holdWhilePoolDeleting } from "../pool-parts.ts";
import { deleteScaleSet, ensureScaleSet, lowerFloorForDeletion, type SimMachinePoolScope } from "./controller.ts";

const TOKEN = "abcdef.0123456789abcdef";
const HOUR = 3_600_000;

/** A pool on a scale set whose data Secret holds a join, a cloud with or without bootstrap secrets. */
async function setUp(withSecrets: boolean) {
  const client = new Client(await memoryObjects());
  const bootstrap = joinBootstrap({ kubernetesVersion: "v1.31.0", controlPlaneEndpoint: "api:6443", bootstrapToken: TOKEN, caCertHashes: ["sha256:00ff"], node: { labels: {} } });
  const pool = await poolWithBootstrapData(client, {
    infrastructure: { kind: "SimMachinePool", name: "w-set" },
    connection: "sim",
    machineType: "s1.small",
    replicas: 2,
    data: { value: Buffer.from(renderUserData(bootstrap)).toString("base64"), [BOOTSTRAP_PARTS_KEY]: Buffer.from(JSON.stringify(bootstrap)).toString("base64") },
  });
  const secrets = new Map<string, BootstrapSecretSpec & BootstrapSecretInfo>();
  let made = 0;
  const store = {
    create: async (spec: BootstrapSecretSpec, options: { token: string; tags: Record<string, string> }) => {
      const again = [...secrets.values()].find((s) => s.name === spec.name);
      if (again) return again;
      const id = `secret-${++made}`;
      const info = { ...spec, id, tags: options.tags, expiresAt: new Date(clock.now() + spec.ttlSeconds * 1000).toISOString(), reads: 0, reference: { id, region: "sim-east-1" } };
      secrets.set(id, info);
      return info;
    },
    get: async (id: string) => secrets.get(id),
    findTagged: async (tags: Record<string, string>) => [...secrets.values()].filter((s) => Object.entries(tags).every(([k, v]) => s.tags[k] === v)),
    delete: async (id: string) => void secrets.delete(id),
  };
  let set: PoolInfo | undefined;
  const templates: PoolTemplate[] = [];
  const changes: PoolChange[] = [];
  const pools = {
    create: async (spec: PoolSpec) => {
      templates.push({ machineType: spec.machineType, imageId: spec.imageId, userData: spec.userData });
      return (set = { id: "asg-1", name: spec.name, state: "ready", cloudState: "active", tags: {}, zones: ["a"], minSize: spec.minSize, maxSize: 10, desired: spec.desired, replicas: 0, readyReplicas: 0, instances: [] } as PoolInfo);
    },
    get: async () => set,
    findTagged: async () => (set ? [set] : []),
    update: async (_id: string, change: PoolChange) => {
      changes.push(change);
      if (change.template) templates.push(change.template);
      if (change.minSize !== undefined) set!.minSize = change.minSize;
      return set!;
    },
    protect: async () => {},
    delete: async () => void (set = undefined),
  };
  const connection = { metadata: { name: "sim", namespace: "default" } };
  const providers = { open: async () => ({ capabilities: withSecrets ? { bootstrapSecrets: store } : {} }), capability: async () => pools };
  const object = { apiVersion: "slipway.dev/v1alpha1", kind: "SimMachinePool", metadata: { name: "w-set", namespace: "default", uid: "set-uid" }, spec: { minSize: 0, maxSize: 10 } } as SimMachinePoolObject;
  const clock = new ManualClock();
  const events: string[] = [];
  const ctx = reconcileContext({ client, clock, event: async (_o, _t, reason, message) => void events.push(`${reason}: ${message}`) });
  const scope = {
    original: object,
    object: structuredClone(object),
    providers,
    pollMs: 10,
    pool,
    cluster: { metadata: { name: "demo", namespace: "default", uid: "cluster-uid" } },
    connection,
    infrastructure: { metadata: { name: "demo-sim" }, status: { zones: ["a"], subnets: { a: "subnet-1" }, securityGroupId: "sg-1", images: { "ubuntu-22.04": "img-1" } } },
  } as unknown as SimMachinePoolScope;
  return { ctx, scope, clock, secrets, templates, changes, events, deleteSet: () => void (set = undefined) };
}

describe("the SimMachinePool's launch template", () => {
  it("names a cloud secret of the pool holding the join, readable by its instances, made again before it ends and deleted with the pool", async () => {
    const { ctx, scope, clock, secrets, templates, events, deleteSet } = await setUp(true);
    assert.equal((await ensureScaleSet(ctx, scope))?.halt, undefined, JSON.stringify(scope.waiting));
    const first = [...secrets.values()];
    assert.equal(first.length, 1);
    assert.match(templates[0]!.userData, new RegExp(`slipway-bootstrap-fetch --secret-id ${first[0]!.id} --region sim-east-1`));
    assert.doesNotMatch(templates[0]!.userData, new RegExp(`${TOKEN}|JoinConfiguration|caCertHashes`), "the launch template holds no token");
    assert.match(first[0]!.value, new RegExp(TOKEN), "the token is in the secret");
    assert.deepEqual(first[0]!.readableBy, { [TAG_OWNER_UID]: "set-uid" }, "readable by the scale set's instances (the launch template's owner tag)");
    assert.ok(first[0]!.ttlSeconds >= 24 * 3600, "as long as the join token is valid");
    assert.equal(first[0]!.tags["slipway.dev/owner"], "SimMachinePool/w-set", "the sweeper finds it by its owner");

    // Reconciled again: the same secret, the launch template unchanged.
    await ensureScaleSet(ctx, scope);
    assert.equal(secrets.size, 1);
    assert.equal(templates.length, 1);

    // Halfway through its life it is made again; the one it replaced stays for instances still booting, older ones go.
    clock.advance(13 * HOUR);
    await ensureScaleSet(ctx, scope);
    assert.equal(secrets.size, 2);
    const second = scope.object.status!.bootstrapSecret!.id;
    assert.match(templates.at(-1)!.userData, new RegExp(`--secret-id ${second} `));
    clock.advance(13 * HOUR);
    await ensureScaleSet(ctx, scope);
    assert.deepEqual([...secrets.keys()].sort(), [second, scope.object.status!.bootstrapSecret!.id].sort());

    // Deleted with the pool, once its scale set is gone.
    deleteSet();
    await deleteScaleSet(ctx, scope);
    assert.equal(secrets.size, 0);
    assert.match(events.join("\n"), /BootstrapSecretDeleted: deleted bootstrap secret slipway\/default\/w-set-/);
    assert.doesNotMatch(events.join("\n"), new RegExp(TOKEN));
  });

  it("carries the join inline where the provider keeps no bootstrap secrets", async () => {
    const { ctx, scope, templates } = await setUp(false);
    await ensureScaleSet(ctx, scope);
    assert.match(templates[0]!.userData, new RegExp(TOKEN));
    assert.doesNotMatch(templates[0]!.userData, /slipway-bootstrap-fetch/);
  });
});

describe("the SimMachinePool of a pool being deleted", () => {
  it("lowers its scale set's minSize to 0, so the machines can each remove their instance, and raises nothing", async () => {
    const { ctx, scope, changes, events } = await setUp(false);
    scope.object.spec = { minSize: 1, maxSize: 10 };
    await ensureScaleSet(ctx, scope);
    await lowerFloorForDeletion(ctx, scope);
    assert.equal(await holdWhilePoolDeleting(ctx, scope), undefined, "a live pool goes on");
    assert.deepEqual(changes, [], "nothing changes while the pool lives");

    scope.pool!.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    await lowerFloorForDeletion(ctx, scope);
    assert.deepEqual(changes, [{ minSize: 0 }]);
    assert.ok(events.some((e) => /^ScaleSetResized: minSize of scale set asg-1 set to 0/.test(e)), events.join("\n"));
    assert.equal((await holdWhilePoolDeleting(ctx, scope))?.halt, true, "the desired capacity is the machines' to lower");
    assert.equal(scope.waiting?.reason, "PoolDeleting");
    await lowerFloorForDeletion(ctx, scope);
    assert.equal(changes.length, 1, "once");
  });
});
