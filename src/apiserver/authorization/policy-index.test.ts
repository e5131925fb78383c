import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { PolicyIndex } from "./policy-index.ts";
import { RbacAuthorizer } from "./rbac.ts";
import { clusterRole, clusterRoleBinding, group, person, role, roleBinding, serviceAccount, serviceAccountIdentity, user } from "./testing.ts";
import type { RequestAttributes, ResourceAttributes, UserInfo } from "./types.ts";

const podReader = clusterRole("pod-reader", [{ verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["pods"] }]);
const alice = person("alice");

function asks(identity: UserInfo, verb: string, resource: ResourceAttributes): RequestAttributes {
  return { identity, verb, resource };
}

const podsIn = (namespace: string, name?: string): ResourceAttributes => ({ group: "", resource: "pods", namespace, ...(name ? { name } : {}) });

describe("PolicyIndex finds the bindings of a user by subject", () => {
  const index = new PolicyIndex();
  for (const o of [
    clusterRoleBinding("by-user", "view", [user("alice")]),
    clusterRoleBinding("by-group", "view", [group("devs"), user("alice")]),
    clusterRoleBinding("other", "view", [user("bob")]),
    clusterRoleBinding("sa", "view", [serviceAccount("builder", "ci")]),
    roleBinding("team-a", "local", { kind: "ClusterRole", name: "edit" }, [user("alice")]),
    roleBinding("team-a", "local-sa", { kind: "ClusterRole", name: "edit" }, [serviceAccount("builder")]),
    roleBinding("team-b", "elsewhere", { kind: "ClusterRole", name: "edit" }, [user("alice")]),
  ]) {
    index.added(o);
  }

  it("returns the cluster role bindings naming the user or one of its groups, by name, with the first subject that applies", () => {
    const found = index.clusterBindingsFor(person("alice", "devs")).map((m) => [m.binding.name, m.subject.kind, m.subject.name]);
    assert.deepEqual(found, [
      ["by-group", "Group", "devs"],
      ["by-user", "User", "alice"],
    ]);
  });

  it("returns only the role bindings of the namespace asked about", () => {
    assert.deepEqual(index.namespaceBindingsFor(alice, "team-a").map((m) => m.binding.name), ["local"]);
    assert.deepEqual(index.namespaceBindingsFor(alice, "team-c"), []);
    assert.deepEqual(index.namespaceBindingsFor(alice, ""), []);
  });

  it("finds service accounts by their user name, a RoleBinding's defaulting to its namespace", () => {
    assert.deepEqual(index.clusterBindingsFor(serviceAccountIdentity("ci", "builder")).map((m) => m.binding.name), ["sa"]);
    assert.deepEqual(index.namespaceBindingsFor(serviceAccountIdentity("team-a", "builder"), "team-a").map((m) => m.binding.name), ["local-sa"]);
    assert.deepEqual(index.namespaceBindingsFor(serviceAccountIdentity("ci", "builder"), "team-a"), []);
  });

  it("resolves roles by name: Roles in the binding's namespace, ClusterRoles anywhere", () => {
    const roles = new PolicyIndex();
    roles.added(role("team-a", "r", [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }]));
    roles.added(clusterRole("r", [{ verbs: ["list"], apiGroups: [""], resources: ["pods"] }]));
    assert.deepEqual(roles.roleRules({ apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "r" }, "team-a"), [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }]);
    assert.deepEqual(roles.roleRules({ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "r" }, "team-a"), [{ verbs: ["list"], apiGroups: [""], resources: ["pods"] }]);
    assert.equal(String(roles.roleRules({ apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "r" }, "team-b")), 'Error: role.rbac.authorization.k8s.io "r" not found');
  });
});

describe("PolicyIndex follows add, update and delete events", () => {
  it("grants and takes away as bindings and roles are added, updated and deleted", () => {
    const index = new PolicyIndex();
    const rbac = new RbacAuthorizer(index);
    const request = asks(alice, "get", podsIn("team-a", "web"));
    const reader = role("team-a", "reader", podReader.rules ?? []);
    const binding = roleBinding("team-a", "r", { kind: "Role", name: "reader" }, [user("alice")]);

    index.added(binding);
    assert.deepEqual(rbac.authorize(request), { allowed: false, reason: 'RBAC: role.rbac.authorization.k8s.io "reader" not found' });
    index.added(reader);
    assert.equal(rbac.authorize(request).allowed, true);

    const withoutAlice = roleBinding("team-a", "r", { kind: "Role", name: "reader" }, [user("bob")]);
    index.updated(binding, withoutAlice);
    assert.equal(rbac.authorize(request).allowed, false);
    assert.equal(rbac.authorize(asks(person("bob"), "get", podsIn("team-a", "web"))).allowed, true);

    index.updated(withoutAlice, binding);
    const writerOnly = role("team-a", "reader", [{ verbs: ["create"], apiGroups: [""], resources: ["pods"] }]);
    index.updated(reader, writerOnly);
    assert.equal(rbac.authorize(request).allowed, false);
    index.updated(writerOnly, reader);
    assert.equal(rbac.authorize(request).allowed, true);

    index.deleted(binding);
    assert.deepEqual(rbac.authorize(request), { allowed: false, reason: "" });
  });

  it("forgets a deleted ClusterRoleBinding and its subjects", () => {
    const binding = clusterRoleBinding("r", "pod-reader", [user("alice"), group("devs")]);
    const index = new PolicyIndex();
    for (const o of [podReader, binding]) index.added(o);
    const rbac = new RbacAuthorizer(index);
    index.deleted(binding);
    assert.equal(rbac.authorize(asks(alice, "list", podsIn("x"))).allowed, false);
    assert.equal(rbac.authorize(asks(person("carol", "devs"), "list", podsIn("x"))).allowed, false);
    assert.deepEqual(index.clusterBindingsFor(person("carol", "devs")), []);
  });

  it("keeps a RoleBinding and a ClusterRoleBinding of the same name apart", () => {
    const index = new PolicyIndex();
    const rb = roleBinding("team-a", "same", { kind: "ClusterRole", name: "pod-reader" }, [user("alice")]);
    for (const o of [podReader, rb, clusterRoleBinding("same", "pod-reader", [user("alice")])]) index.added(o);
    index.deleted(rb);
    assert.equal(new RbacAuthorizer(index).authorize(asks(alice, "list", podsIn("team-b"))).allowed, true);
  });

  it("ignores objects of other kinds", () => {
    const index = new PolicyIndex();
    index.added({ kind: "ConfigMap", metadata: { namespace: "team-a", name: "x" }, roleRef: { apiGroup: "", kind: "ClusterRole", name: "cluster-admin" }, subjects: [user("alice")] });
    index.added(clusterRole("cluster-admin", [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }]));
    assert.equal(new RbacAuthorizer(index).authorize(asks(alice, "get", podsIn("team-a", "p"))).allowed, false);
  });
});


describe("PolicyIndex after a change", () => {
  it("answers a caller it answered before from the bindings as they are now: added, changed, removed or forgotten", () => {
    const index = new PolicyIndex();
    const rbac = new RbacAuthorizer(index);
    index.added(podReader);
    const get = asks(alice, "get", podsIn("team-a", "web"));
    assert.equal(rbac.authorize(get).allowed, false);
    const binding = roleBinding("team-a", "read", { kind: "ClusterRole", name: "pod-reader" }, [user("alice")]);
    index.added(binding);
    assert.equal(rbac.authorize(get).allowed, true);
    index.updated(binding, roleBinding("team-a", "read", { kind: "ClusterRole", name: "pod-reader" }, [user("bob")]));
    assert.equal(rbac.authorize(get).allowed, false);
    index.added(binding);
    assert.equal(rbac.authorize(get).allowed, true);
    index.deleted(binding);
    assert.equal(rbac.authorize(get).allowed, false);
    index.added(binding);
    index.clear();
    assert.equal(rbac.authorize(get).allowed, false);
  });
});
