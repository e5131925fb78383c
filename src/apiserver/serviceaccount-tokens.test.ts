// ServiceAccount tokens: what `kubectl create token` gets, and which bearer tokens the API then accepts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decodeJwt, SignJWT } from "jose";
import { createPrivateKey } from "node:crypto";
import { defaultRegistry } from "../api/kinds.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { Credentials } from "./authentication.ts";
import { ObjectService } from "./objects.ts";
import { createServiceAccountKey, ServiceAccountTokens } from "./serviceaccount-tokens.ts";
import type { RequestContext } from "./request-context.ts";
import { SYSTEM_CONTEXT } from "./request-context.ts";

const registry = defaultRegistry();
const namespaceKind = registry.byKind("v1", "Namespace")!;
const accountKind = registry.byKind("v1", "ServiceAccount")!;

async function setUp(now = { ms: Date.parse("2026-11-26T10:00:00Z") }) {
  const objects = new ObjectService(registry, SqliteStore.open(":memory:"));
  await objects.create(namespaceKind, undefined, { metadata: { name: "team-a" } });
  await objects.create(accountKind, "team-a", { metadata: { name: "bot" } });
  const key = createServiceAccountKey();
  const tokens = new ServiceAccountTokens({ key, issuer: "https://slipway.local", audiences: ["slipway"], objects, kind: accountKind, now: () => now.ms });
  const request = (body: unknown, name = "bot", context: RequestContext = SYSTEM_CONTEXT) =>
    tokens.action().handle({ namespace: "team-a", name, body, context }) as Promise<{ status: { token: string; expirationTimestamp: string }; spec: { audiences: string[]; expirationSeconds: number } }>;
  const who = (token: string) => tokens.authenticator.authenticate(bearer(token));
  return { objects, tokens, key, now, request, who };
}

function bearer(token: string): Credentials {
  return { authorization: `Bearer ${token}`, clientCertificate: () => undefined };
}

const KUBECTL_BODY = { kind: "TokenRequest", apiVersion: "authentication.k8s.io/v1", metadata: { creationTimestamp: null }, spec: { audiences: null, expirationSeconds: null, boundObjectRef: null } };

describe("ServiceAccount tokens", () => {
  it("answers kubectl's TokenRequest with a token of the account, valid an hour for the API's audience", async () => {
    const { request, who } = await setUp();
    const answer = await request(KUBECTL_BODY);
    assert.equal(answer.status.expirationTimestamp, "2026-11-26T11:00:00Z");
    assert.deepEqual(answer.spec.audiences, ["slipway"]);
    const claims = decodeJwt(answer.status.token);
    assert.equal(claims.sub, "system:serviceaccount:team-a:bot");
    assert.equal(claims.iss, "https://slipway.local");
    const identity = await who(answer.status.token);
    assert.equal(identity?.user, "system:serviceaccount:team-a:bot");
    assert.deepEqual(identity?.groups, ["system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"]);
    assert.ok(identity?.uid);
  });

  it("refuses a token once it expired, and a token signed with another key", async () => {
    const { request, who, now } = await setUp();
    const { status } = await request({ spec: { expirationSeconds: 600 } });
    now.ms += 599_000;
    assert.ok(await who(status.token));
    now.ms += 2_000;
    assert.equal(await who(status.token), undefined);

    const claims = decodeJwt(status.token);
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: "ES256" }).setExpirationTime("1h").sign(createPrivateKey(createServiceAccountKey().privateKeyPem));
    assert.equal(await who(forged), undefined);
    const tampered = status.token.replace(/\.[^.]+\./, `.${Buffer.from(JSON.stringify({ ...claims, exp: 4e9 })).toString("base64url")}.`);
    assert.equal(await who(tampered), undefined);
  });

  it("refuses a token for another audience, and every token of an account deleted (even if made again)", async () => {
    const { request, who, objects } = await setUp();
    const other = await request({ spec: { audiences: ["vault"] } });
    assert.equal(await who(other.status.token), undefined);
    const mine = await request({});
    await objects.delete(accountKind, "team-a", "bot");
    assert.equal(await who(mine.status.token), undefined);
    await objects.create(accountKind, "team-a", { metadata: { name: "bot" } });
    assert.equal(await who(mine.status.token), undefined);
  });

  it("leaves tokens that are not JWTs to other authenticators", async () => {
    const { who } = await setUp();
    assert.equal(await who("static-admin-token"), undefined);
    assert.equal(await who("a.b.c"), undefined);
  });

  it("refuses a request for too short a token or bad audiences, naming the field, and an account that does not exist", async () => {
    const { request } = await setUp();
    await assert.rejects(request({ spec: { expirationSeconds: 60 } }), (e: Error & { code?: number }) => e.code === 422 && /^TokenRequest\.authentication\.k8s\.io "bot" is invalid: spec\.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes$/.test(e.message));
    await assert.rejects(request({ spec: { audiences: [""] } }), (e: Error & { code?: number }) => e.code === 422 && /spec\.audiences/.test(e.message));
    await assert.rejects(request({ spec: { boundObjectRef: { kind: "Pod", name: "p" } } }), (e: Error & { code?: number }) => e.code === 422 && /spec\.boundObjectRef/.test(e.message));
    await assert.rejects(request({}, "nobody"), (e: Error & { code?: number }) => e.code === 404 && /serviceaccounts "nobody" not found/.test(e.message));
  });
});
