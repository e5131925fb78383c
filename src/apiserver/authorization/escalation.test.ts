import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultClusterRoleBindings, defaultClusterRoles } from "./default-roles.ts";
import { EscalationError, checkRbacWrite, compactString, coveredBy } from "./escalation.ts";
import { authorizerOf, clusterRole, clusterRoleBinding, person, role, roleBinding, user } from "./testing.ts";
import type { PolicyRule, RbacObject } from "./types.ts";

const dana = person("dana");
/** dana is admin of team-a, as a platform team would make her. */
const objects = (): RbacObject[] => [...defaultClusterRoles(), ...defaultClusterRoleBindings(), roleBinding("team-a", "dana-admin", { kind: "ClusterRole", name: "admin" }, [user("dana")])];

function refusal(run: () => void): string {
  try {
    run();
  } catch (error) {
    if (error instanceof EscalationError) {
      assert.equal(error.code, 403);
      return error.message;
    }
    throw error;
  }
  assert.fail("the write was allowed");
}

describe("checkRbacWrite", () => {
  const rbac = authorizerOf(objects());

  it("lets a namespace admin write a Role within what she holds", () => {
    checkRbacWrite(rbac, { identity: dana, object: role("team-a", "pod-reader", [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] }]) });
  });

  it("refuses a Role granting what she does not hold, naming it as Kubernetes does", () => {
    assert.equal(
      refusal(() => checkRbacWrite(rbac, { identity: dana, object: role("team-a", "quota-editor", [{ verbs: ["update", "patch"], apiGroups: [""], resources: ["resourcequotas", "pods"] }]) })),
      'roles.rbac.authorization.k8s.io "quota-editor" is forbidden: user "dana" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["resourcequotas"], Verbs:["update" "patch"]}',
    );
  });

  it("refuses the same Role in a namespace where she is not admin", () => {
    assert.match(refusal(() => checkRbacWrite(rbac, { identity: dana, object: role("team-b", "pod-reader", [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }]) })), /not currently held/);
  });

  it("lets her bind edit and view in her namespace, not cluster-admin", () => {
    checkRbacWrite(rbac, { identity: dana, object: roleBinding("team-a", "bob-edit", { kind: "ClusterRole", name: "edit" }, [user("bob")]) });
    checkRbacWrite(rbac, { identity: dana, object: roleBinding("team-a", "bob-view", { kind: "ClusterRole", name: "view" }, [user("bob")]) });
    assert.equal(
      refusal(() => checkRbacWrite(rbac, { identity: dana, object: roleBinding("team-a", "bob-root", { kind: "ClusterRole", name: "cluster-admin" }, [user("bob")]) })),
      'rolebindings.rbac.authorization.k8s.io "bob-root" is forbidden: user "dana" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}',
    );
  });

  it("refuses a binding to a role that does not exist", () => {
    assert.equal(
      refusal(() => checkRbacWrite(rbac, { identity: dana, object: roleBinding("team-a", "b", { kind: "Role", name: "gone" }, [user("bob")]) })),
      'rolebindings.rbac.authorization.k8s.io "b" is forbidden: role.rbac.authorization.k8s.io "gone" not found',
    );
  });

  it("allows what the author may bind or escalate explicitly", () => {
    const delegated = authorizerOf([
      ...objects(),
      clusterRole("bind-admin", [{ verbs: ["bind"], apiGroups: ["rbac.authorization.k8s.io"], resources: ["clusterroles"], resourceNames: ["cluster-admin"] }]),
      clusterRole("escalate-roles", [{ verbs: ["escalate"], apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"] }]),
      clusterRole("quota-writer", [{ verbs: ["update"], apiGroups: [""], resources: ["resourcequotas"] }]),
      roleBinding("team-a", "delegate", { kind: "ClusterRole", name: "bind-admin" }, [user("dana")]),
      roleBinding("team-a", "escalate", { kind: "ClusterRole", name: "escalate-roles" }, [user("dana")]),
    ]);
    checkRbacWrite(delegated, { identity: dana, object: roleBinding("team-a", "bob-root", { kind: "ClusterRole", name: "cluster-admin" }, [user("bob")]) });
    checkRbacWrite(delegated, { identity: dana, object: role("team-a", "anything", [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }]) });
    assert.match(
      refusal(() => checkRbacWrite(delegated, { identity: dana, object: roleBinding("team-a", "bob-quota", { kind: "ClusterRole", name: "quota-writer" }, [user("bob")]) })),
      /Resources:\["resourcequotas"\], Verbs:\["update"\]/,
    );
  });

  it("lets system:masters write anything", () => {
    checkRbacWrite(rbac, { identity: person("root", "system:masters"), object: clusterRoleBinding("all", "cluster-admin", [user("bob")]) });
  });

  it("checks no rules when an update only changes owners or finalizers, and all of them otherwise", () => {
    const big = role("team-a", "big", [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }]);
    const finalized: RbacObject = { ...big, metadata: { ...big.metadata, finalizers: ["x"] } as RbacObject["metadata"] };
    checkRbacWrite(rbac, { identity: dana, object: finalized, oldObject: big });
    const relabelled: RbacObject = { ...big, metadata: { ...big.metadata, labels: { a: "b" } } as RbacObject["metadata"] };
    assert.match(refusal(() => checkRbacWrite(rbac, { identity: dana, object: relabelled, oldObject: big })), /not currently held/);
  });
});

describe("coveredBy", () => {
  const cases: [string, PolicyRule[], PolicyRule, boolean][] = [
    ["the same rule", [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }], { verbs: ["get"], apiGroups: [""], resources: ["pods"] }, true],
    ["fewer verbs", [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] }], { verbs: ["list"], apiGroups: [""], resources: ["pods"] }, true],
    ["a verb more", [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }], { verbs: ["get", "delete"], apiGroups: [""], resources: ["pods"] }, false],
    ["a subresource through */subresource", [{ verbs: ["get"], apiGroups: ["*"], resources: ["*/status"] }], { verbs: ["get"], apiGroups: [""], resources: ["pods/status"] }, true],
    ["a subresource through its resource (it is not)", [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }], { verbs: ["get"], apiGroups: [""], resources: ["pods/log"] }, false],
    ["named objects under an unnamed rule", [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"] }], { verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["a"] }, true],
    ["an unnamed rule under a named one", [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["a"] }], { verbs: ["get"], apiGroups: [""], resources: ["secrets"] }, false],
    ["a path under a prefix", [{ verbs: ["get"], nonResourceURLs: ["/apis/*"] }], { verbs: ["get"], nonResourceURLs: ["/apis/slipway.dev"] }, true],
    ["a prefix under a longer prefix", [{ verbs: ["get"], nonResourceURLs: ["/apis/slipway.dev/*"] }], { verbs: ["get"], nonResourceURLs: ["/apis/*"] }, false],
  ];
  for (const [name, owner, wanted, covered] of cases) {
    it(`${covered ? "covers" : "does not cover"} ${name}`, () => assert.equal(coveredBy(owner, [wanted]).covered, covered));
  }

  it("lists what is missing rule by rule", () => {
    assert.deepEqual(coveredBy([{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }], [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods", "secrets"] }]).missing.map(compactString), [
      '{APIGroups:[""], Resources:["pods"], Verbs:["list"]}',
      '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}',
      '{APIGroups:[""], Resources:["secrets"], Verbs:["list"]}',
    ]);
  });
});
