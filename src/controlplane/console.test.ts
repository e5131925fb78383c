import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify from "fastify";
import { consoleSite } from "./console.ts";
import { LoginCodes, SessionTokens } from "./login.ts";

const admin = { user: "admin", groups: ["system:masters"] };

async function site(buildDir: string) {
  const codes = new LoginCodes();
  const app = Fastify();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => done(null, body));
  const serve = consoleSite({
    codes,
    sessions: new SessionTokens("secret"),
    authenticate: (request) => (request.headers.authorization === "Bearer secret" ? admin : undefined),
    url: () => "https://127.0.0.1:6443/",
    buildDir,
  });
  app.setErrorHandler((error: Error & { code?: number; toStatus?: () => unknown }, _request, reply) =>
    reply.code(typeof error.code === "number" ? error.code : 500).send(error.toStatus?.() ?? { message: error.message }),
  );
  app.all("/*", async (request, reply) => (await serve(request, reply, request.url.split("?")[0]!)) ?? reply.code(404).send("api"));
  return { app, codes };
}

describe("the console's site", () => {
  it("serves the build's files with a strict policy, and leaves every other path to the API", async () => {
    const dir = mkdtempSync(join(tmpdir(), "console-build-"));
    mkdirSync(join(dir, "assets"));
    writeFileSync(join(dir, "index.html"), "<!doctype html><title>x</title>");
    writeFileSync(join(dir, "assets", "index-abc.js"), "console.log(1)");
    const { app } = await site(dir);
    const index = await app.inject({ url: "/" });
    assert.equal(index.statusCode, 200);
    assert.match(index.headers["content-security-policy"] as string, /default-src 'self'/);
    assert.equal(index.headers["cache-control"], "no-cache");
    const script = await app.inject({ url: "/assets/index-abc.js" });
    assert.equal(script.headers["content-type"], "text/javascript; charset=utf-8");
    assert.match(script.headers["cache-control"] as string, /immutable/);
    assert.equal((await app.inject({ url: "/apis/slipway.dev/v1alpha1" })).body, "api");
    assert.equal((await app.inject({ url: "/assets/../../etc/passwd" })).body, "api", "only the build's own files");
    rmSync(dir, { recursive: true });
  });

  it("says how to build it when it is not built", async () => {
    const { app } = await site(join(tmpdir(), "no-such-console-build"));
    const index = await app.inject({ url: "/" });
    assert.equal(index.statusCode, 503);
    assert.match(index.body, /npm run build:console/);
  });

  it("gives a sign-in link to an authenticated user only, and trades its code once for a session", async () => {
    const { app } = await site(join(tmpdir(), "no-such-console-build"));
    assert.equal((await app.inject({ method: "POST", url: "/login/codes", payload: "{}" })).statusCode, 401);
    const issued = await app.inject({ method: "POST", url: "/login/codes", payload: "{}", headers: { authorization: "Bearer secret" } });
    const { link } = issued.json<{ link: string }>();
    assert.match(link, /^https:\/\/127\.0\.0\.1:6443\/#login=[\w-]+$/);
    const code = link.split("#login=")[1];
    const session = await app.inject({ method: "POST", url: "/login/session", payload: JSON.stringify({ code }) });
    assert.equal(session.statusCode, 200);
    assert.equal(session.json<{ user: string }>().user, "admin");
    assert.equal(session.headers["cache-control"], "no-store");
    const again = await app.inject({ method: "POST", url: "/login/session", payload: JSON.stringify({ code }) });
    assert.equal(again.statusCode, 401);
    assert.match(again.json<{ message: string }>().message, /used already, it expired, or it was never issued/);
    const missing = await app.inject({ method: "POST", url: "/login/session", payload: "{}" });
    assert.equal(missing.statusCode, 400);
    assert.equal(missing.json<{ details: { causes: { field: string }[] } }>().details.causes[0]!.field, "code");
  });
});
