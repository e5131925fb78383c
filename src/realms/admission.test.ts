import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { verify } from "@node-rs/argon2";
import { defaultRegistry } from "../api/kinds.ts";
import { apiVersionOf } from "../api/registry.ts";
import { realmKind, realmUserKind, type RealmObject, type RealmUserObject } from "../api/slipway/realm.ts";
import { InvalidError } from "../apiserver/errors.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { Client } from "../runtime/client.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { realmUserAdmission } from "./admission.ts";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

async function setup() {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(defaultRegistry(), store, { admission: [realmUserAdmission] });
  const client = new Client(objects);
  await client.of<RealmObject>(realmKind).create({ apiVersion: apiVersionOf(realmKind), kind: "Realm", metadata: { name: "corp" } } as RealmObject);
  return { store, users: client.of<RealmUserObject>(realmUserKind) };
}

function user(spec: Partial<RealmUserObject["spec"]>, annotations?: Record<string, string>): RealmUserObject {
  return { apiVersion: apiVersionOf(realmUserKind), kind: "RealmUser", metadata: { name: "carol", ...(annotations ? { annotations } : {}) }, spec: { realm: "corp", ...spec } } as RealmUserObject;
}

describe("RealmUser admission", () => {
  it("stores an argon2id hash of the password, never the password, also not in kubectl's last-applied annotation", async () => {
    const { store, users } = await setup();
    const applied = JSON.stringify({ apiVersion: "slipway.dev/v1alpha1", kind: "RealmUser", metadata: { name: "carol" }, spec: { realm: "corp", password: "correct-horse" } });
    const created = await users.create(user({ password: "correct-horse", groups: ["admins"] }, { [LAST_APPLIED]: applied }));
    assert.equal(created.spec.password, undefined);
    assert.match(created.spec.passwordHash!, /^\$argon2id\$/);
    assert.ok(await verify(created.spec.passwordHash!, "correct-horse"));
    assert.ok(!JSON.stringify(created).includes("correct-horse"));
    assert.deepEqual(JSON.parse(created.metadata.annotations![LAST_APPLIED]!).spec, { realm: "corp" });
    // An update without a password keeps the hash; one trying to set the hash itself does not change it.
    const regrouped = await users.update({ ...created, spec: { realm: "corp", groups: ["admins", "ops"], passwordHash: "$argon2id$forged" } });
    assert.equal(regrouped.spec.passwordHash, created.spec.passwordHash);
    assert.deepEqual(regrouped.spec.groups, ["admins", "ops"]);
    const same = await users.update({ ...regrouped, spec: { ...regrouped.spec, password: "correct-horse" } });
    assert.equal(same.spec.passwordHash, created.spec.passwordHash, "the same password again keeps the hash");
    const changed = await users.update({ ...same, spec: { ...same.spec, password: "battery-staple" } });
    assert.ok(await verify(changed.spec.passwordHash!, "battery-staple"));
    await store.close();
  });

  it("refuses a short password without echoing it, and a user of a realm that does not exist, naming the field", async () => {
    const { store, users } = await setup();
    await assert.rejects(users.create(user({ password: "short" })), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.deepEqual(e.fieldErrors.map((f) => f.field), ["spec.password"]);
      assert.ok(!e.message.includes("short"), e.message);
      return true;
    });
    await assert.rejects(users.create(user({ realm: "elsewhere", password: "long-enough" })), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.deepEqual(e.fieldErrors.map((f) => [f.field, f.reason]), [["spec.realm", "FieldValueNotFound"]]);
      return true;
    });
    await assert.rejects(users.create(user({ groups: ["Admins!"], email: "not-an-address" })), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.deepEqual(e.fieldErrors.map((f) => f.field).sort(), ["spec.email", "spec.groups[0]"]);
      return true;
    });
    assert.equal(await users.tryGet(undefined, "carol"), undefined);
    await store.close();
  });
});
