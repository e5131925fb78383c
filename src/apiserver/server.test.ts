// The request path over HTTP: authentication, then the object service's authorizer, admission and
// post-write hooks, with the identity, field manager and dry run the request carries; and the health and
// version endpoints, which answer without authentication.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import type { FastifyInstance } from "fastify";
import { Agent, request } from "node:http";
import { connect, type Socket } from "node:net";
import { defaultRegistry } from "../api/kinds.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { AdmissionPlugin, PostWriteHook } from "./admission.ts";
import type { RequestAttributes } from "./authorization/types.ts";
import type { HealthCheck } from "./health.ts";
import { ApiMetrics } from "./metrics.ts";
import { ObjectService } from "./objects.ts";
import type { CreateOnlyResource, SubresourceAction } from "./routes.ts";
import { createApiServer } from "./server.ts";
import { testApiServer } from "./testing.ts";

const registry = defaultRegistry();
const CLUSTERS = "/apis/slipway.dev/v1alpha1/namespaces/default/clusters";

function cluster(name: string): unknown {
  return { apiVersion: "slipway.dev/v1alpha1", kind: "Cluster", metadata: { name }, spec: { controlPlane: { connection: "east", machineType: "s1.medium" } } };
}

describe("the HTTP request path", () => {
  const store = SqliteStore.open(":memory:");
  const asked: RequestAttributes[] = [];
  const admitted: { user: string; fieldManager?: string; dryRun?: boolean }[] = [];
  const recordAdmission: AdmissionPlugin = {
    name: "Record",
    validate: (r) => void admitted.push({ user: r.request.identity.user, fieldManager: r.request.fieldManager, dryRun: r.request.dryRun }),
  };
  const location: PostWriteHook = { name: "Location", afterWrite: (e) => ({ responseHeaders: { "Operation-Location": `/operations/${e.object.metadata.name}` } }) };
  const objects = new ObjectService(registry, store, {
    admission: [recordAdmission],
    postWrite: [location],
    authorizer: {
      authorize(request) {
        asked.push(request);
        return request.identity.user === "bob" && request.verb !== "get" ? { allowed: false, reason: "bob only reads" } : { allowed: true };
      },
    },
  });
  let app: FastifyInstance;

  before(async () => {
    await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "default" } });
    const plan: SubresourceAction = { path: "slipway.dev/clusters/plan", handle: async ({ name, context }) => ({ planned: name, by: context.identity.user }) };
    // A namespaced kind that is only created and answered, as LocalSubjectAccessReview.
    const echo: CreateOnlyResource = {
      group: "example.dev",
      version: "v1",
      kind: "Echo",
      plural: "echoes",
      singular: "echo",
      namespaced: true,
      handle: ({ namespace, body, context }) => ({ kind: "Echo", namespace, said: (body as { say?: string }).say, by: context.identity.user }),
    };
    app = await testApiServer(
      objects,
      [
        ["alice-token", { user: "alice", groups: ["team-a"] }],
        ["bob-token", { user: "bob", groups: [] }],
      ],
      { actions: [plan], createOnly: [echo] },
    );
    asked.length = 0;
    admitted.length = 0;
  });

  after(async () => {
    await app.close();
    await store.close();
  });

  const call = (method: "GET" | "POST", url: string, token?: string, body?: unknown, userAgent = "kubectl/v1.31.2 (linux/amd64) kubernetes/5864a46") =>
    app.inject({
      method,
      url,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/json", "user-agent": userAgent },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });

  it("refuses a request without known credentials with 401 before anything else sees it", async () => {
    for (const token of [undefined, "mallory-token"]) {
      const reply = await call("GET", CLUSTERS, token);
      assert.equal(reply.statusCode, 401);
      assert.equal(reply.json<{ reason: string }>().reason, "Unauthorized");
    }
    assert.equal(asked.length, 0);
  });

  it("carries the authenticated identity and the field manager to the authorizer and admission, and hook headers to the response", async () => {
    const created = await call("POST", CLUSTERS, "alice-token", cluster("a"));
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.headers["operation-location"], "/operations/a");
    const named = await call("POST", `${CLUSTERS}?fieldManager=ci-pipeline`, "alice-token", cluster("b"));
    assert.equal(named.statusCode, 201, named.body);
    assert.deepEqual(admitted, [
      { user: "alice", fieldManager: "kubectl", dryRun: undefined },
      { user: "alice", fieldManager: "ci-pipeline", dryRun: undefined },
    ]);
    const create = asked.find((r) => r.verb === "create");
    assert.deepEqual(create && "resource" in create ? [create.identity, create.resource] : undefined, [
      { user: "alice", groups: ["team-a", "system:authenticated"] },
      { group: "slipway.dev", version: "v1alpha1", resource: "clusters", subresource: undefined, namespace: "default", name: undefined },
    ]);
  });

  it("answers a list longer than one piece of the response as one JSON document, and a refused list with a Status", async () => {
    const configMaps = registry.byKind("v1", "ConfigMap")!;
    const names = Array.from({ length: 1_100 }, (_, i) => `piece-${String(i).padStart(4, "0")}`);
    for (const name of names) await objects.create(configMaps, "default", { metadata: { name }, data: { text: "ü".repeat(50) } });
    const reply = await call("GET", "/api/v1/namespaces/default/configmaps", "alice-token");
    assert.equal(reply.statusCode, 200);
    assert.match(String(reply.headers["content-type"]), /^application\/json/);
    const list = reply.json<{ kind: string; metadata: { resourceVersion: string }; items: { metadata: { name: string; resourceVersion: string }; data: { text: string } }[] }>();
    assert.equal(list.kind, "ConfigMapList");
    assert.deepEqual(list.items.map((item) => item.metadata.name), names);
    assert.ok(list.items.every((item) => Number(item.metadata.resourceVersion) <= Number(list.metadata.resourceVersion) && item.data.text === "ü".repeat(50)));
    const refused = await call("GET", "/api/v1/namespaces/default/configmaps", "bob-token");
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json<{ kind: string; reason: string }>().reason, "Forbidden");
  });

  it("admits a dry run but stores nothing and sends no hook header", async () => {
    admitted.length = 0;
    const reply = await call("POST", `${CLUSTERS}?dryRun=All`, "alice-token", cluster("dry"));
    assert.equal(reply.statusCode, 201, reply.body);
    assert.equal(reply.headers["operation-location"], undefined);
    assert.deepEqual(admitted, [{ user: "alice", fieldManager: "kubectl", dryRun: true }]);
    assert.equal((await call("GET", `${CLUSTERS}/dry`, "alice-token")).statusCode, 404);
  });

  it("answers what the authorizer refuses with a Kubernetes Forbidden Status, for resources and other paths alike", async () => {
    const refused = await call("POST", CLUSTERS, "bob-token", cluster("c"));
    assert.equal(refused.statusCode, 403);
    const status = refused.json<{ reason: string; message: string }>();
    assert.equal(status.reason, "Forbidden");
    assert.equal(status.message, 'clusters.slipway.dev is forbidden: User "bob" cannot create resource "clusters" in API group "slipway.dev" in the namespace "default": bob only reads');
    assert.equal((await call("GET", `${CLUSTERS}/c`, "alice-token")).statusCode, 404, "nothing was created");
    assert.equal((await call("GET", `${CLUSTERS}/a`, "bob-token")).statusCode, 200);
    const discovery = await call("POST", "/apis", "bob-token");
    assert.equal(discovery.statusCode, 403);
    assert.equal(discovery.json<{ message: string }>().message, 'forbidden: User "bob" cannot post path "/apis": bob only reads');
  });

  it("authorizes a subresource action as a create of the subresource, and hands it the caller's context", async () => {
    const planned = await call("POST", `${CLUSTERS}/a/plan`, "alice-token", { kind: "ClusterPlan" });
    assert.equal(planned.statusCode, 200, planned.body);
    assert.deepEqual(planned.json(), { planned: "a", by: "alice" });
    const refused = await call("POST", `${CLUSTERS}/a/plan`, "bob-token", { kind: "ClusterPlan" });
    assert.equal(refused.statusCode, 403);
    assert.equal(
      refused.json<{ message: string }>().message,
      'clusters.slipway.dev "a" is forbidden: User "bob" cannot create resource "clusters/plan" in API group "slipway.dev" in the namespace "default": bob only reads',
    );
  });

  it("answers a create-only kind in a namespace, authorized as a create there, lists it in discovery and stores nothing", async () => {
    asked.length = 0;
    const answered = await call("POST", "/apis/example.dev/v1/namespaces/default/echoes", "alice-token", { say: "hi" });
    assert.equal(answered.statusCode, 201, answered.body);
    assert.deepEqual(answered.json(), { kind: "Echo", namespace: "default", said: "hi", by: "alice" });
    const create = asked.find((r) => r.verb === "create");
    assert.deepEqual(create && "resource" in create ? create.resource : undefined, { group: "example.dev", version: "v1", resource: "echoes", namespace: "default" });
    assert.equal((await call("POST", "/apis/example.dev/v1/namespaces/default/echoes", "bob-token", { say: "hi" })).statusCode, 403);
    assert.equal((await call("POST", "/apis/example.dev/v1/echoes", "alice-token", { say: "hi" })).statusCode, 404, "namespaced: no collection outside a namespace");
    assert.equal((await call("GET", "/apis/example.dev/v1/namespaces/default/echoes", "alice-token")).statusCode, 405);
    const discovery = (await call("GET", "/apis/example.dev/v1", "alice-token")).json<{ resources: { name: string; namespaced: boolean; verbs: string[] }[] }>();
    assert.deepEqual(discovery.resources.map((r) => [r.name, r.namespaced, r.verbs]), [["echoes", true, ["create"]]]);
    assert.ok((await call("GET", "/apis", "alice-token")).json<{ groups: { name: string }[] }>().groups.some((g) => g.name === "example.dev"));
  });

  it("refuses a field manager Kubernetes would refuse", async () => {
    const reply = await call("POST", `${CLUSTERS}?fieldManager=${"x".repeat(129)}`, "alice-token", cluster("long"));
    assert.equal(reply.statusCode, 400);
    assert.match(reply.json<{ message: string }>().message, /fieldManager: Too long/);
  });

  it("serves server-side apply: YAML bodies, 201 on create, a field manager named explicitly, force only for apply", async () => {
    const apply = (query: string, body: string, contentType = "application/apply-patch+yaml") =>
      app.inject({ method: "PATCH", url: `${CLUSTERS}/applied${query}`, headers: { authorization: "Bearer alice-token", "content-type": contentType, "user-agent": "kubectl/v1.31.2" }, payload: body });
    const manifest = (replicas: number) =>
      `apiVersion: slipway.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: applied\nspec:\n  controlPlane:\n    connection: east\n    machineType: s1.medium\n    replicas: ${replicas}\n`;
    const unnamed = await apply("", manifest(1));
    assert.equal(unnamed.statusCode, 400, "the User-Agent does not stand in for an applier");
    assert.match(unnamed.json<{ message: string }>().message, /fieldManager: Required value/);
    const created = await apply("?fieldManager=ci", manifest(1));
    assert.equal(created.statusCode, 201);
    assert.equal(created.json<{ metadata: { managedFields: { manager: string; operation: string }[] } }>().metadata.managedFields[0]!.operation, "Apply");
    assert.equal((await apply("?fieldManager=ci&force=true", manifest(3))).statusCode, 200);
    const notApply = await apply("?force=true", JSON.stringify({ spec: { paused: true } }), "application/merge-patch+json");
    assert.equal(notApply.statusCode, 400);
    assert.match(notApply.json<{ message: string }>().message, /force: Forbidden: may not be specified for non-apply patch/);
  });
});

function server(readiness: HealthCheck[], version?: object, keepAliveTimeoutMs?: number) {
  return createApiServer({
    logger: pino({ level: "silent" }),
    metrics: new ApiMetrics(),
    route: () => undefined,
    readiness,
    ...(version ? { version } : {}),
    ...(keepAliveTimeoutMs ? { keepAliveTimeoutMs } : {}),
  });
}

/** A GET of /healthz on a kept-alive connection of `agent`: its Keep-Alive header and the socket it went on. */
function getHealthz(port: number, agent: Agent): Promise<{ keepAlive: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/healthz", agent }, (res) => {
      res.resume();
      res.on("end", () => resolve({ keepAlive: String(res.headers["keep-alive"]), socket: req.socket! }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the API server's health and version endpoints", () => {
  it("answers /readyz from its checks: 503 naming the one that fails, every check listed with ?verbose", async () => {
    let storeDown = true;
    const app = server([
      {
        name: "store",
        check: () => {
          if (storeDown) throw new Error("database is locked");
        },
      },
      { name: "controllers", check: () => undefined },
    ]);
    const failing = await app.inject({ method: "GET", url: "/readyz" });
    assert.equal(failing.statusCode, 503);
    assert.equal(failing.body, "[+]ping ok\n[-]store failed: reason withheld\n[+]controllers ok\nreadyz check failed\n");
    assert.equal((await app.inject({ method: "GET", url: "/readyz/controllers" })).statusCode, 200);
    assert.equal((await app.inject({ method: "GET", url: "/readyz?exclude=store" })).body, "ok");
    assert.equal((await app.inject({ method: "GET", url: "/readyz/nothing" })).statusCode, 404);
    assert.equal((await app.inject({ method: "GET", url: "/healthz" })).body, "ok", "alive all the same");

    storeDown = false;
    const ready = await app.inject({ method: "GET", url: "/readyz" });
    assert.deepEqual([ready.statusCode, ready.body], [200, "ok"]);
    const verbose = await app.inject({ method: "GET", url: "/readyz?verbose" });
    assert.equal(verbose.body, "[+]ping ok\n[+]store ok\n[+]controllers ok\nreadyz check passed\n");
    await app.close();
  });

  it("keeps an idle connection for 90 s as kube-apiserver does, says so, and closes it after the time it is given", async () => {
    const held = server([]);
    await held.listen({ host: "127.0.0.1", port: 0 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const first = await getHealthz((held.server.address() as { port: number }).port, agent);
    assert.equal(first.keepAlive, "timeout=90", "clients are told how long an idle connection is kept");
    const second = await getHealthz((held.server.address() as { port: number }).port, agent);
    assert.equal(second.socket, first.socket, "the connection was kept for the next request");
    agent.destroy();
    await held.close();

    // A raw connection, so that no client agent decides anything: it is the server that closes it.
    const brief = server([], undefined, 200);
    await brief.listen({ host: "127.0.0.1", port: 0 });
    const socket = connect((brief.server.address() as { port: number }).port, "127.0.0.1");
    let answer = "";
    socket.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")));
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await closed;
    assert.match(answer, /^HTTP\/1\.1 200 [^]*\r\n\r\nok$/, "one answer, then the server closed the idle connection");
    await brief.close();
  });

  it("answers /version with what it is given, without authentication", async () => {
    const app = server([], { major: "1", minor: "31", gitVersion: "v1.31.0-slipway.1.2.3", gitCommit: "abc" });
    const reply = await app.inject({ method: "GET", url: "/version" });
    assert.equal(reply.statusCode, 200);
    assert.equal((JSON.parse(reply.body) as { gitVersion: string }).gitVersion, "v1.31.0-slipway.1.2.3");
    await app.close();
  });
});
