import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ruleAllows } from "./rules.ts";
import type { PolicyRule, RequestAttributes, ResourceAttributes } from "./types.ts";

const identity = { user: "alice", groups: ["system:authenticated"] };
const asks = (verb: string, resource: ResourceAttributes): RequestAttributes => ({ identity, verb, resource });
const pods = (extra: Partial<ResourceAttributes> = {}): ResourceAttributes => ({ group: "", resource: "pods", namespace: "team-a", ...extra });
const asksPath = (verb: string, path: string): RequestAttributes => ({ identity, verb, path });

interface Case {
  name: string;
  rule: PolicyRule;
  request: RequestAttributes;
  allowed: boolean;
}

const cases: Case[] = [
  // verbs
  { name: "a listed verb", rule: { verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] }, request: asks("list", pods()), allowed: true },
  { name: "a verb not listed", rule: { verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] }, request: asks("delete", pods({ name: "web" })), allowed: false },
  { name: "verb *", rule: { verbs: ["*"], apiGroups: [""], resources: ["pods"] }, request: asks("deletecollection", pods()), allowed: true },
  { name: "no verb prefix matching", rule: { verbs: ["get"], apiGroups: [""], resources: ["pods"] }, request: asks("g", pods()), allowed: false },
  // API groups
  { name: '"" is the core group only', rule: { verbs: ["get"], apiGroups: [""], resources: ["deployments"] }, request: asks("get", { group: "apps", resource: "deployments", name: "d" }), allowed: false },
  { name: "apiGroups * covers every group", rule: { verbs: ["get"], apiGroups: ["*"], resources: ["clusters"] }, request: asks("get", { group: "slipway.dev", resource: "clusters", name: "c" }), allowed: true },
  { name: "apiGroups * covers the core group", rule: { verbs: ["get"], apiGroups: ["*"], resources: ["pods"] }, request: asks("get", pods({ name: "p" })), allowed: true },
  { name: "no apiGroups matches nothing", rule: { verbs: ["get"], resources: ["pods"] }, request: asks("get", pods({ name: "p" })), allowed: false },
  { name: "another group's same plural", rule: { verbs: ["get"], apiGroups: ["coordination.k8s.io"], resources: ["leases"] }, request: asks("get", { group: "slipway.dev", resource: "leases", name: "l" }), allowed: false },
  // resources and subresources
  { name: "resources * covers subresources too", rule: { verbs: ["get"], apiGroups: [""], resources: ["*"] }, request: asks("get", pods({ name: "p", subresource: "log" })), allowed: true },
  { name: "a resource does not cover its subresource", rule: { verbs: ["*"], apiGroups: ["slipway.dev"], resources: ["clusters"] }, request: asks("update", { group: "slipway.dev", resource: "clusters", subresource: "status", name: "c", namespace: "team-a" }), allowed: false },
  { name: "a subresource needs its own rule", rule: { verbs: ["update"], apiGroups: ["slipway.dev"], resources: ["clusters/status"] }, request: asks("update", { group: "slipway.dev", resource: "clusters", subresource: "status", name: "c", namespace: "team-a" }), allowed: true },
  { name: "a subresource rule does not cover the resource", rule: { verbs: ["update"], apiGroups: ["slipway.dev"], resources: ["clusters/status"] }, request: asks("update", { group: "slipway.dev", resource: "clusters", name: "c", namespace: "team-a" }), allowed: false },
  { name: "*/subresource covers that subresource of any resource", rule: { verbs: ["get"], apiGroups: ["*"], resources: ["*/status"] }, request: asks("get", { group: "apps", resource: "deployments", subresource: "status", name: "d" }), allowed: true },
  { name: "*/subresource does not cover another subresource", rule: { verbs: ["get"], apiGroups: ["*"], resources: ["*/status"] }, request: asks("get", pods({ name: "p", subresource: "log" })), allowed: false },
  { name: "*/subresource does not cover the resource itself", rule: { verbs: ["get"], apiGroups: ["*"], resources: ["*/status"] }, request: asks("get", pods({ name: "p" })), allowed: false },
  { name: "*/subresource matches the whole subresource name", rule: { verbs: ["get"], apiGroups: ["*"], resources: ["*/atus"] }, request: asks("get", pods({ name: "p", subresource: "status" })), allowed: false },
  // resourceNames
  { name: "resourceNames grant the named object", rule: { verbs: ["get", "update"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["settings"] }, request: asks("update", { group: "", resource: "configmaps", name: "settings", namespace: "team-a" }), allowed: true },
  { name: "resourceNames do not grant another object", rule: { verbs: ["get"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["settings"] }, request: asks("get", { group: "", resource: "configmaps", name: "other", namespace: "team-a" }), allowed: false },
  { name: "resourceNames do not grant list", rule: { verbs: ["list"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["settings"] }, request: asks("list", { group: "", resource: "configmaps", namespace: "team-a" }), allowed: false },
  { name: "resourceNames do not grant watch", rule: { verbs: ["watch"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["settings"] }, request: asks("watch", { group: "", resource: "configmaps", namespace: "team-a" }), allowed: false },
  { name: "resourceNames do not grant create", rule: { verbs: ["create"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["settings"] }, request: asks("create", { group: "", resource: "configmaps", namespace: "team-a" }), allowed: false },
  { name: "resourceNames do not grant deletecollection", rule: { verbs: ["deletecollection"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["settings"] }, request: asks("deletecollection", { group: "", resource: "configmaps", namespace: "team-a" }), allowed: false },
  { name: "resourceNames grant a list narrowed to that name (metadata.name field selector)", rule: { verbs: ["list"], apiGroups: [""], resources: ["configmaps"], resourceNames: ["settings"] }, request: asks("list", { group: "", resource: "configmaps", name: "settings", namespace: "team-a" }), allowed: true },
  { name: "resourceNames apply to subresources by the object's name", rule: { verbs: ["get"], apiGroups: [""], resources: ["pods/log"], resourceNames: ["web"] }, request: asks("get", pods({ name: "web", subresource: "log" })), allowed: true },
  // a rule for resources says nothing about paths, and the other way round
  { name: "a resource rule grants no path", rule: { verbs: ["*"], apiGroups: ["*"], resources: ["*"] }, request: asksPath("get", "/healthz"), allowed: false },
  { name: "a path rule grants no resource", rule: { verbs: ["*"], nonResourceURLs: ["*"] }, request: asks("get", pods({ name: "p" })), allowed: false },
  // nonResourceURLs
  { name: "an exact path", rule: { verbs: ["get"], nonResourceURLs: ["/healthz"] }, request: asksPath("get", "/healthz"), allowed: true },
  { name: "an exact path is not a prefix", rule: { verbs: ["get"], nonResourceURLs: ["/healthz"] }, request: asksPath("get", "/healthz/etcd"), allowed: false },
  { name: "a trailing * matches by prefix", rule: { verbs: ["get"], nonResourceURLs: ["/apis/*"] }, request: asksPath("get", "/apis/slipway.dev/v1alpha1"), allowed: true },
  { name: "a trailing * matches the bare prefix", rule: { verbs: ["get"], nonResourceURLs: ["/apis/*"] }, request: asksPath("get", "/apis/"), allowed: true },
  { name: "a trailing * needs the whole prefix", rule: { verbs: ["get"], nonResourceURLs: ["/apis/*"] }, request: asksPath("get", "/apis"), allowed: false },
  { name: "a prefix without a slash", rule: { verbs: ["get"], nonResourceURLs: ["/health*"] }, request: asksPath("get", "/healthz"), allowed: true },
  { name: "* matches every path", rule: { verbs: ["get"], nonResourceURLs: ["*"] }, request: asksPath("get", "/metrics"), allowed: true },
  { name: "a * inside a path is literal", rule: { verbs: ["get"], nonResourceURLs: ["/api/*/x"] }, request: asksPath("get", "/api/v1/x"), allowed: false },
  { name: "path rules check the verb", rule: { verbs: ["get"], nonResourceURLs: ["/healthz"] }, request: asksPath("post", "/healthz"), allowed: false },
];

describe("ruleAllows", () => {
  for (const c of cases) {
    it(`${c.allowed ? "allows" : "refuses"}: ${c.name}`, () => {
      assert.equal(ruleAllows(c.request, c.rule), c.allowed);
    });
  }
});
