import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pino from "pino";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { SimCloudClient } from "./client.ts";
import { ManualClock } from "./clock.ts";
import { SimCloud } from "./cloud.ts";
import { InvalidParameterError, NotFoundError, UnauthorizedError } from "./errors.ts";
import { startSimCloudServer } from "./server.ts";
import { readyNetwork, waitFor } from "./test-support.ts";

const REGION = "sim-east-1";
const VALUE = "token: abcdef.0123456789abcdef\n-----BEGIN PRIVATE KEY-----\nMC4CAQ\n";
const clouds: SimCloud[] = [];
const dirs: string[] = [];
after(async () => {
  for (const cloud of clouds) await cloud.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A cloud on a manual clock with a second account, logging into `lines`. */
function secretCloud(lines: string[] = []) {
  const clock = new ManualClock();
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
  const cloud = new SimCloud({ profile: "instant", clock, accounts: [{ id: "other", token: "other-token" }], logger: pino({ level: "debug" }, sink) });
  clouds.push(cloud);
  return { clock, cloud, other: cloud.forAccount("other") };
}

describe("secrets", () => {
  it("answers the value only to its account, counts every read, and never shows it in views or listings", async () => {
    const logged: string[] = [];
    const { cloud, other } = secretCloud(logged);
    const secret = await cloud.createSecret(REGION, { name: "slipway/default/demo-w-0", value: VALUE, tags: { "slipway.dev/cluster": "default/demo" } });
    assert.match(secret.id, /^secret-[0-9a-f]{17}$/);
    assert.deepEqual([secret.name, secret.reads, secret.readOnce, secret.state], ["slipway/default/demo-w-0", 0, false, "available"]);

    const read = await cloud.getSecretValue(REGION, secret.id);
    assert.deepEqual(read, { id: secret.id, name: secret.name, value: VALUE });
    const after = await cloud.getSecret(REGION, secret.id);
    assert.equal(after.reads, 1);
    assert.equal(after.lastReadBy, "account default");

    await assert.rejects(other.getSecretValue(REGION, secret.id), NotFoundError, "another account does not find it");
    await assert.rejects(other.deleteSecret(REGION, secret.id), NotFoundError);
    const shown = JSON.stringify([await cloud.listSecrets(REGION), await cloud.listResources(), after, logged]);
    assert.doesNotMatch(shown, /abcdef\.0123456789abcdef|PRIVATE KEY/, "the value is in no view, listing or log line");
    assert.ok((await cloud.listResources({ tags: { "slipway.dev/cluster": "default/demo" } })).some((r) => r.id === secret.id), "listed with its tags");
  });

  it("makes one secret per idempotency token, refuses a second of the same name, and checks its input naming the field", async () => {
    const { cloud } = secretCloud();
    const input = { name: "boot/a", value: "x", clientToken: "tok-a" };
    const first = await cloud.createSecret(REGION, input);
    assert.equal((await cloud.createSecret(REGION, input)).id, first.id, "the same token returns the same secret");
    await assert.rejects(cloud.createSecret(REGION, { name: "boot/a", value: "y" }), (e: unknown) => e instanceof InvalidParameterError && /secret\.name: a secret named boot\/a already exists/.test(e.message));
    await assert.rejects(cloud.createSecret(REGION, { name: "bad name", value: "y" }), (e: unknown) => e instanceof InvalidParameterError && e.message.startsWith("secret.name"));
    await assert.rejects(cloud.createSecret(REGION, { name: "boot/b", value: "y", ttlSeconds: 0 }), (e: unknown) => e instanceof InvalidParameterError && e.message.startsWith("secret.ttlSeconds"));
    await assert.rejects(cloud.createSecret(REGION, { name: "boot/c", value: "y".repeat(64 * 1024 + 1) }), (e: unknown) => e instanceof InvalidParameterError && e.message.startsWith("secret.value"));
    assert.deepEqual((await cloud.listSecrets(REGION)).map((s) => s.name), ["boot/a"], "refused creates made nothing");
    await cloud.deleteSecret(REGION, first.id);
    await assert.rejects(cloud.getSecretValue(REGION, first.id), NotFoundError);
  });

  it("is gone once its lifetime ends, and a read-once secret is gone after its first read", async () => {
    const { clock, cloud } = secretCloud();
    const short = await cloud.createSecret(REGION, { name: "short", value: "v", ttlSeconds: 60 });
    assert.equal(short.expiresAt, new Date(clock.now() + 60_000).toISOString());
    clock.advance(59_000);
    assert.equal((await cloud.getSecretValue(REGION, short.id)).value, "v");
    clock.advance(1_000);
    await assert.rejects(cloud.getSecretValue(REGION, short.id), NotFoundError);
    assert.deepEqual(await cloud.listSecrets(REGION), [], "an expired secret is not listed");

    const once = await cloud.createSecret(REGION, { name: "once", value: "w", readOnce: true });
    assert.equal((await cloud.getSecretValue(REGION, once.id)).value, "w");
    await assert.rejects(cloud.getSecretValue(REGION, once.id), NotFoundError, "the first read deleted it");
  });

  it("lets a running instance of its account with the granted tags read it with its own identity, and nobody else", async () => {
    const { clock, cloud, other } = secretCloud();
    const tick = () => clock.advance(10);
    const net = await readyNetwork(cloud, { tick });
    const launch = async (api: typeof cloud | typeof other, subnetId: string, tags: Record<string, string>) => {
      const instance = await api.createInstance(REGION, { subnetId, machineType: "s1.small", imageId: net.imageId, tags });
      await waitFor(async () => (tick(), (await api.getInstance(REGION, instance.id)).state === "running"), "instance running");
      return instance.id;
    };
    const mine = await launch(cloud, net.subnet.id, { "slipway.dev/owner-uid": "u-1" });
    const sibling = await launch(cloud, net.subnet.id, { "slipway.dev/owner-uid": "u-2" });
    const otherNet = await readyNetwork(other, { tick, cidr: "10.9.0.0/16" });
    const foreign = await launch(other, otherNet.subnet.id, { "slipway.dev/owner-uid": "u-1" });
    const granted = await cloud.createSecret(REGION, { name: "boot", value: "v", instanceAccess: { tags: { "slipway.dev/owner-uid": "u-1" } } });
    const ungranted = await cloud.createSecret(REGION, { name: "plain", value: "v" });

    assert.equal(cloud.getSecretValueAsInstance(mine, REGION, granted.id).value, "v");
    assert.equal((await cloud.getSecret(REGION, granted.id)).lastReadBy, `instance ${mine}`);
    assert.throws(() => cloud.getSecretValueAsInstance(sibling, REGION, granted.id), UnauthorizedError, "an instance without the tags");
    assert.throws(() => cloud.getSecretValueAsInstance(mine, REGION, ungranted.id), UnauthorizedError, "a secret granting no instance");
    assert.throws(() => cloud.getSecretValueAsInstance(foreign, REGION, granted.id), /not found in sim-east-1: it expired or was deleted/, "an instance of another account");
    await cloud.terminateInstance(REGION, mine);
    assert.throws(() => cloud.getSecretValueAsInstance(mine, REGION, granted.id), UnauthorizedError, "an instance no longer running");
  });

  it("keeps a secret, its reads and its lifetime across a restart of the cloud", async () => {
    const dir = mkdtempSync(join(tmpdir(), "simcloud-secrets-"));
    dirs.push(dir);
    const file = join(dir, "cloud.db");
    const clock = new ManualClock();
    const first = new SimCloud({ state: file, profile: "instant", clock });
    const kept = await first.createSecret(REGION, { name: "kept", value: "v1", ttlSeconds: 120 });
    await first.getSecretValue(REGION, kept.id);
    await first.close();
    clock.advance(60_000);
    const again = new SimCloud({ state: file, profile: "instant", clock });
    clouds.push(again);
    assert.deepEqual([(await again.getSecret(REGION, kept.id)).reads, (await again.getSecretValue(REGION, kept.id)).value], [1, "v1"]);
    clock.advance(60_000);
    await assert.rejects(again.getSecretValue(REGION, kept.id), NotFoundError, "its lifetime runs on after the restart");
  });

  it("serves create, value and delete over HTTP, the value only at …/value", async () => {
    const server = await startSimCloudServer({ port: 0, profile: "instant", defaultToken: "secret-test-token" });
    try {
      const client = new SimCloudClient({ endpoint: server.url, token: "secret-test-token" });
      const secret = await client.createSecret(REGION, { name: "http", value: VALUE, ttlSeconds: 600 });
      const listed = await fetch(`${server.url}/v1/regions/${REGION}/secrets/${secret.id}`, { headers: { authorization: "Bearer secret-test-token" } });
      assert.doesNotMatch(await listed.text(), /PRIVATE KEY/);
      assert.equal((await client.getSecretValue(REGION, secret.id)).value, VALUE);
      await client.deleteSecret(REGION, secret.id);
      await assert.rejects(client.getSecretValue(REGION, secret.id), NotFoundError);
    } finally {
      await server.close();
    }
  });
});
