import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CNI_DAEMONSETS, CNI_NAMES, CniManifestError, renderCniManifest } from "./cni.ts";
import { networkPluginOf } from "../simcloud/workload/network-plugins.ts";

describe("CNI manifests", () => {
  it("install each plugin with its upstream DaemonSet name, its permissions and the cluster's pod range", () => {
    for (const cni of CNI_NAMES) {
      const objects = renderCniManifest(cni, { podCIDR: "10.42.0.0/16" });
      const kinds = objects.map((o) => o.kind);
      for (const kind of ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet"]) assert.ok(kinds.includes(kind), `${cni} has a ${kind}`);
      assert.equal(kinds.at(-1), "DaemonSet", `${cni}: the DaemonSet comes last, after what it uses`);
      const ds = objects.find((o) => o.kind === "DaemonSet")!;
      assert.deepEqual({ namespace: ds.metadata.namespace, name: ds.metadata.name }, CNI_DAEMONSETS[cni]);
      assert.equal(networkPluginOf(ds.metadata.namespace, ds.metadata.name)?.name, cni, "a kubelet of the sim cloud knows it as that plugin");
      const config = objects.find((o) => o.kind === "ConfigMap")!;
      assert.ok(JSON.stringify(config.data).includes("10.42.0.0/16"), `${cni} configures the pod range`);
      const namespaces = new Set(objects.filter((o) => o.metadata.namespace).map((o) => o.metadata.namespace));
      const created = objects.filter((o) => o.kind === "Namespace").map((o) => o.metadata.name);
      for (const ns of namespaces) assert.ok(ns === "kube-system" || created.includes(ns), `${cni} creates the namespace ${ns} it uses`);
    }
    assert.equal(renderCniManifest("flannel", { podCIDR: "10.244.0.0/16" })[0]?.kind, "Namespace");
  });

  it("refuses a pod range that is not a CIDR, and an unknown plugin", () => {
    assert.throws(() => renderCniManifest("calico", { podCIDR: "10.244.0.1/16" }), CniManifestError);
    assert.throws(() => renderCniManifest("weave" as never, { podCIDR: "10.244.0.0/16" }), /unknown network plugin "weave"/);
  });
});
