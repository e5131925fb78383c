// An emulated workload cluster enforces what is stored in it: users of client certificates are
// authorised by the cluster's RBAC objects, and a ResourceQuota refuses creates past its limits — seen
// through the real kubectl, as a team member would meet them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import type { KubeObject } from "../../api/meta.ts";
import { createCertificateRequest, issueCertificate, verifyIssuedBy } from "../../bootstrap/pki.ts";
import { waitFor } from "../test-support.ts";
import type { LoadBalancer } from "../types.ts";
import { bootLogMatching, clusterPki, controlPlaneLoadBalancer, emulatedCloud, initData, kubectl, launchControlPlane, writeKubeconfig, type EmulatedCloud } from "./test-support.ts";

let env: EmulatedCloud & { lb: LoadBalancer; pki: Awaited<ReturnType<typeof clusterPki>> };
let admin: string;
let alice: string;
let bob: string;

/** A kubeconfig of its own for a user (no certificate given: the cluster's admin). */
async function userKubeconfig(lb: LoadBalancer, ca: Parameters<typeof writeKubeconfig>[2], name: string): Promise<string> {
  const cert = name === "admin" ? undefined : await issueCertificate(ca, { commonName: name, organizations: ["team-a"], usages: ["client"] });
  const renamed = join(env.dir, `${name}.kubeconfig`);
  writeFileSync(renamed, readFileSync(await writeKubeconfig(env.dir, lb, ca, cert)));
  return renamed;
}

async function apply(kubeconfig: string, objects: KubeObject[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = join(env.dir, `manifest-${objects.map((o) => o.metadata.name).join("-")}.yaml`);
  writeFileSync(file, objects.map((o) => stringify(o)).join("---\n"));
  return kubectl(kubeconfig, ["apply", "-f", file]);
}

function pod(name: string, namespace = "team"): KubeObject {
  return { apiVersion: "v1", kind: "Pod", metadata: { name, namespace }, spec: { containers: [{ name: "app", image: "nginx:1.27" }] } };
}

before(async () => {
  const cloud = await emulatedCloud(31);
  const lb = await controlPlaneLoadBalancer(cloud.cloud, cloud.net, "access");
  const pki = await clusterPki();
  env = { ...cloud, lb, pki };
  const cp = await launchControlPlane(env.cloud, env.net, lb, initData(lb, pki, "access-cp-0"));
  await bootLogMatching(env.cloud, cp.id, /initialized successfully/);
  admin = await userKubeconfig(lb, pki.ca, "admin");
  alice = await userKubeconfig(lb, pki.ca, "alice");
  bob = await userKubeconfig(lb, pki.ca, "bob");
  const binding = (user: string, role: string): KubeObject => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: `${user}-${role}`, namespace: "team" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: user }],
  });
  const applied = await apply(admin, [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "team" } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "other" } },
    { apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "team-quota", namespace: "team" }, spec: { hard: { pods: "2", "count/configmaps": "5" } } },
    binding("alice", "edit"),
    binding("bob", "view"),
  ]);
  assert.equal(applied.code, 0, applied.stderr);
});

after(() => env.close());

describe("a workload cluster's RBAC", () => {
  it("lets a user do what a role bound to them allows, in the binding's namespace only", async () => {
    const created = await apply(alice, [pod("web-0")]);
    assert.equal(created.code, 0, created.stderr);
    const listed = await kubectl(bob, ["get", "pods", "-n", "team", "-o", "name"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /pod\/web-0/);
  });

  it("refuses anything else with kube-apiserver's Forbidden message", async () => {
    const bobCreates = await apply(bob, [pod("bob-0")]);
    assert.notEqual(bobCreates.code, 0);
    assert.match(bobCreates.stderr, /pods is forbidden: User "bob" cannot create resource "pods" in API group "" in the namespace "team"/);
    const otherNamespace = await kubectl(alice, ["get", "pods", "-n", "other"]);
    assert.notEqual(otherNamespace.code, 0);
    assert.match(otherNamespace.stderr, /User "alice" cannot list resource "pods" in API group "" in the namespace "other"/);
    const clusterScoped = await kubectl(alice, ["get", "nodes"]);
    assert.notEqual(clusterScoped.code, 0);
    assert.match(clusterScoped.stderr, /User "alice" cannot list resource "nodes" in API group "" at the cluster scope/);
    const secretsForBob = await kubectl(bob, ["get", "secrets", "-n", "team"]);
    assert.notEqual(secretsForBob.code, 0);
  });

  it("answers kubectl auth whoami and can-i from the cluster's own RBAC", async () => {
    const whoami = await kubectl(bob, ["auth", "whoami"]);
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.match(whoami.stdout, /Username\s+bob/);
    assert.match(whoami.stdout, /Groups\s+\[team-a system:authenticated\]/);
    const get = await kubectl(bob, ["auth", "can-i", "get", "pods", "-n", "team"]);
    assert.deepEqual([get.code, get.stdout.trim()], [0, "yes"]);
    const secrets = await kubectl(bob, ["auth", "can-i", "get", "secrets", "-n", "kube-system"]);
    assert.deepEqual([secrets.code, secrets.stdout.trim()], [1, "no"]);
  });

  it("refuses a binding that grants more than its author holds", async () => {
    const escalated = await apply(alice, [
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "alice-admin", namespace: "team" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
        subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice" }],
      },
    ]);
    assert.notEqual(escalated.code, 0);
    assert.match(escalated.stderr, /forbidden/);
  });

  it("takes a binding's removal into account at once", async () => {
    const removed = await kubectl(admin, ["delete", "rolebinding", "bob-view", "-n", "team"]);
    assert.equal(removed.code, 0, removed.stderr);
    const listed = await kubectl(bob, ["get", "pods", "-n", "team"]);
    assert.notEqual(listed.code, 0);
    assert.match(listed.stderr, /User "bob" cannot list resource "pods"/);
  });
});

describe("a workload cluster's certificate signing requests", () => {
  it("issues a client certificate signed by the cluster CA once an admin approves the request, as kubectl certificate approve does", async () => {
    const { csrPem, keyPem } = await createCertificateRequest({ commonName: "carol", organizations: ["team-a"] });
    const created = await apply(admin, [
      {
        apiVersion: "certificates.k8s.io/v1",
        kind: "CertificateSigningRequest",
        metadata: { name: "carol" },
        spec: { request: Buffer.from(csrPem).toString("base64"), signerName: "kubernetes.io/kube-apiserver-client", usages: ["client auth"], expirationSeconds: 3600 },
      },
    ]);
    assert.equal(created.code, 0, created.stderr);
    const pending = await kubectl(admin, ["get", "csr", "carol", "--no-headers"]);
    assert.match(pending.stdout, /kubernetes\.io\/kube-apiserver-client\s+kubernetes-admin\s+Pending/);
    const approved = await kubectl(admin, ["certificate", "approve", "carol"]);
    assert.equal(approved.code, 0, approved.stderr);
    const issued = await waitFor(async () => {
      const out = await kubectl(admin, ["get", "csr", "carol", "-o", "jsonpath={.status.certificate}"]);
      return out.stdout ? out.stdout : undefined;
    }, "the certificate issued", 10_000);
    const certPem = Buffer.from(issued, "base64").toString("utf8");
    assert.equal(await verifyIssuedBy(certPem, env.pki.ca.certPem), true);
    const carol = join(env.dir, "carol.kubeconfig");
    writeFileSync(carol, readFileSync(await writeKubeconfig(env.dir, env.lb, env.pki.ca, { certPem, keyPem })));
    const who = await kubectl(carol, ["get", "pods", "-n", "team"]);
    assert.notEqual(who.code, 0);
    assert.match(who.stderr, /User "carol" cannot list resource "pods"/, "carol is authenticated by the issued certificate, and has no binding");
    const denied = await kubectl(bob, ["certificate", "approve", "carol"]);
    assert.notEqual(denied.code, 0, "approving takes a permission bob does not hold");
  });
});

describe("a workload cluster's ResourceQuota", () => {
  it("counts what the namespace holds and refuses a create past the limit, naming the quota", async () => {
    const second = await apply(alice, [pod("web-1")]);
    assert.equal(second.code, 0, second.stderr);
    const third = await apply(alice, [pod("web-2")]);
    assert.notEqual(third.code, 0);
    assert.match(third.stderr, /pods "web-2" is forbidden: exceeded quota: team-quota, requested: pods=1, used: pods=2, limited: pods=2/);
    const quota = await kubectl(admin, ["get", "resourcequota", "team-quota", "-n", "team", "-o", "jsonpath={.status.used.pods}"]);
    assert.equal(quota.stdout, "2");
  });

  it("gives back what a delete releases", async () => {
    const deleted = await kubectl(alice, ["delete", "pod", "web-0", "-n", "team", "--wait=false"]);
    assert.equal(deleted.code, 0, deleted.stderr);
    await waitFor(async () => {
      const out = await apply(alice, [pod("web-2")]);
      return out.code === 0 ? true : undefined;
    }, "a pod admitted once another was deleted", 10_000);
    const third = await apply(alice, [pod("web-3")]);
    assert.notEqual(third.code, 0);
    assert.match(third.stderr, /exceeded quota: team-quota/);
  });
});
