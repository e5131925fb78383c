import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { networkPluginCondition, pluginPodsReady, type DaemonSetView } from "./networkplugin.ts";

function ds(status: DaemonSetView["status"], generation = 2): DaemonSetView {
  return { apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "calico-node", namespace: "kube-system", generation }, ...(status ? { status } : {}) };
}

const all = (n: number, observedGeneration = 2) => ({ desiredNumberScheduled: n, currentNumberScheduled: n, updatedNumberScheduled: n, numberReady: n, numberAvailable: n, observedGeneration });

describe("the network plugin's condition", () => {
  it("is True only when the DaemonSet reports every desired pod scheduled, updated, ready and available at its generation", () => {
    assert.equal(pluginPodsReady(ds(all(3))), true);
    assert.deepEqual(networkPluginCondition("calico", ds(all(3))), {
      type: "NetworkPluginInstalled",
      status: "True",
      reason: "PodsReady",
      message: "calico: 3/3 pods of DaemonSet kube-system/calico-node ready",
    });
    assert.equal(pluginPodsReady(ds(undefined)), false, "applied, not yet observed");
    assert.equal(pluginPodsReady(ds(all(0))), false, "no node runs it");
    assert.equal(pluginPodsReady(ds({ ...all(3), numberReady: 2, numberAvailable: 2 })), false);
    assert.equal(pluginPodsReady(ds({ ...all(3), updatedNumberScheduled: 1 })), false, "a rollout is still going on");
    assert.equal(pluginPodsReady(ds(all(3, 1))), false, "a status of the previous generation says nothing of this one");
  });

  it("says why not, with what a failing pod reports", () => {
    const trouble = "pod calico-node-x on node w-0: calico-node CrashLoopBackOff: the IP pool 10.245.0.0/16 does not contain 10.244.1.0/24";
    assert.deepEqual(networkPluginCondition("calico", ds({ ...all(3), numberReady: 1, numberAvailable: 1 }), trouble), {
      type: "NetworkPluginInstalled",
      status: "False",
      reason: "PodsNotReady",
      message: `calico: 1/3 pods of DaemonSet kube-system/calico-node ready; ${trouble}`,
    });
    assert.equal(networkPluginCondition("calico", ds(all(3, 1))).reason, "RollingOut");
  });
});
