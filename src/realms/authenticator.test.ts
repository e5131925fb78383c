import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { importJWK, SignJWT } from "jose";
import { defaultRegistry } from "../api/kinds.ts";
import { apiVersionOf } from "../api/registry.ts";
import { oidcClientKind, realmKind, type OIDCClientObject, type RealmObject } from "../api/slipway/realm.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { Client } from "../runtime/client.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { namespaceKind } from "../api/core.ts";
import { RealmTokenAuthenticator } from "./authenticator.ts";
import { ensureRealmKeys } from "./keys.ts";

const BASE = "https://127.0.0.1:6443";

describe("realm ID tokens on the control plane", () => {
  it("names the realm's user and groups for a token of a registered client, and nothing for any other token", async () => {
    const store = SqliteStore.open(":memory:");
    const objects = new ObjectService(defaultRegistry(), store);
    const client = new Client(objects);
    for (const name of ["default", "kube-system"]) await client.of(namespaceKind).create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    const realm = await client.of<RealmObject>(realmKind).create({ apiVersion: apiVersionOf(realmKind), kind: "Realm", metadata: { name: "corp" } } as RealmObject);
    const keys = await ensureRealmKeys(client, realm);
    const clients = client.of<OIDCClientObject>(oidcClientKind);
    const made = await clients.create({ apiVersion: apiVersionOf(oidcClientKind), kind: "OIDCClient", metadata: { name: "c1", namespace: "default" }, spec: { realm: "corp" } } as OIDCClientObject);
    await clients.updateStatus({ ...made, status: { clientId: "default.c1", issuerUrl: `${BASE}/realms/corp` } });
    const key = await importJWK(keys.signing, "RS256");
    const sign = (claims: Record<string, unknown>, options: { iss?: string; aud?: string; exp?: string } = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: keys.signing.kid })
        .setIssuer(options.iss ?? `${BASE}/realms/corp`)
        .setAudience(options.aud ?? "default.c1")
        .setIssuedAt()
        .setExpirationTime(options.exp ?? "5m")
        .sign(key);
    const authenticator = new RealmTokenAuthenticator(client, () => BASE);
    const as = async (token: string) => authenticator.authenticate({ authorization: `Bearer ${token}`, clientCertificate: () => undefined });

    assert.deepEqual(await as(await sign({ preferred_username: "carol", groups: ["platform-admins"] })), { user: "realm:corp:carol", groups: ["realm:corp:platform-admins"] });
    assert.equal(await as(await sign({ preferred_username: "carol" }, { aud: "default.other" })), undefined, "a client not registered");
    assert.equal(await as(await sign({ preferred_username: "carol" }, { iss: `${BASE}/realms/partners` })), undefined, "a realm that does not exist");
    assert.equal(await as(await sign({ preferred_username: "carol" }, { iss: "https://elsewhere.example/realms/corp" })), undefined, "another issuer");
    assert.equal(await as(await sign({ preferred_username: "carol" }, { exp: "-1m" })), undefined, "expired");
    const [header, , signature] = (await sign({ preferred_username: "dave" })).split(".");
    const forged = `${header}.${Buffer.from(JSON.stringify({ preferred_username: "carol", groups: ["system:masters"], iss: `${BASE}/realms/corp`, aud: "default.c1", exp: Math.floor(Date.now() / 1000) + 60 })).toString("base64url")}.${signature}`;
    assert.equal(await as(forged), undefined, "forged");
    const elsewhere = await clients.create({ apiVersion: apiVersionOf(oidcClientKind), kind: "OIDCClient", metadata: { name: "c2", namespace: "default" }, spec: { realm: "partners" } } as OIDCClientObject);
    await clients.updateStatus({ ...elsewhere, status: { clientId: "default.c2", issuerUrl: `${BASE}/realms/partners` } });
    assert.equal(await as(await sign({ preferred_username: "carol" }, { aud: "default.c2" })), undefined, "a client of another realm");
    await clients.delete("default", "c1");
    assert.equal(await as(await sign({ preferred_username: "carol" })), undefined, "a client deleted since");
    await store.close();
  });
});
