import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  authorizerOf,
  clusterRole,
  clusterRoleBinding,
  group,
  person,
  role,
  roleBinding,
  serviceAccount,
  serviceAccountIdentity,
  user,
} from "./testing.ts";
import type { RbacObject, RequestAttributes, ResourceAttributes, UserInfo } from "./types.ts";

const podReader = clusterRole("pod-reader", [{ verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["pods"] }]);
const nodeReader = clusterRole("node-reader", [
  { verbs: ["get", "list"], apiGroups: [""], resources: ["nodes"] },
  { verbs: ["get"], nonResourceURLs: ["/metrics"] },
]);

function asks(identity: UserInfo, verb: string, resource: ResourceAttributes): RequestAttributes {
  return { identity, verb, resource };
}

const podsIn = (namespace: string | undefined, name?: string): ResourceAttributes => ({
  group: "",
  resource: "pods",
  ...(namespace ? { namespace } : {}),
  ...(name ? { name } : {}),
});

interface Case {
  name: string;
  objects: RbacObject[];
  request: RequestAttributes;
  allowed: boolean;
}

const alice = person("alice");
const cases: Case[] = [
  {
    name: "nobody is allowed anything without a binding",
    objects: [podReader],
    request: asks(alice, "get", podsIn("team-a", "web")),
    allowed: false,
  },
  {
    name: "system:masters may do anything without a binding",
    objects: [],
    request: asks(person("root", "system:masters"), "delete", { group: "slipway.dev", resource: "clusters", namespace: "x", name: "y" }),
    allowed: true,
  },
  {
    name: "system:masters may reach any path",
    objects: [],
    request: { identity: person("root", "system:masters"), verb: "get", path: "/debug/pprof" },
    allowed: true,
  },
  {
    name: "a RoleBinding to a Role grants within its namespace",
    objects: [role("team-a", "reader", podReader.rules ?? []), roleBinding("team-a", "r", { kind: "Role", name: "reader" }, [user("alice")])],
    request: asks(alice, "list", podsIn("team-a")),
    allowed: true,
  },
  {
    name: "a RoleBinding uses the Role of its own namespace, not a namesake elsewhere",
    objects: [role("team-b", "reader", podReader.rules ?? []), role("team-a", "reader", []), roleBinding("team-a", "r", { kind: "Role", name: "reader" }, [user("alice")])],
    request: asks(alice, "list", podsIn("team-a")),
    allowed: false,
  },
  {
    name: "a RoleBinding to a ClusterRole grants within its namespace",
    objects: [podReader, roleBinding("team-a", "r", { kind: "ClusterRole", name: "pod-reader" }, [user("alice")])],
    request: asks(alice, "get", podsIn("team-a", "web")),
    allowed: true,
  },
  {
    name: "a RoleBinding to a ClusterRole grants nothing in another namespace",
    objects: [podReader, roleBinding("team-a", "r", { kind: "ClusterRole", name: "pod-reader" }, [user("alice")])],
    request: asks(alice, "get", podsIn("team-b", "web")),
    allowed: false,
  },
  {
    name: "a RoleBinding grants no list across all namespaces",
    objects: [podReader, roleBinding("team-a", "r", { kind: "ClusterRole", name: "pod-reader" }, [user("alice")])],
    request: asks(alice, "list", podsIn(undefined)),
    allowed: false,
  },
  {
    name: "a RoleBinding to a ClusterRole grants nothing cluster-scoped",
    objects: [nodeReader, roleBinding("team-a", "r", { kind: "ClusterRole", name: "node-reader" }, [user("alice")])],
    request: asks(alice, "list", { group: "", resource: "nodes" }),
    allowed: false,
  },
  {
    name: "a RoleBinding to a ClusterRole grants no path",
    objects: [nodeReader, roleBinding("team-a", "r", { kind: "ClusterRole", name: "node-reader" }, [user("alice")])],
    request: { identity: alice, verb: "get", path: "/metrics" },
    allowed: false,
  },
  {
    name: "a ClusterRoleBinding grants in every namespace",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [user("alice")])],
    request: asks(alice, "get", podsIn("kube-system", "etcd")),
    allowed: true,
  },
  {
    name: "a ClusterRoleBinding grants a list across all namespaces",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [user("alice")])],
    request: asks(alice, "list", podsIn(undefined)),
    allowed: true,
  },
  {
    name: "a ClusterRoleBinding grants cluster-scoped resources",
    objects: [nodeReader, clusterRoleBinding("r", "node-reader", [user("alice")])],
    request: asks(alice, "list", { group: "", resource: "nodes" }),
    allowed: true,
  },
  {
    name: "a ClusterRoleBinding grants paths",
    objects: [nodeReader, clusterRoleBinding("r", "node-reader", [user("alice")])],
    request: { identity: alice, verb: "get", path: "/metrics" },
    allowed: true,
  },
  {
    name: "a ClusterRoleBinding to a Role applies to nobody",
    objects: [role("team-a", "reader", podReader.rules ?? []), { kind: "ClusterRoleBinding", metadata: { name: "r" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "reader" }, subjects: [user("alice")] }],
    request: asks(alice, "list", podsIn("team-a")),
    allowed: false,
  },
  {
    name: "a User subject is matched by name only",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [user("alice")])],
    request: asks(person("alicia"), "list", podsIn("team-a")),
    allowed: false,
  },
  {
    name: "a Group subject grants its members",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [group("devs")])],
    request: asks(person("carol", "devs"), "list", podsIn("team-a")),
    allowed: true,
  },
  {
    name: "a Group subject is not a user of that name",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [group("devs")])],
    request: asks(person("devs"), "list", podsIn("team-a")),
    allowed: false,
  },
  {
    name: "system:authenticated grants every authenticated user",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [group("system:authenticated")])],
    request: asks(person("anyone"), "list", podsIn("team-a")),
    allowed: true,
  },
  {
    name: "a ServiceAccount subject with its namespace",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [serviceAccount("builder", "ci")])],
    request: asks(serviceAccountIdentity("ci", "builder"), "list", podsIn("team-a")),
    allowed: true,
  },
  {
    name: "a ServiceAccount subject of another namespace",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [serviceAccount("builder", "ci")])],
    request: asks(serviceAccountIdentity("team-a", "builder"), "list", podsIn("team-a")),
    allowed: false,
  },
  {
    name: "a ServiceAccount subject without namespace in a RoleBinding is of the binding's namespace",
    objects: [podReader, roleBinding("team-a", "r", { kind: "ClusterRole", name: "pod-reader" }, [serviceAccount("builder")])],
    request: asks(serviceAccountIdentity("team-a", "builder"), "list", podsIn("team-a")),
    allowed: true,
  },
  {
    name: "a ServiceAccount subject without namespace in a RoleBinding is not another namespace's account",
    objects: [podReader, roleBinding("team-a", "r", { kind: "ClusterRole", name: "pod-reader" }, [serviceAccount("builder")])],
    request: asks(serviceAccountIdentity("team-b", "builder"), "list", podsIn("team-a")),
    allowed: false,
  },
  {
    name: "a ServiceAccount subject without namespace in a ClusterRoleBinding applies to nobody",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [serviceAccount("builder")])],
    request: asks(serviceAccountIdentity("team-a", "builder"), "list", podsIn("team-a")),
    allowed: false,
  },
  {
    name: "a User subject naming a ServiceAccount's user grants the account",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [user("system:serviceaccount:ci:builder")])],
    request: asks(serviceAccountIdentity("ci", "builder"), "list", podsIn("team-a")),
    allowed: true,
  },
  {
    name: "the group of all ServiceAccounts",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [group("system:serviceaccounts")])],
    request: asks(serviceAccountIdentity("ci", "builder"), "list", podsIn("team-a")),
    allowed: true,
  },
  {
    name: "the group of one namespace's ServiceAccounts",
    objects: [podReader, roleBinding("team-a", "r", { kind: "ClusterRole", name: "pod-reader" }, [group("system:serviceaccounts:team-a")])],
    request: asks(serviceAccountIdentity("team-a", "deployer"), "list", podsIn("team-a")),
    allowed: true,
  },
  {
    name: "the group of one namespace's ServiceAccounts excludes another namespace's",
    objects: [podReader, roleBinding("team-a", "r", { kind: "ClusterRole", name: "pod-reader" }, [group("system:serviceaccounts:team-a")])],
    request: asks(serviceAccountIdentity("team-b", "deployer"), "list", podsIn("team-a")),
    allowed: false,
  },
  {
    name: "an unknown subject kind applies to nobody",
    objects: [podReader, clusterRoleBinding("r", "pod-reader", [{ kind: "Robot", name: "alice" }])],
    request: asks(alice, "list", podsIn("team-a")),
    allowed: false,
  },
  {
    name: "a binding to a missing role grants nothing; another binding still does",
    objects: [podReader, clusterRoleBinding("a", "gone", [user("alice")]), clusterRoleBinding("b", "pod-reader", [user("alice")])],
    request: asks(alice, "list", podsIn("team-a")),
    allowed: true,
  },
];

describe("RbacAuthorizer.authorize", () => {
  for (const c of cases) {
    it(`${c.allowed ? "allows" : "refuses"}: ${c.name}`, () => {
      assert.equal(authorizerOf(c.objects).authorize(c.request).allowed, c.allowed);
    });
  }

  it("says which binding, role and subject allowed a request", () => {
    const rbac = authorizerOf([
      podReader,
      clusterRoleBinding("readers", "pod-reader", [group("devs"), user("alice")]),
      roleBinding("team-a", "ci", { kind: "ClusterRole", name: "pod-reader" }, [serviceAccount("builder")]),
    ]);
    assert.deepEqual(rbac.authorize(asks(person("alice", "devs"), "get", podsIn("team-a", "p"))), {
      allowed: true,
      reason: 'RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "devs"',
    });
    assert.deepEqual(rbac.authorize(asks(serviceAccountIdentity("team-a", "builder"), "get", podsIn("team-a", "p"))), {
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "ci/team-a" of ClusterRole "pod-reader" to ServiceAccount "builder/team-a"',
    });
  });

  it("refuses without a reason when nothing went wrong resolving roles", () => {
    assert.deepEqual(authorizerOf([podReader]).authorize(asks(alice, "get", podsIn("team-a", "p"))), { allowed: false, reason: "" });
  });

  it("names every role it could not resolve in a denial, once each", () => {
    const rbac = authorizerOf([
      clusterRoleBinding("a", "gone", [user("alice")]),
      clusterRoleBinding("b", "gone", [user("alice")]),
      roleBinding("team-a", "c", { kind: "Role", name: "missing" }, [user("alice")]),
      { kind: "RoleBinding", metadata: { namespace: "team-a", name: "d" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Policy", name: "x" }, subjects: [user("alice")] },
    ]);
    assert.deepEqual(rbac.authorize(asks(alice, "get", podsIn("team-a", "p"))), {
      allowed: false,
      reason:
        'RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, role.rbac.authorization.k8s.io "missing" not found, unsupported role reference kind: "Policy"]',
    });
    assert.deepEqual(rbac.authorize(asks(alice, "get", podsIn("team-b", "p"))), {
      allowed: false,
      reason: 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found',
    });
  });
});

describe("RbacAuthorizer.rulesReview", () => {
  const rbac = authorizerOf([
    podReader,
    nodeReader,
    clusterRoleBinding("nodes", "node-reader", [group("system:authenticated")]),
    roleBinding("team-a", "pods", { kind: "ClusterRole", name: "pod-reader" }, [user("alice")]),
    role("team-a", "cm", [{ verbs: ["update"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["settings"] }]),
    roleBinding("team-a", "cm", { kind: "Role", name: "cm" }, [user("alice")]),
  ]);

  it("lists the cluster-wide and the namespace's rules, split into resource and path rules", () => {
    assert.deepEqual(rbac.rulesReview(alice, "team-a"), {
      resourceRules: [
        { verbs: ["get", "list"], apiGroups: [""], resources: ["nodes"] },
        { verbs: ["update"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["settings"] },
        { verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["pods"] },
      ],
      nonResourceRules: [{ verbs: ["get"], nonResourceURLs: ["/metrics"] }],
      incomplete: false,
    });
  });

  it("lists only the cluster-wide rules in another namespace", () => {
    assert.deepEqual(rbac.rulesReview(alice, "team-b").resourceRules, [{ verbs: ["get", "list"], apiGroups: [""], resources: ["nodes"] }]);
  });

  it("says when a binding's role could not be resolved", () => {
    const broken = authorizerOf([podReader, clusterRoleBinding("a", "pod-reader", [user("alice")]), clusterRoleBinding("b", "gone", [user("alice")])]);
    const status = broken.rulesReview(alice, "team-a");
    assert.equal(status.incomplete, true);
    assert.equal(status.evaluationError, 'clusterrole.rbac.authorization.k8s.io "gone" not found');
    assert.equal(status.resourceRules.length, 1);
  });
});
