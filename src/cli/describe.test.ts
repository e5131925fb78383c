import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ClusterObject, InfrastructureObject, MachineObject, MachinePoolObject } from "../api/kinds.ts";
import type { ClusterFamily } from "./clusters.ts";
import { describeCluster } from "./describe.ts";

const NOW = Date.parse("2026-01-01T00:10:00Z");
const T = "2026-01-01T00:00:00Z";
const API = "slipway.dev/v1alpha1";
const ready = (status: "True" | "False", reason: string, message = "", lastTransitionTime = "2026-01-01T00:09:15Z") => ({ type: "Ready", status, reason, message, lastTransitionTime });
const meta = (name: string, labels: Record<string, string> = {}) => ({ name, namespace: "default", creationTimestamp: T, labels: { "slipway.dev/cluster": "tree", ...labels } });
const machine = (name: string, role: "control-plane" | "worker", status: MachineObject["status"], pool?: string): MachineObject =>
  ({ apiVersion: API, kind: "Machine", metadata: meta(name, pool ? { "slipway.dev/pool": "east" } : {}), spec: { clusterName: "tree", role, connection: "east", machineType: "s1.large", ...(pool ? { pool } : {}) }, status }) as MachineObject;

function family(): ClusterFamily {
  const cluster = {
    apiVersion: API,
    kind: "Cluster",
    metadata: { name: "tree", namespace: "default", creationTimestamp: T },
    spec: { kubernetesVersion: "v1.31.2", controlPlane: { connection: "east", machineType: "s1.medium" }, workers: [{ name: "east", connection: "east", machineType: "s1.large", replicas: 2 }] },
    status: {
      phase: "Provisioning",
      conditions: [
        { type: "Validated", status: "True", reason: "Validated", message: "checked", lastTransitionTime: "2026-01-01T00:00:01Z" },
        { type: "ControlPlaneReady", status: "True", reason: "Ready", message: "1/1 control-plane nodes Ready", lastTransitionTime: "2026-01-01T00:07:00Z" },
        { type: "WorkersReady", status: "False", reason: "Scaling", message: "1/2 worker nodes Ready", lastTransitionTime: "2026-01-01T00:08:00Z" },
        ready("False", "NotReady", "waiting for 1 worker(s)"),
      ],
    },
  } as ClusterObject;
  const infra = { apiVersion: API, kind: "Infrastructure", metadata: meta("tree-east"), spec: { clusterName: "tree", connection: "east", region: "sim-east-1", nodeCIDR: "10.0.0.0/16" }, status: { phase: "Ready", ready: true, conditions: [ready("True", "AllTrue")] } } as InfrastructureObject;
  const pool = { apiVersion: API, kind: "MachinePool", metadata: meta("tree-east", { "slipway.dev/pool": "east" }), spec: { clusterName: "tree", connection: "east", machineType: "s1.large", replicas: 2 }, status: { phase: "ScalingUp", readyReplicas: 1 } } as MachinePoolObject;
  return {
    cluster,
    infrastructures: [infra],
    pools: [pool],
    machines: [
      machine("tree-cp-0", "control-plane", { phase: "Running", nodeReady: true, nodeName: "tree-cp-0", conditions: [ready("True", "NodeReady", "node tree-cp-0 is Ready")] }),
      machine("tree-east-0", "worker", { phase: "Running", nodeReady: true, nodeName: "tree-east-0" }, "tree-east"),
      machine("tree-east-1", "worker", { phase: "Failed", failureReason: "BootFailed", failureMessage: "the instance did not boot within 5m" }, "tree-east"),
    ],
  };
}

describe("describeCluster", () => {
  it("draws the cluster's objects as a tree with READY, REASON, SINCE and MESSAGE", () => {
    const lines = describeCluster(family(), NOW).split("\n");
    assert.deepEqual(lines.slice(0, 9), [
      "NAME                         READY   REASON       SINCE   MESSAGE",
      "Cluster/tree                 False   NotReady     45s     waiting for 1 worker(s)",
      "├─Infrastructure/tree-east   True    AllTrue      45s",
      "├─ControlPlane               True    Ready        3m      1/1 control-plane nodes Ready",
      "│ └─Machine/tree-cp-0        True    NodeReady    45s     node tree-cp-0 is Ready",
      "└─Workers                    False   Scaling      2m      1/2 worker nodes Ready",
      "  └─MachinePool/tree-east    False   ScalingUp    10m     1/2 machines ready",
      "    ├─Machine/tree-east-0    True    Running      10m     node tree-east-0",
      "    └─Machine/tree-east-1    False   BootFailed   10m     the instance did not boot within 5m",
    ]);
  });

  it("then sums up the phase and lists the cluster's conditions", () => {
    const text = describeCluster(family(), NOW);
    assert.match(text, /\nPhase:\s+Provisioning\nVersion:\s+v1\.31\.2\n/);
    assert.match(text, /\nConditions:\n {2}TYPE\s+STATUS\s+REASON\s+SINCE\s+MESSAGE\n {2}Validated\s+True\s+Validated\s+9m59s\s+checked\n/);
    assert.match(text, /\n {2}WorkersReady\s+False\s+Scaling\s+2m\s+1\/2 worker nodes Ready\n/);
  });
});
