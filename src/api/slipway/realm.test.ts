import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { oidcClientKind, platformKind, realmKind, type OIDCClientObject, type PlatformObject, type RealmObject } from "./realm.ts";

const fields = (errors: { field: string }[]) => errors.map((e) => e.field);

describe("identity kinds' validation", () => {
  it("refuses a realm whose name or admin group is not usable", () => {
    const realm = (name: string, adminGroup?: string) => ({ metadata: { name }, spec: adminGroup === undefined ? {} : { adminGroup } }) as RealmObject;
    assert.deepEqual(fields(realmKind.validate!(realm("corp", "platform-admins"))), []);
    assert.deepEqual(fields(realmKind.validate!(realm("corp", "Admins!"))), ["spec.adminGroup"]);
    assert.deepEqual(fields(realmKind.validate!(realm("corp.example"))), ["metadata.name"]);
  });

  it("refuses an OIDC client with a redirect URI that is not an http(s) URL, and a move to another realm", () => {
    const client = (realm: string, redirectUris?: string[]) => ({ metadata: { name: "c1" }, spec: { realm, ...(redirectUris ? { redirectUris } : {}) } }) as OIDCClientObject;
    assert.deepEqual(fields(oidcClientKind.validate!(client("corp", ["http://localhost:8000", "https://app.example/cb"]))), []);
    assert.deepEqual(fields(oidcClientKind.validate!(client("corp", ["https://ok.example/", "ftp://x", "https://a.example/#frag"]))), ["spec.redirectUris[1]", "spec.redirectUris[2]"]);
    assert.deepEqual(fields(oidcClientKind.validate!(client("partners"), client("corp"))), ["spec.realm"]);
  });

  it("keeps a platform's realm and cluster", () => {
    const platform = (realm: string, clusterName: string) => ({ metadata: { name: "p" }, spec: { realm, clusterName } }) as PlatformObject;
    assert.deepEqual(fields(platformKind.validate!(platform("corp", "c2"), platform("corp", "c1"))), ["spec.clusterName"]);
  });
});
