// Conformance of the bootstrapSecrets capability: a secret made once per token, tagged, found by its tags,
// whose value no operation answers; gone once its lifetime ends; deleted tolerantly. Where the harness can
// read a secret as an instance would at boot, only an instance carrying the granted tags reads it.
import { it } from "node:test";
import assert from "node:assert/strict";
import type { BootstrapSecretInfo, BootstrapSecretSpec } from "../provider.ts";
import { rejectsWith, type Case, type CaseStarter } from "./case.ts";
import { instanceSpec } from "./machines.ts";

const VALUE = "conformance-bootstrap-token-7c1e.0123456789abcdef";

function spec(c: Case, name: string, extra: Partial<BootstrapSecretSpec> = {}): BootstrapSecretSpec {
  return { name: `${c.cluster}/${name}`, value: VALUE, ttlSeconds: 600, readableBy: { "slipway.dev/owner-uid": `${c.cluster}-${name}` }, ...extra };
}

/** Deletes the secret when the case ends. */
function made(c: Case, secret: BootstrapSecretInfo): BootstrapSecretInfo {
  c.onTeardown(() => c.capability("bootstrapSecrets").delete(secret.id));
  return secret;
}

export function bootstrapSecretsConformance(start: CaseStarter): void {
  it("makes a secret once per token, tagged, never answers its value, and deletes it tolerantly", async (t) => {
    const c = await start(t, "secret");
    const secrets = c.capability("bootstrapSecrets");
    const create = () => secrets.create(spec(c, "m-0"), { token: c.token("secret"), tags: c.tagsFor("secret") });
    const secret = made(c, await create());
    assert.equal((await create()).id, secret.id, "the same token returns the same secret");
    assert.equal(secret.name, `${c.cluster}/m-0`);
    assert.equal(secret.reference.id, secret.id);
    assert.equal(secret.reference.region, c.provider.region);
    assert.ok(Date.parse(secret.expiresAt) > Date.now(), "it expires in the future");
    const found = await secrets.findTagged(c.tags);
    assert.deepEqual(found.map((s) => s.id), [secret.id], "findTagged finds exactly the one made");
    assert.doesNotMatch(JSON.stringify([secret, found, await secrets.get(secret.id)]), new RegExp(VALUE), "no answer carries the value");
    await rejectsWith(secrets.create(spec(c, "m-0"), { token: c.token("again"), tags: c.tags }), "invalid", "a second secret of the same name");

    await secrets.delete(secret.id);
    await secrets.delete(secret.id);
    assert.equal(await secrets.get(secret.id), undefined, "a deleted secret is gone");
    assert.deepEqual(await secrets.findTagged(c.tags), []);
  });

  it("is gone once its lifetime ended", async (t) => {
    const c = await start(t, "secret-ttl");
    const secrets = c.capability("bootstrapSecrets");
    const secret = made(c, await secrets.create(spec(c, "short", { ttlSeconds: 1 }), { token: c.token("short"), tags: c.tags }));
    await c.eventually("the secret to expire", async () => ((await secrets.get(secret.id)) === undefined ? true : undefined));
    assert.deepEqual(await secrets.findTagged(c.tags), []);
  });

  it("lets only an instance carrying the granted tags read it at boot", async (t) => {
    const c = await start(t, "secret-read");
    const read = c.h.readBootstrapSecretAsInstance;
    if (!read || !c.has("machines")) return t.skip("the harness cannot read a secret as an instance");
    const secrets = c.capability("bootstrapSecrets");
    const granted = { "slipway.dev/owner-uid": `${c.cluster}-reader` };
    const secret = made(c, await secrets.create(spec(c, "reader", { readableBy: granted }), { token: c.token("reader"), tags: c.tags }));
    const launch = async (name: string, tags: Record<string, string>) => {
      const instance = await c.machines.create("instance", await instanceSpec(c), { token: c.token(name), tags: { ...c.tagsFor(name), ...tags } });
      c.track("instance", instance.id);
      return (await c.waitFor("instance", instance.id, "ready")).id;
    };
    const reader = await launch("reader", granted);
    const stranger = await launch("stranger", {});
    await assert.rejects(read(stranger, secret.reference), "an instance without the granted tags may not read it");
    assert.equal(await read(reader, secret.reference), VALUE);
    assert.equal((await secrets.get(secret.id))?.reads, 1, "the read is counted");
  });
}
