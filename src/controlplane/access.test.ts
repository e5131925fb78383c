// Who may do what on the control plane, over HTTP as kubectl asks: RBAC over the control plane's own
// roles and bindings, the default roles, the controllers' role, and the self reviews.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import pino from "pino";
import type { FastifyInstance } from "fastify";
import { defaultRegistry } from "../api/kinds.ts";
import type { KindDefinition } from "../api/registry.ts";
import { ApiMetrics } from "../apiserver/metrics.ts";
import { ObjectService } from "../apiserver/objects.ts";
import { serviceAccountIdentity, type Identity } from "../apiserver/request-context.ts";
import { createApiContext } from "../apiserver/routes.ts";
import { createApiServer } from "../apiserver/server.ts";
import { createServiceAccountKey } from "../apiserver/serviceaccount-tokens.ts";
import { controllerContext } from "../runtime/client.ts";
import { SqliteStore } from "../store/sqlite.ts";
import { controlPlaneAccess, controlPlaneRbac, ensureDefaultRbac } from "./access.ts";
import { SessionTokens } from "./login.ts";

const registry = defaultRegistry();
const kind = (apiVersion: string, name: string): KindDefinition => registry.byKind(apiVersion, name)!;
const NAMESPACE = kind("v1", "Namespace");
const SECRET = kind("v1", "Secret");
const ACCOUNT = kind("v1", "ServiceAccount");
const CLUSTER = kind("slipway.dev/v1alpha1", "Cluster");
const CLUSTER_ROLE = kind("rbac.authorization.k8s.io/v1", "ClusterRole");
const ROLE_BINDING = kind("rbac.authorization.k8s.io/v1", "RoleBinding");
const CLUSTER_ROLE_BINDING = kind("rbac.authorization.k8s.io/v1", "ClusterRoleBinding");

const cluster = (name: string) => ({ metadata: { name }, spec: { controlPlane: { connection: "east", machineType: "s1.medium" } } });
const binding = (namespace: string, name: string, role: string, subject: object) => ({
  metadata: { name, namespace },
  roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
  subjects: [subject],
});

/** A control plane's object service with its RBAC, over a store it may share with another. */
async function controlPlaneObjects(store = SqliteStore.open(":memory:")) {
  const rbac = controlPlaneRbac();
  const objects = new ObjectService(registry, store, { authorizer: rbac.authorizer, admission: [rbac.admission], postWrite: [rbac.hook] });
  rbac.attach(objects);
  return { objects, rbac, store };
}

describe("access to the control plane's API", () => {
  let app: FastifyInstance;
  const adminToken = "admin-token";
  const setup = controlPlaneObjects();
  let botToken = "";
  let access: ReturnType<typeof controlPlaneAccess>;

  before(async () => {
    const { objects, rbac } = await setup;
    for (const name of ["team-a", "team-b"]) await objects.create(NAMESPACE, undefined, { metadata: { name } });
    await ensureDefaultRbac(objects);
    for (const ns of ["team-a", "team-b"]) {
      await objects.create(CLUSTER, ns, cluster(`${ns}-one`));
      await objects.create(SECRET, ns, { metadata: { name: `${ns}-one-kubeconfig` }, stringData: { value: "kubeconfig" } });
    }
    await objects.create(ACCOUNT, "team-a", { metadata: { name: "bot" } });
    await objects.create(ROLE_BINDING, "team-a", binding("team-a", "bot-view", "view", { kind: "ServiceAccount", name: "bot" }));
    const credentials = { ca: { certPem: "", keyPem: "" }, adminToken, serviceAccountKey: createServiceAccountKey() };
    access = controlPlaneAccess(objects, rbac, { registry, credentials, sessions: new SessionTokens(adminToken) });
    const ctx = createApiContext({ registry, objects, metrics: new ApiMetrics(), actions: [access.tokens.action()], createOnly: access.createOnly });
    app = createApiServer({ logger: pino({ level: "silent" }), metrics: new ApiMetrics(), route: (_request, path) => ({ ctx, path, authenticator: access.authenticator }) });
    await app.ready();
    const issued = await call("POST", "/api/v1/namespaces/team-a/serviceaccounts/bot/token", adminToken, { kind: "TokenRequest", spec: {} });
    assert.equal(issued.statusCode, 201, issued.body);
    botToken = issued.json<{ status: { token: string } }>().status.token;
  });

  after(async () => {
    await app.close();
    const { rbac, store } = await setup;
    rbac.close();
    await store.close();
  });

  const call = (method: "GET" | "POST", url: string, token: string, body?: unknown) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, ...(body ? { payload: JSON.stringify(body) } : {}) });
  const canI = async (token: string, resourceAttributes: Record<string, string>) => {
    const reply = await call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", token, { kind: "SelfSubjectAccessReview", apiVersion: "authorization.k8s.io/v1", spec: { resourceAttributes } });
    assert.equal(reply.statusCode, 201, reply.body);
    return reply.json<{ status: { allowed: boolean; reason?: string } }>().status;
  };

  it("lets a viewer of team-a read team-a's clusters and nothing of team-b, with Kubernetes' Forbidden", async () => {
    const mine = await call("GET", "/apis/slipway.dev/v1alpha1/namespaces/team-a/clusters", botToken);
    assert.equal(mine.statusCode, 200, mine.body);
    assert.deepEqual(mine.json<{ items: { metadata: { name: string } }[] }>().items.map((c) => c.metadata.name), ["team-a-one"]);
    const everywhere = await call("GET", "/apis/slipway.dev/v1alpha1/clusters", botToken);
    assert.equal(everywhere.statusCode, 403);
    assert.equal(
      everywhere.json<{ message: string }>().message,
      'clusters.slipway.dev is forbidden: User "system:serviceaccount:team-a:bot" cannot list resource "clusters" in API group "slipway.dev" at the cluster scope',
    );
    assert.equal((await call("GET", "/apis/slipway.dev/v1alpha1/clusters?watch=true", botToken)).statusCode, 403);
    assert.equal((await call("GET", "/apis/slipway.dev/v1alpha1/namespaces/team-b/clusters?watch=true", botToken)).statusCode, 403);
  });

  it("keeps another team's cluster — its status, kubeconfig Secret and events — from a user without access to it", async () => {
    for (const url of [
      "/apis/slipway.dev/v1alpha1/namespaces/team-b/clusters/team-b-one",
      "/apis/slipway.dev/v1alpha1/namespaces/team-b/clusters/team-b-one/status",
      "/api/v1/namespaces/team-b/secrets/team-b-one-kubeconfig",
      "/api/v1/namespaces/team-b/events",
    ]) {
      const reply = await call("GET", url, botToken);
      assert.equal(reply.statusCode, 403, `${url}: ${reply.body}`);
      assert.equal(reply.json<{ reason: string }>().reason, "Forbidden");
      assert.doesNotMatch(reply.body, /"(stringData|data|spec|status)":\{/, "nothing of the object comes back");
    }
    // view reads status, never Secrets (its own team's kubeconfig included).
    assert.equal((await call("GET", "/apis/slipway.dev/v1alpha1/namespaces/team-a/clusters/team-a-one/status", botToken)).statusCode, 200);
    assert.equal((await call("GET", "/api/v1/namespaces/team-a/secrets/team-a-one-kubeconfig", botToken)).statusCode, 403);
  });

  it("answers kubectl auth can-i, can-i --list and whoami from the caller's own identity", async () => {
    assert.deepEqual(await canI(botToken, { namespace: "team-a", verb: "get", group: "slipway.dev", resource: "clusters" }), {
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "bot-view/team-a" of ClusterRole "view" to ServiceAccount "bot/team-a"',
    });
    assert.equal((await canI(botToken, { namespace: "team-a", verb: "create", group: "slipway.dev", resource: "clusters" })).allowed, false);
    assert.equal((await canI(botToken, { namespace: "team-a", verb: "get", group: "slipway.dev", resource: "clusters", subresource: "status" })).allowed, true);
    assert.equal((await canI(adminToken, { namespace: "team-b", verb: "delete", group: "slipway.dev", resource: "clusters" })).allowed, true);
    // The catalogue of cluster templates is everyone's to read, and no one's to change but its keepers'.
    assert.equal((await canI(botToken, { verb: "list", group: "slipway.dev", resource: "clustertemplates" })).allowed, true);
    assert.equal((await canI(botToken, { verb: "create", group: "slipway.dev", resource: "clustertemplates" })).allowed, false);

    const rules = await call("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", botToken, { kind: "SelfSubjectRulesReview", spec: { namespace: "team-a" } });
    assert.equal(rules.statusCode, 201, rules.body);
    const resourceRules = rules.json<{ status: { resourceRules: { verbs: string[]; apiGroups?: string[]; resources?: string[] }[] } }>().status.resourceRules;
    assert.ok(resourceRules.some((r) => r.apiGroups?.includes("slipway.dev") && r.resources?.includes("clusters") && r.verbs.includes("list")));
    assert.ok(!resourceRules.some((r) => r.resources?.includes("secrets")));

    const whoami = await call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", botToken, { kind: "SelfSubjectReview", apiVersion: "authentication.k8s.io/v1" });
    assert.equal(whoami.statusCode, 201, whoami.body);
    const userInfo = whoami.json<{ status: { userInfo: { username: string; groups: string[] } } }>().status.userInfo;
    assert.equal(userInfo.username, "system:serviceaccount:team-a:bot");
    assert.deepEqual(userInfo.groups, ["system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"]);
  });

  it("lists the self reviews in discovery as create-only, stores nothing, and refuses a malformed review naming the field", async () => {
    const groups = (await call("GET", "/apis", botToken)).json<{ groups: { name: string }[] }>().groups.map((g) => g.name);
    assert.ok(groups.includes("authorization.k8s.io") && groups.includes("authentication.k8s.io") && groups.includes("rbac.authorization.k8s.io"), groups.join());
    const resources = (await call("GET", "/apis/authorization.k8s.io/v1", botToken)).json<{ resources: { name: string; verbs: string[] }[] }>().resources;
    assert.deepEqual(resources, [
      { name: "selfsubjectaccessreviews", singularName: "selfsubjectaccessreview", namespaced: false, kind: "SelfSubjectAccessReview", verbs: ["create"] },
      { name: "selfsubjectrulesreviews", singularName: "selfsubjectrulesreview", namespaced: false, kind: "SelfSubjectRulesReview", verbs: ["create"] },
    ]);
    const core = (await call("GET", "/api/v1", botToken)).json<{ resources: { name: string; kind: string }[] }>().resources;
    assert.ok(core.some((r) => r.name === "serviceaccounts/token" && r.kind === "TokenRequest"));
    assert.equal((await call("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", botToken)).statusCode, 405);
    const both = await call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", botToken, { spec: {} });
    assert.equal(both.statusCode, 422);
    assert.match(both.json<{ message: string }>().message, /spec\.resourceAttributes: Invalid value: exactly one of nonResourceAttributes or resourceAttributes/);
  });

  it("refuses a viewer a token for another account, and anyone a token that is not the server's", async () => {
    const refused = await call("POST", "/api/v1/namespaces/team-a/serviceaccounts/bot/token", botToken, { kind: "TokenRequest", spec: {} });
    assert.equal(refused.statusCode, 403);
    const forged = `${botToken.slice(0, -4)}AAAA`;
    assert.equal((await call("GET", "/apis/slipway.dev/v1alpha1/namespaces/team-a/clusters", forged)).statusCode, 401);
  });

  it("makes console sign-in links for the admin only, unless RBAC grants them", async () => {
    const as = (token: string) => access.signInLinkFor({ authorization: `Bearer ${token}`, clientCertificate: () => undefined });
    assert.equal((await as(adminToken))?.user, "admin");
    await assert.rejects(as(botToken), (e: Error & { code?: number }) => e.code === 403 && /cannot post path "\/login\/codes"/.test(e.message));
    assert.equal(await as("nobody"), undefined);
  });

  it("refuses a binding that grants more than its author holds", async () => {
    const { objects } = await setup;
    const alice: Identity = { user: "alice", groups: ["system:authenticated"] };
    await objects.create(ROLE_BINDING, "team-a", binding("team-a", "alice-admin", "admin", { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice" }));
    const context = { identity: alice };
    await objects.create(ROLE_BINDING, "team-a", binding("team-a", "carol-view", "view", { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "carol" }), { context });
    await assert.rejects(
      objects.create(ROLE_BINDING, "team-a", binding("team-a", "carol-root", "cluster-admin", { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "carol" }), { context }),
      (e: Error & { code?: number }) => e.code === 403,
    );
  });

  it("lets Slipway's controllers do their work as themselves, and not change who may do what", async () => {
    const { objects } = await setup;
    const context = controllerContext("cluster");
    const current = await objects.get(CLUSTER, "team-b", "team-b-one", { context });
    await objects.updateStatus(CLUSTER, "team-b", "team-b-one", { ...current, status: { phase: "Pending" } }, { context });
    await objects.create(SECRET, "team-b", { metadata: { name: "made-by-controller" }, stringData: { value: "x" } }, { context });
    await assert.rejects(
      objects.create(CLUSTER_ROLE_BINDING, undefined, { metadata: { name: "sneaky" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" }, subjects: [] }, { context }),
      (e: Error & { code?: number }) => e.code === 403,
    );
    // Someone else's service account in the controllers' namespace is not a controller.
    const stranger = { identity: serviceAccountIdentity("team-a", "cluster-controller") };
    await assert.rejects(objects.get(CLUSTER, "team-b", "team-b-one", { context: stranger }), (e: Error & { code?: number }) => e.code === 403);
  });
});

describe("the default roles", () => {
  it("are installed once, put back when changed, and left alone when their autoupdate annotation says false", async () => {
    const { objects, rbac, store } = await controlPlaneObjects();
    await ensureDefaultRbac(objects);
    const view = await objects.get(CLUSTER_ROLE, undefined, "view");
    await ensureDefaultRbac(objects);
    assert.equal((await objects.get(CLUSTER_ROLE, undefined, "view")).metadata.resourceVersion, view.metadata.resourceVersion, "nothing rewritten");
    const rules = view.rules as { resources?: string[] }[];
    assert.ok(rules.some((r) => r.resources?.includes("clusters/status")));

    await objects.update(CLUSTER_ROLE, undefined, "view", { ...view, rules: [] });
    await ensureDefaultRbac(objects);
    assert.deepEqual((await objects.get(CLUSTER_ROLE, undefined, "view")).rules, view.rules);

    const edit = await objects.get(CLUSTER_ROLE, undefined, "edit");
    const kept = { ...edit, metadata: { ...edit.metadata, annotations: { "rbac.authorization.kubernetes.io/autoupdate": "false" } }, rules: [] };
    await objects.update(CLUSTER_ROLE, undefined, "edit", kept);
    await ensureDefaultRbac(objects);
    assert.deepEqual((await objects.get(CLUSTER_ROLE, undefined, "edit")).rules, []);
    rbac.close();
    await store.close();
  });

  it("apply on every replica sharing a store, whichever replica the binding was made through", async () => {
    const store = SqliteStore.open(":memory:");
    const one = await controlPlaneObjects(store);
    const two = await controlPlaneObjects(store);
    await one.objects.create(NAMESPACE, undefined, { metadata: { name: "team-a" } });
    await ensureDefaultRbac(one.objects);
    const dave: Identity = { user: "dave", groups: ["system:authenticated"] };
    await assert.rejects(two.objects.list(CLUSTER, "team-a", { context: { identity: dave } }), (e: Error & { code?: number }) => e.code === 403);
    await one.objects.create(ROLE_BINDING, "team-a", binding("team-a", "dave-view", "view", { kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "dave" }));
    const deadline = Date.now() + 3000;
    for (;;) {
      try {
        await two.objects.list(CLUSTER, "team-a", { context: { identity: dave } });
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    one.rbac.close();
    two.rbac.close();
    await store.close();
  });
});
