// Input no client should send, sent anyway: every one gets a 4xx Status that says what is wrong, and
// nothing is written — never a 500, never an answer after a write that half happened.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createConnection, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import pino from "pino";
import type { FastifyInstance } from "fastify";
import { defaultRegistry } from "../api/kinds.ts";
import { createCertificateAuthority, issueCertificate, serverTlsOptions } from "../bootstrap/pki.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { PostWriteHook } from "./admission.ts";
import { ApiMetrics } from "./metrics.ts";
import { ObjectService } from "./objects.ts";
import { nestingDepth } from "./routes.ts";
import { createApiServer, type ApiServerOptions } from "./server.ts";
import { testApiServer } from "./testing.ts";

const registry = defaultRegistry();
const SECRETS = "/api/v1/namespaces/default/secrets";
const auth = { authorization: "Bearer admin-token" };

describe("hostile input", () => {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(registry, store);
  let app: FastifyInstance;
  const request = (method: "GET" | "POST" | "PATCH" | "PUT", url: string, body?: string, type = "application/json") =>
    app.inject({ method, url, headers: { ...auth, ...(body === undefined ? {} : { "content-type": type }) }, ...(body === undefined ? {} : { payload: body }) });
  const status = (response: { body: string }) => JSON.parse(response.body) as { kind: string; code: number; message: string; reason: string };

  before(async () => {
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
    await objects.create(registry.byKind("v1", "Secret")!, "default", { metadata: { name: "db" }, stringData: { password: "x" } });
    app = await testApiServer(objects, [["admin-token", { user: "admin", groups: ["system:masters"] }]]);
  });
  after(async () => {
    await app.close();
    await store.close();
  });

  it("counts nesting without recursion", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.ok(nestingDepth(deep) > 100);
    assert.equal(nestingDepth({ a: [{ b: 1 }] }), 3);
  });

  it("refuses a body nested thousands deep with 400, on every write", async () => {
    const deep = `{"metadata":{"name":"deep"},"data":{"x":${"[".repeat(3000)}${"]".repeat(3000)}}}`;
    for (const [method, url] of [["POST", SECRETS], ["PUT", `${SECRETS}/db`], ["PATCH", `${SECRETS}/db`]] as const) {
      const response = await request(method, url, deep, method === "PATCH" ? "application/merge-patch+json" : "application/json");
      assert.equal(response.statusCode, 400, `${method} ${response.body}`);
      assert.match(status(response).message, /nests deeper than 100 levels/);
    }
    assert.equal(await objects.tryGet(registry.byKind("v1", "Secret")!, "default", "deep"), undefined);
  });

  it("takes any int64 limit, and refuses one that is not an integer", async () => {
    for (const limit of ["9223372036854775807", "9223372036854775808"]) {
      const response = await request("GET", `${SECRETS}?limit=${limit}`);
      assert.equal(response.statusCode, 200, response.body);
    }
    for (const limit of ["1e300", "-1", "2.5"]) {
      const response = await request("GET", `${SECRETS}?limit=${limit}`);
      assert.equal(response.statusCode, 400, `${limit}: ${response.body}`);
      assert.match(status(response).message, /limit must be a non-negative integer/);
    }
  });

  it("refuses JSON patches through __proto__ or moving the document into itself, changing nothing", async () => {
    for (const ops of [[{ op: "add", path: "/__proto__/polluted", value: 1 }], [{ op: "move", from: "", path: "/metadata/labels" }], [{ op: "copy", from: "", path: "/data/x" }]]) {
      const response = await request("PATCH", `${SECRETS}/db`, JSON.stringify(ops), "application/json-patch+json");
      assert.equal(response.statusCode, 400, response.body);
      assert.equal(status(response).kind, "Status");
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it("refuses a patch that takes the name away, and the object keeps it", async () => {
    const response = await request("PATCH", `${SECRETS}/db`, JSON.stringify([{ op: "remove", path: "/metadata/name" }]), "application/json-patch+json");
    assert.equal(response.statusCode, 422, response.body);
    assert.match(status(response).message, /metadata\.name: Required value/);
    assert.equal((await objects.get(registry.byKind("v1", "Secret")!, "default", "db")).metadata.name, "db");
    for (const [patch, type] of [[{ metadata: { name: null } }, "application/merge-patch+json"], [{ metadata: { name: null } }, "application/strategic-merge-patch+json"], [{ metadata: { name: "" } }, "application/merge-patch+json"]] as const) {
      const before = await objects.get(registry.byKind("v1", "Secret")!, "default", "db");
      const refused = await request("PATCH", `${SECRETS}/db`, JSON.stringify(patch), type);
      assert.equal(refused.statusCode, 422, `${type} ${refused.body}`);
      assert.match(status(refused).message, /metadata\.name/);
      const after = await objects.get(registry.byKind("v1", "Secret")!, "default", "db");
      assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
    }
  });

  it("answers a malformed percent-encoding with a Status", async () => {
    const response = await app.inject({ method: "GET", url: "/api/v1/namespaces/%zz/secrets", headers: auth });
    assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${response.statusCode} ${response.body}`);
    assert.equal(status(response).kind, "Status");
  });

  it("warns about an unknown field whatever script its name is in, after a write that completed", async () => {
    const response = await request("POST", `${SECRETS}?fieldValidation=Warn`, JSON.stringify({ metadata: { name: "named" }, 名前: "x" }));
    assert.equal(response.statusCode, 201, response.body);
    assert.match(String(response.headers.warning), /unknown field \\"\\u540d\\u524d\\"/);
  });
});

describe("metadata every kind must respect", () => {
  const store = SqliteStore.open(":memory:");
  const objects = new ObjectService(registry, store);
  const secrets = registry.byKind("v1", "Secret")!;

  it("refuses label keys and values and annotation keys Kubernetes would refuse, __proto__ included", async () => {
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
    const refused = async (metadata: Record<string, unknown>, field: RegExp) => {
      await assert.rejects(objects.create(secrets, "default", { metadata: { name: "s", ...metadata } }), (error: Error & { details?: { causes?: { field: string }[] } }) => {
        assert.ok(error.details?.causes?.some((c) => field.test(c.field)), JSON.stringify(error.details));
        return true;
      });
    };
    await refused({ labels: { "-bad-": "x" } }, /^metadata\.labels$/);
    await refused({ labels: { "a/b/c": "x" } }, /^metadata\.labels$/);
    await refused({ labels: { ok: "not ok!" } }, /^metadata\.labels\[ok\]$/);
    await assert.rejects(objects.create(secrets, "default", { metadata: { name: "s", labels: JSON.parse('{"__proto__": "x"}') as Record<string, string> } }), /may not hold a field named "__proto__" \(at metadata\.labels\)/);
    const inList = JSON.parse('{"metadata": {"name": "s", "finalizers": ["a", {"__proto__": {}}]}}') as Record<string, unknown>;
    await assert.rejects(objects.create(secrets, "default", inList), /may not hold a field named "__proto__" \(at metadata\.finalizers\[1\]\)/);
    await assert.rejects(objects.create(secrets, "default", JSON.parse('{"__proto__": {}}') as Record<string, unknown>), /may not hold a field named "__proto__" \(at the top\)/);
    await refused({ annotations: { "bad key": "x" } }, /^metadata\.annotations$/);
    await objects.create(secrets, "default", { metadata: { name: "s", labels: { "app.kubernetes.io/name": "db" }, annotations: { "example.com/note": "any value at all, spaces too" } } });
  });
});

describe("a step after a committed write that fails", () => {
  it("answers the write as done, with a warning, rather than an error after the commit", async () => {
    const store = SqliteStore.open(":memory:");
    const failing: PostWriteHook = {
      name: "FailsOnDelete",
      afterWrite: (event) => {
        if (event.operation === "DELETE") return Promise.reject(new Error("the operation record could not be written"));
      },
    };
    const objects = new ObjectService(registry, store, { postWrite: [failing] });
    const secrets = registry.byKind("v1", "Secret")!;
    try {
      await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
      await objects.create(secrets, "default", { metadata: { name: "gone" } });
      const deleted = await objects.delete(secrets, "default", "gone");
      assert.equal(deleted.object.metadata.name, "gone");
      assert.deepEqual(deleted.warnings, ["the delete is done, but what follows it failed: the operation record could not be written"]);
      assert.equal(await objects.tryGet(secrets, "default", "gone"), undefined);
    } finally {
      await store.close();
    }
  });
});

describe("connections that never speak", () => {
  let serving: Awaited<ReturnType<typeof issueCertificate>>;
  before(async () => {
    const ca = await createCertificateAuthority({ commonName: "test-ca" });
    serving = await issueCertificate(ca, { commonName: "apiserver", ipAddresses: ["127.0.0.1"], usages: ["server"] });
  });

  /** A TLS API server with these limits, its port, and a way to stop it. */
  async function serve(limits: Pick<ApiServerOptions, "tlsHandshakeTimeoutMs" | "headersTimeoutMs" | "maxConnections">) {
    const app = createApiServer({ tls: serverTlsOptions(serving), ...limits, logger: pino({ level: "silent" }), metrics: new ApiMetrics(), route: () => undefined });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const address = app.server.address();
    return { port: typeof address === "object" && address ? address.port : 0, close: () => app.close() };
  }

  /** Resolves with how long the server took to close the socket, or undefined if it had not within `withinMs`. */
  function closedWithin(socket: Socket, withinMs: number): Promise<number | undefined> {
    const start = Date.now();
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), withinMs);
      socket.on("close", () => {
        clearTimeout(timer);
        resolve(Date.now() - start);
      });
      socket.on("error", () => undefined);
      // Read whatever the server says last (a 408), or the close is never seen.
      socket.resume();
    });
  }

  it("drops a client that does not finish its TLS handshake in time", async () => {
    const server = await serve({ tlsHandshakeTimeoutMs: 300 });
    try {
      const socket = createConnection({ host: "127.0.0.1", port: server.port });
      assert.notEqual(await closedWithin(socket, 5_000), undefined, "the half-open connection is closed by the server");
    } finally {
      await server.close();
    }
  });

  it("drops a client that does not send its request headers in time, instead of holding it for a minute", async () => {
    const server = await serve({ headersTimeoutMs: 500 });
    try {
      const socket = tlsConnect({ host: "127.0.0.1", port: server.port, rejectUnauthorized: false });
      await new Promise<void>((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
      socket.write("GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      const after = await closedWithin(socket, 5_000);
      assert.notEqual(after, undefined, "the connection that never finished its headers is closed");
    } finally {
      await server.close();
    }
  });

  it("closes a connection beyond the cap at once, and keeps those within it", async () => {
    const server = await serve({ maxConnections: 2, tlsHandshakeTimeoutMs: 10_000 });
    const sockets: Socket[] = [];
    try {
      const open = async () => {
        const socket = createConnection({ host: "127.0.0.1", port: server.port });
        sockets.push(socket);
        await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
        return socket;
      };
      const held = [await open(), await open()];
      const closings = held.map((socket) => closedWithin(socket, 1_500));
      const beyond = await open();
      assert.notEqual(await closedWithin(beyond, 5_000), undefined, "the third connection is closed by the server");
      assert.deepEqual(await Promise.all(closings), [undefined, undefined], "the two within the cap stay open");
    } finally {
      for (const socket of sockets) socket.destroy();
      await server.close();
    }
  });
});
