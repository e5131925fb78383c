import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { nodeIsReady, nodeNotReadyMessage, type WorkloadNode } from "./node.ts";
import { nodeAsRead } from "./node-watch.ts";

const at = "2026-01-01T00:00:00Z";
const node = {
  apiVersion: "v1",
  kind: "Node",
  metadata: { name: "w-0", uid: "u-1", resourceVersion: "42", labels: { "kubernetes.io/hostname": "w-0" }, annotations: { "node.alpha.kubernetes.io/ttl": "0" } },
  spec: { providerID: "sim://zone-a/i-1", podCIDR: "10.244.1.0/24", taints: [] },
  status: {
    conditions: [
      { type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory", message: "kubelet has sufficient memory available", lastHeartbeatTime: at, lastTransitionTime: at },
      { type: "Ready", status: "False", reason: "KubeletNotReady", message: "container runtime network not ready: cni plugin not initialized", lastHeartbeatTime: at, lastTransitionTime: at },
    ],
    addresses: [{ type: "InternalIP", address: "10.0.1.5" }],
    capacity: { cpu: "2", memory: "4Gi" },
    nodeInfo: { kubeletVersion: "v1.30.2", containerRuntimeVersion: "containerd://1.7.13", kernelVersion: "6.1.0" },
    images: [{ names: ["registry.k8s.io/kube-proxy:v1.30.2"], sizeBytes: 30_000_000 }],
  },
} as unknown as WorkloadNode;

describe("the node watch", () => {
  it("keeps of each node what a machine reads of it, and nothing else", () => {
    const kept = nodeAsRead(node);
    assert.equal(kept.metadata.name, "w-0");
    assert.equal(kept.metadata.uid, "u-1");
    assert.equal(kept.spec?.providerID, "sim://zone-a/i-1");
    assert.equal(kept.status?.nodeInfo?.kubeletVersion, "v1.30.2");
    assert.equal(nodeIsReady(kept), false);
    assert.equal(nodeNotReadyMessage(kept), nodeNotReadyMessage(node), "the Ready condition's reason and message are kept");
    assert.deepEqual(Object.keys(kept.status!).sort(), ["conditions", "nodeInfo"]);
    assert.ok(JSON.stringify(kept).length < JSON.stringify(node).length / 2, "a fraction of the node is held");
  });

  it("keeps a node that has reported nothing yet as one", () => {
    const bare = nodeAsRead({ apiVersion: "v1", kind: "Node", metadata: { name: "cp-0" } });
    assert.equal(nodeIsReady(bare), false);
    assert.match(nodeNotReadyMessage(bare), /has not reported Ready yet/);
  });
});
