import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LoginCodes, SessionTokens, loginLink } from "./login.ts";

const admin = { user: "admin", groups: ["system:masters"] };

describe("one-time sign-in codes", () => {
  it("is redeemed once, for the identity it was issued to", () => {
    const codes = new LoginCodes();
    const { code } = codes.issue(admin);
    assert.deepEqual(codes.redeem(code), admin);
    assert.equal(codes.redeem(code), undefined, "a used code is refused");
    assert.equal(codes.redeem("never-issued"), undefined);
  });

  it("expires", () => {
    let now = 1_000;
    const codes = new LoginCodes(() => now, 60_000);
    const { code, expiresAt } = codes.issue(admin);
    assert.equal(expiresAt, 61_000);
    now = 61_000;
    assert.equal(codes.redeem(code), undefined);
  });

  it("rides in the link's fragment, which browsers never send", () => {
    const link = loginLink("https://127.0.0.1:6443", "abc");
    assert.equal(link, "https://127.0.0.1:6443/#login=abc");
    assert.equal(new URL(link).pathname + new URL(link).search, "/", "nothing of the code is in the path or query");
  });
});

describe("session tokens", () => {
  it("carry the identity until they expire", () => {
    let now = 0;
    const sessions = new SessionTokens("admin-token", () => now, 1000);
    const { token } = sessions.issue(admin);
    assert.deepEqual(sessions.verify(token), admin);
    now = 1000;
    assert.equal(sessions.verify(token), undefined);
  });

  it("are refused when changed, or signed under another admin token", () => {
    const { token } = new SessionTokens("admin-token").issue(admin);
    assert.equal(new SessionTokens("another-token").verify(token), undefined);
    const [prefix, payload, signature] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ u: "mallory", g: ["system:masters"], e: Date.now() + 1e9 })).toString("base64url");
    assert.equal(new SessionTokens("admin-token").verify(`${prefix}.${forged}.${signature}`), undefined);
    assert.notEqual(payload, forged);
    assert.equal(new SessionTokens("admin-token").verify("admin-token"), undefined);
  });
});
