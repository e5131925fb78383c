import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry as MetricsRegistry } from "prom-client";
import type { ConnectionObject } from "../../api/kinds.ts";
import { clusterKind } from "../../api/slipway/cluster.ts";
import { connectionKind } from "../../api/slipway/connection.ts";
import { eventKind } from "../../api/core.ts";
import { registerConnectionController } from "../connection/controller.ts";
import { TAG_CLUSTER, TAG_CLUSTER_UID, TAG_OWNER, TAG_OWNER_UID } from "../contract.ts";
import { controllerTestEnv, type ControllerTestEnv } from "../testing.ts";
import { registerOrphanSweeper } from "./controller.ts";

describe("the orphan sweeper", () => {
  let env: ControllerTestEnv | undefined;
  afterEach(async () => {
    await env?.close();
    env = undefined;
  });

  /** A Ready connection, a paused cluster that owns one network, and networks whose owners are gone. */
  async function setUp(options: { dryRun: boolean }) {
    env = await controllerTestEnv();
    const metrics = new MetricsRegistry();
    registerConnectionController(env.manager, { providers: env.providers });
    registerOrphanSweeper(env.manager, { providers: env.providers }, { intervalMs: 100, graceMs: 300, dryRun: options.dryRun, metrics });
    await env.start();
    await env.client.of(connectionKind).create({ apiVersion: "slipway.dev/v1alpha1", kind: "Connection", metadata: { name: "east", namespace: "default" }, spec: { provider: "sim", region: "sim-east-1" } } as ConnectionObject);
    const connection = (await env.waitFor(connectionKind, "default", "east", (c) => c?.status?.phase === "Ready"))!;
    const cluster = await env.client.of(clusterKind).create({
      apiVersion: "slipway.dev/v1alpha1",
      kind: "Cluster",
      metadata: { name: "kept", namespace: "default" },
      spec: { paused: true, controlPlane: { connection: "east", machineType: "s1.medium" } },
    } as never);
    const infrastructure = await env.providers.capability(connection, "clusterInfrastructure");
    const network = (name: string, owner: string, ownerUid: string) =>
      infrastructure.create("network", { cidr: "10.0.0.0/16" }, {
        token: `sweeper-test/${name}`,
        tags: { [TAG_CLUSTER]: "default/kept", [TAG_CLUSTER_UID]: cluster.metadata.uid!, [TAG_OWNER]: owner, [TAG_OWNER_UID]: ownerUid },
      });
    const owned = await network("owned", "Cluster/kept", cluster.metadata.uid!);
    const gone = await network("gone", "Machine/kept-cp-0", "uid-of-a-deleted-machine");
    const replaced = await network("replaced", "Cluster/kept", "uid-of-an-earlier-cluster");
    // Not Slipway's: no owner tags at all.
    const foreign = await infrastructure.create("network", { cidr: "10.1.0.0/16" }, { token: "someone-else", tags: { team: "data" } });
    // A machine's bootstrap secret, left behind by a machine that no longer exists, and one whose owner does.
    const secrets = await env.providers.capability(connection, "bootstrapSecrets");
    const secret = (name: string, owner: string, ownerUid: string) =>
      secrets.create({ name: `slipway/default/${name}`, value: "abcdef.0123456789abcdef", ttlSeconds: 3600, readableBy: { [TAG_OWNER_UID]: ownerUid } }, {
        token: `sweeper-test/secret/${name}`,
        tags: { [TAG_CLUSTER]: "default/kept", [TAG_CLUSTER_UID]: cluster.metadata.uid!, [TAG_OWNER]: owner, [TAG_OWNER_UID]: ownerUid },
      });
    const orphanSecret = await secret("kept-w-0", "Machine/kept-w-0", "uid-of-a-deleted-worker");
    const keptSecret = await secret("kept", "Cluster/kept", cluster.metadata.uid!);
    // A scale set's bootstrap secret whose SimMachinePool is gone.
    const poolSecret = await secret("kept-set-0a1b", "SimMachinePool/kept-set", "uid-of-a-deleted-scale-set-pool");
    return { infrastructure, secrets, metrics, owned, gone, replaced, foreign, orphanSecret, keptSecret, poolSecret };
  }

  it("deletes resources whose owner is gone once the grace period has passed, with an Event and a metric, and leaves the rest", async () => {
    const { infrastructure, secrets, metrics, owned, gone, replaced, foreign, orphanSecret, keptSecret, poolSecret } = await setUp({ dryRun: false });
    const deadline = Date.now() + 10_000;
    const orphansLeft = async () => (await infrastructure.get("network", gone.id)) || (await infrastructure.get("network", replaced.id)) || (await secrets.get(orphanSecret.id)) || (await secrets.get(poolSecret.id));
    while (Date.now() < deadline && (await orphansLeft())) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(await infrastructure.get("network", gone.id), undefined, "an orphan whose owner was deleted is deleted");
    assert.equal(await infrastructure.get("network", replaced.id), undefined, "an orphan whose owner was replaced (another uid) is deleted");
    assert.ok(await infrastructure.get("network", owned.id), "a resource whose owner exists is kept");
    assert.ok(await infrastructure.get("network", foreign.id), "a resource without Slipway's tags is not Slipway's to delete");
    assert.equal(await secrets.get(orphanSecret.id), undefined, "a bootstrap secret of a machine that is gone is deleted");
    assert.equal(await secrets.get(poolSecret.id), undefined, "a bootstrap secret of a scale set's pool that is gone is deleted");
    assert.ok(await secrets.get(keptSecret.id), "a bootstrap secret whose owner exists is kept");
    const events = (await env!.client.of(eventKind).list("default")).items.filter((e) => (e as { reason?: string }).reason === "OrphanDeleted");
    assert.equal(events.length, 4);
    assert.ok(events.some((e) => /^deleted bootstrapSecret secret-\S+ \(tagged for Machine\/kept-w-0/.test((e as { message?: string }).message ?? "")));
    assert.ok(events.some((e) => /^deleted network .* no longer exists/.test((e as { message?: string }).message ?? "")));
    assert.match(await metrics.metrics(), /slipway_orphaned_cloud_resources_total\{connection="east",kind="network",action="deleted"\} 2/);
    assert.match(await metrics.metrics(), /slipway_orphaned_cloud_resources_total\{connection="east",kind="bootstrapSecret",action="deleted"\} 2/);
  });

  it("only reports in dry-run mode", async () => {
    const { infrastructure, metrics, gone } = await setUp({ dryRun: true });
    const deadline = Date.now() + 10_000;
    let reported: unknown[] = [];
    while (Date.now() < deadline && reported.length < 4) {
      reported = (await env!.client.of(eventKind).list("default")).items.filter((e) => (e as { reason?: string }).reason === "OrphanFound");
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(reported.length, 4);
    assert.ok(await infrastructure.get("network", gone.id), "nothing is deleted in a dry run");
    assert.match(await metrics.metrics(), /action="reported"\} [1-9]/);
  });
});
