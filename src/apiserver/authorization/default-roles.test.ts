import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultRegistry } from "../../api/kinds.ts";
import { SLIPWAY_MANAGED_RESOURCES, SLIPWAY_USER_RESOURCES, defaultClusterRoleBindings, defaultClusterRoles } from "./default-roles.ts";
import { authorizerOf, clusterRoleBinding, person, roleBinding, user } from "./testing.ts";
import type { RbacObject, UserInfo } from "./types.ts";

const defaults = (): RbacObject[] => [...defaultClusterRoles(), ...defaultClusterRoleBindings()];

/** The defaults plus `level` bound to the user in team-a by a RoleBinding, as a logical cloud or a platform team would bind it. */
function boundIn(level: string, who: string): ReturnType<typeof authorizerOf> {
  return authorizerOf([...defaults(), roleBinding("team-a", `${who}-${level}`, { kind: "ClusterRole", name: level }, [user(who)])]);
}

type Check = [verb: string, group: string, resource: string, allowed: boolean];

function assertChecks(rbac: ReturnType<typeof authorizerOf>, identity: UserInfo, checks: Check[], namespace = "team-a"): void {
  for (const [verb, group, combined, allowed] of checks) {
    const [resource = "", subresource] = combined.split("/");
    const name = verb === "list" || verb === "watch" || verb === "create" || verb === "deletecollection" ? undefined : "x";
    const decision = rbac.authorize({ identity, verb, resource: { group, resource, ...(subresource ? { subresource } : {}), namespace, ...(name ? { name } : {}) } });
    assert.equal(decision.allowed, allowed, `${verb} ${combined}.${group} in ${namespace}: expected ${allowed ? "allowed" : "refused"}`);
  }
}

describe("default ClusterRole view (bound in a namespace)", () => {
  const rbac = boundIn("view", "bob");
  const bob = person("bob");

  it("reads Slipway's kinds and their status", () => {
    assertChecks(rbac, bob, [
      ["get", "slipway.dev", "clusters", true],
      ["list", "slipway.dev", "clusters", true],
      ["watch", "slipway.dev", "clusters", true],
      ["get", "slipway.dev", "clusters/status", true],
      ["list", "slipway.dev", "machinepools", true],
      ["get", "slipway.dev", "machinepools/scale", true],
      ["list", "slipway.dev", "machines", true],
      ["list", "slipway.dev", "infrastructures", true],
      ["list", "slipway.dev", "operations", true],
      ["list", "slipway.dev", "logicalclouds", true],
      ["list", "", "events", true],
    ]);
  });

  it("changes nothing", () => {
    assertChecks(rbac, bob, [
      ["create", "slipway.dev", "clusters", false],
      ["update", "slipway.dev", "clusters", false],
      ["patch", "slipway.dev", "machinepools", false],
      ["patch", "slipway.dev", "machinepools/scale", false],
      ["delete", "slipway.dev", "clusters", false],
      ["create", "", "pods", false],
      ["delete", "", "configmaps", false],
    ]);
  });

  it("reads the workload kinds but neither Secrets nor RBAC", () => {
    assertChecks(rbac, bob, [
      ["list", "", "pods", true],
      ["get", "", "pods/log", true],
      ["list", "", "configmaps", true],
      ["list", "", "serviceaccounts", true],
      ["list", "", "resourcequotas", true],
      ["get", "", "namespaces", true],
      ["list", "apps", "deployments", true],
      ["list", "apps", "daemonsets", true],
      ["get", "", "secrets", false],
      ["list", "", "secrets", false],
      ["watch", "", "secrets", false],
      ["get", "", "pods/exec", false],
      ["list", "rbac.authorization.k8s.io", "roles", false],
      ["list", "rbac.authorization.k8s.io", "rolebindings", false],
    ]);
  });

  it("grants nothing outside its namespace or at the cluster scope", () => {
    assertChecks(rbac, bob, [["list", "slipway.dev", "clusters", false], ["list", "", "pods", false]], "team-b");
    assert.equal(rbac.authorize({ identity: bob, verb: "list", resource: { group: "", resource: "nodes" } }).allowed, false);
    assert.equal(rbac.authorize({ identity: bob, verb: "list", resource: { group: "slipway.dev", resource: "clusters" } }).allowed, false);
  });
});

describe("default ClusterRole edit (bound in a namespace)", () => {
  const rbac = boundIn("edit", "alice");
  const alice = person("alice");

  it("changes Slipway's user-facing kinds", () => {
    assertChecks(rbac, alice, [
      ["create", "slipway.dev", "clusters", true],
      ["update", "slipway.dev", "clusters", true],
      ["patch", "slipway.dev", "clusters", true],
      ["delete", "slipway.dev", "clusters", true],
      ["create", "slipway.dev", "connections", true],
      ["patch", "slipway.dev", "machinepools", true],
      ["update", "slipway.dev", "machinepools/scale", true],
      ["delete", "slipway.dev", "machines", true],
      ["create", "slipway.dev", "logicalclouds", true],
      ["list", "slipway.dev", "clusters", true],
    ]);
  });

  it("leaves status and the controllers' own kinds to the controllers", () => {
    assertChecks(rbac, alice, [
      ["update", "slipway.dev", "clusters/status", false],
      ["patch", "slipway.dev", "machines/status", false],
      ["create", "slipway.dev", "operations", false],
      ["update", "slipway.dev", "infrastructures", false],
      ["get", "slipway.dev", "infrastructures", true],
    ]);
  });

  it("reads and writes Secrets and workloads, but not RBAC or quotas", () => {
    assertChecks(rbac, alice, [
      ["get", "", "secrets", true],
      ["create", "", "secrets", true],
      ["create", "", "pods", true],
      ["create", "", "configmaps", true],
      ["create", "apps", "deployments", true],
      ["create", "", "serviceaccounts/token", true],
      ["create", "rbac.authorization.k8s.io", "roles", false],
      ["create", "rbac.authorization.k8s.io", "rolebindings", false],
      ["update", "", "resourcequotas", false],
      ["update", "", "pods/status", false],
    ]);
  });
});

describe("default ClusterRole admin (bound in a namespace)", () => {
  const rbac = boundIn("admin", "dana");
  const dana = person("dana");

  it("adds Roles and RoleBindings within the namespace to what edit may do", () => {
    assertChecks(rbac, dana, [
      ["create", "rbac.authorization.k8s.io", "roles", true],
      ["create", "rbac.authorization.k8s.io", "rolebindings", true],
      ["delete", "rbac.authorization.k8s.io", "rolebindings", true],
      ["create", "authorization.k8s.io", "localsubjectaccessreviews", true],
      ["create", "slipway.dev", "clusters", true],
      ["get", "", "secrets", true],
      ["update", "", "resourcequotas", false],
    ]);
    assertChecks(rbac, dana, [["create", "rbac.authorization.k8s.io", "rolebindings", false]], "team-b");
    assert.equal(rbac.authorize({ identity: dana, verb: "create", resource: { group: "rbac.authorization.k8s.io", resource: "clusterrolebindings" } }).allowed, false);
  });
});

describe("default ClusterRole cluster-admin and the system roles", () => {
  const rbac = authorizerOf([...defaults(), clusterRoleBinding("ops", "cluster-admin", [user("ops")])]);

  it("cluster-admin may do anything, anywhere, on any path", () => {
    const ops = person("ops");
    assert.equal(rbac.authorize({ identity: ops, verb: "delete", resource: { group: "", resource: "nodes", name: "n1" } }).allowed, true);
    assert.equal(rbac.authorize({ identity: ops, verb: "update", resource: { group: "slipway.dev", resource: "clusters", subresource: "status", namespace: "x", name: "c" } }).allowed, true);
    assert.equal(rbac.authorize({ identity: ops, verb: "get", path: "/metrics" }).allowed, true);
  });

  it("binds cluster-admin to system:masters, which SelfSubjectRulesReview then shows", () => {
    const review = rbac.rulesReview(person("root", "system:masters"), "default");
    assert.deepEqual(review.resourceRules.find((r) => r.verbs.includes("*")), { verbs: ["*"], apiGroups: ["*"], resources: ["*"] });
    assert.deepEqual(review.nonResourceRules.find((r) => r.verbs.includes("*")), { verbs: ["*"], nonResourceURLs: ["*"] });
  });

  it("lets every authenticated user discover the API and review its own access, and nothing more", () => {
    const nobody = person("nobody");
    for (const path of ["/api", "/api/v1", "/apis", "/apis/slipway.dev/v1alpha1", "/openapi/v3", "/openapi/v3/apis/slipway.dev/v1alpha1", "/version", "/healthz", "/readyz", "/livez"]) {
      assert.equal(rbac.authorize({ identity: nobody, verb: "get", path }).allowed, true, path);
    }
    assert.equal(rbac.authorize({ identity: nobody, verb: "get", path: "/metrics" }).allowed, false);
    assert.equal(rbac.authorize({ identity: nobody, verb: "post", path: "/api" }).allowed, false);
    for (const [group, resource] of [
      ["authorization.k8s.io", "selfsubjectaccessreviews"],
      ["authorization.k8s.io", "selfsubjectrulesreviews"],
      ["authentication.k8s.io", "selfsubjectreviews"],
    ] as const) {
      assert.equal(rbac.authorize({ identity: nobody, verb: "create", resource: { group, resource } }).allowed, true, resource);
    }
    assert.equal(rbac.authorize({ identity: nobody, verb: "create", resource: { group: "authorization.k8s.io", resource: "subjectaccessreviews" } }).allowed, false);
    assert.equal(rbac.authorize({ identity: nobody, verb: "list", resource: { group: "slipway.dev", resource: "clusters", namespace: "default" } }).allowed, false);
  });

  it("lets an unauthenticated client read health and version only", () => {
    const anonymous = { user: "system:anonymous", groups: ["system:unauthenticated"] };
    assert.equal(rbac.authorize({ identity: anonymous, verb: "get", path: "/healthz" }).allowed, true);
    assert.equal(rbac.authorize({ identity: anonymous, verb: "get", path: "/version" }).allowed, true);
    assert.equal(rbac.authorize({ identity: anonymous, verb: "get", path: "/api" }).allowed, false);
  });
});

describe("default roles data", () => {
  it("covers every kind Slipway serves: view reads each, and none that holds secrets", () => {
    const listed = new Set<string>([...SLIPWAY_USER_RESOURCES, ...SLIPWAY_MANAGED_RESOURCES]);
    const rbac = boundIn("view", "bob");
    for (const kind of defaultRegistry().all()) {
      const readable = rbac.authorize({ identity: person("bob"), verb: "list", resource: { group: kind.group, resource: kind.plural, namespace: "team-a" } }).allowed;
      if (kind.sensitive) assert.equal(readable, false, `view must not read ${kind.plural}`);
      else if (kind.group === "slipway.dev") {
        assert.ok(listed.has(kind.plural), `${kind.plural} is in neither SLIPWAY_USER_RESOURCES nor SLIPWAY_MANAGED_RESOURCES`);
        assert.equal(readable, true, `view must read ${kind.plural}`);
      }
    }
  });

  it("is labelled as Kubernetes labels its bootstrap policy, and binds only ClusterRoles it defines", () => {
    const roles = defaultClusterRoles();
    assert.deepEqual(
      roles.map((r) => r.metadata.name),
      ["cluster-admin", "system:discovery", "system:basic-user", "system:public-info-viewer", "admin", "edit", "view"],
    );
    for (const object of [...roles, ...defaultClusterRoleBindings()]) {
      assert.equal(object.metadata.labels["kubernetes.io/bootstrapping"], "rbac-defaults");
      assert.equal(object.metadata.annotations["rbac.authorization.kubernetes.io/autoupdate"], "true");
    }
    const names = new Set(roles.map((r) => r.metadata.name));
    for (const binding of defaultClusterRoleBindings()) assert.ok(names.has(binding.roleRef.name), binding.metadata.name);
  });

  it("hands out fresh objects, so a caller's change does not leak into the next call", () => {
    const first = defaultClusterRoles();
    first[0]?.rules.push({ verbs: ["get"], nonResourceURLs: ["/x"] });
    assert.equal(defaultClusterRoles()[0]?.rules.length, 2);
  });
});
