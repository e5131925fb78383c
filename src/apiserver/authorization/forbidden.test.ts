import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { forbiddenError, forbiddenMessage, goQuote } from "./forbidden.ts";
import { person } from "./testing.ts";
import type { RequestAttributes } from "./types.ts";

const bob = person("bob");

describe("forbiddenMessage", () => {
  const cases: { name: string; request: RequestAttributes; reason?: string; message: string }[] = [
    {
      name: "a named object in a namespace",
      request: { identity: bob, verb: "delete", resource: { group: "", resource: "pods", namespace: "team-a", name: "web" } },
      message: 'pods "web" is forbidden: User "bob" cannot delete resource "pods" in API group "" in the namespace "team-a"',
    },
    {
      name: "a collection in a namespace (no name)",
      request: { identity: bob, verb: "create", resource: { group: "slipway.dev", resource: "clusters", namespace: "team-a" } },
      message: 'clusters.slipway.dev is forbidden: User "bob" cannot create resource "clusters" in API group "slipway.dev" in the namespace "team-a"',
    },
    {
      name: "a cluster-scoped list",
      request: { identity: bob, verb: "list", resource: { group: "", resource: "nodes" } },
      message: 'nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope',
    },
    {
      name: "a subresource (the resource alone before 'is forbidden')",
      request: { identity: bob, verb: "update", resource: { group: "slipway.dev", resource: "clusters", subresource: "status", namespace: "team-a", name: "prod" } },
      message: 'clusters.slipway.dev "prod" is forbidden: User "bob" cannot update resource "clusters/status" in API group "slipway.dev" in the namespace "team-a"',
    },
    {
      name: "a cluster-scoped named object",
      request: { identity: bob, verb: "get", resource: { group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "admin" } },
      message: 'clusterroles.rbac.authorization.k8s.io "admin" is forbidden: User "bob" cannot get resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope',
    },
    {
      name: "a path",
      request: { identity: bob, verb: "get", path: "/metrics" },
      message: 'forbidden: User "bob" cannot get path "/metrics"',
    },
    {
      name: "a service account's user",
      request: { identity: { user: "system:serviceaccount:team-a:ci", groups: [] }, verb: "list", resource: { group: "", resource: "secrets", namespace: "kube-system" } },
      message: 'secrets is forbidden: User "system:serviceaccount:team-a:ci" cannot list resource "secrets" in API group "" in the namespace "kube-system"',
    },
    {
      name: "with the authorizer's reason",
      request: { identity: bob, verb: "get", resource: { group: "", resource: "pods", namespace: "team-a", name: "web" } },
      reason: 'RBAC: role.rbac.authorization.k8s.io "gone" not found',
      message: 'pods "web" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "team-a": RBAC: role.rbac.authorization.k8s.io "gone" not found',
    },
    {
      name: "a user name that would read as HTML, escaped",
      request: { identity: { user: "<b>&", groups: [] }, verb: "get", path: "/" },
      message: 'forbidden: User "&lt;b&gt;&amp;" cannot get path "/"',
    },
  ];
  for (const c of cases) {
    it(c.name, () => assert.equal(forbiddenMessage(c.request, c.reason), c.message));
  }
});

describe("forbiddenError", () => {
  it("is a 403 Forbidden Status naming the group, resource and object", () => {
    const status = forbiddenError({ identity: bob, verb: "get", resource: { group: "slipway.dev", resource: "clusters", namespace: "a", name: "prod" } }).toStatus();
    assert.equal(status.code, 403);
    assert.equal(status.reason, "Forbidden");
    assert.deepEqual(status.details, { group: "slipway.dev", kind: "clusters", name: "prod" });
  });
});

describe("goQuote", () => {
  it("quotes as Go's %q does", () => {
    assert.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
    assert.equal(goQuote("line\nnext\ttab\x01"), '"line\\nnext\\ttab\\x01"');
    assert.equal(goQuote("naïve"), '"naïve"');
  });
});
