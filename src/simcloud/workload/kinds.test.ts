import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { admit, cell } from "../../api/testing.ts";
import { ObjectService } from "../../apiserver/objects.ts";
import { CNI_NAMES, renderCniManifest } from "../../bootstrap/cni.ts";
import { SqliteStore } from "../../store/sqlite.ts";
import { nodeKind, podKind, workloadRegistry, type NodeObject, type PodObject } from "./kinds.ts";
import { roleBindingKind } from "../../api/rbac.ts";
import { daemonSetKind } from "./kinds-apps.ts";
import { nodeConditions } from "./manifests.ts";

const at = "2025-01-01T00:00:00Z";

function node(labels: Record<string, string>, ready: "ready" | "network-not-ready" | "unknown", unschedulable = false): NodeObject {
  return { apiVersion: "v1", kind: "Node", metadata: { name: "n", labels }, spec: { unschedulable }, status: { conditions: nodeConditions(ready, at) } };
}

describe("workload kinds", () => {
  it("print nodes as kubectl does: STATUS, ROLES and VERSION", () => {
    const cp = node({ "node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/etcd": "" }, "ready");
    assert.equal(cell(nodeKind, "STATUS", cp), "Ready");
    assert.equal(cell(nodeKind, "ROLES", cp), "control-plane,etcd");
    assert.equal(cell(nodeKind, "STATUS", node({}, "network-not-ready")), "NotReady");
    assert.equal(cell(nodeKind, "STATUS", node({}, "unknown", true)), "NotReady,SchedulingDisabled");
    assert.equal(cell(nodeKind, "ROLES", node({ "kubernetes.io/os": "linux" }, "ready")), "<none>");
  });

  it("print pods with ready containers, the phase (or why not) and restarts", () => {
    const pod: PodObject = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "default" },
      spec: { containers: [{ name: "a" }, { name: "b" }] },
      status: {
        phase: "Pending",
        containerStatuses: [
          { name: "a", ready: true, restartCount: 2, image: "x" },
          { name: "b", ready: false, restartCount: 1, image: "y", state: { waiting: { reason: "ContainerCreating" } } },
        ],
      },
    };
    assert.equal(cell(podKind, "READY", pod), "1/2");
    assert.equal(cell(podKind, "STATUS", pod), "ContainerCreating");
    assert.equal(cell(podKind, "RESTARTS", pod), 3);
    assert.equal(cell(podKind, "STATUS", { ...pod, metadata: { ...pod.metadata, deletionTimestamp: at } }), "Terminating");
  });

  it("check a pod's spec against the PodSpec shape, keeping its deep free-form parts, and type its status", () => {
    const spec = { containers: [{ name: "c", image: "nginx", resources: { requests: { cpu: "100m", memory: 64 } } }], affinity: { nodeAffinity: {} } };
    assert.deepEqual(admit(podKind, { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec }).schemaErrors, []);
    const bad = admit(podKind, { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec, status: { phase: "Sleeping" } });
    assert.equal(bad.schemaErrors[0]?.[0], "/status/phase");
    const unknown = admit(podKind, { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec: { ...spec, restartPolicy: "Always", hostNetwork: true, nonsense: 1 } });
    assert.deepEqual(unknown.schemaErrors.map((e) => e[0]), ["/spec/nonsense"]);
    const noImage = admit(podKind, { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec: { containers: [{ name: "c" }] } });
    assert.deepEqual(noImage.errors.map((e) => [e.field, e.message]), [["spec.containers[0].image", "Required value"]]);
  });

  it("refuse a DaemonSet whose spec is not a DaemonSetSpec, or whose template its selector does not match", () => {
    const ds = (spec: unknown) => ({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "d", namespace: "kube-system" }, spec });
    assert.deepEqual(admit(daemonSetKind, ds({ nonsense: true })).schemaErrors.map((e) => e[0]).sort(), ["/spec/nonsense", "/spec/selector", "/spec/template"]);
    const template = { metadata: { labels: { app: "b" } }, spec: { containers: [{ name: "c", image: "x" }] } };
    const mismatch = admit(daemonSetKind, ds({ selector: { matchLabels: { app: "a" } }, template }));
    assert.deepEqual(mismatch.errors.map((e) => e.field), ["spec.template.metadata.labels"]);
  });

  it("never let a binding change its role", () => {
    const binding = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "b", namespace: "team" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "view" } };
    const changed = { ...binding, roleRef: { ...binding.roleRef, name: "admin" } };
    assert.equal(admit(roleBindingKind, changed, binding).errors[0]?.field, "roleRef");
  });

  it("admit every CNI manifest strictly, as kubectl apply sends it", async () => {
    const store = SqliteStore.open(":memory:");
    const objects = new ObjectService(workloadRegistry(), store);
    const registry = objects.registry;
    try {
      await objects.create(registry.byKind("v1", "Namespace")!, undefined, { metadata: { name: "kube-system" } });
      for (const cni of CNI_NAMES) {
        for (const object of renderCniManifest(cni, { podCIDR: "10.244.0.0/16" })) {
          const def = registry.byKind(object.apiVersion, object.kind);
          assert.ok(def, `${object.kind} is served`);
          const result = await objects.create(def, object.metadata.namespace, object, { fieldValidation: "Strict" });
          assert.deepEqual(result.warnings, []);
        }
      }
    } finally {
      await store.close();
    }
  });
});
