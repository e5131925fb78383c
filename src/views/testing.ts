// Objects for the views' tests (and the CLI's, which draw the views): a cluster being made, with its
// infrastructure, control plane, and a worker pool with one machine Ready and one failed; clusters
// with a journal of steps.
import type { ClusterObject, ClusterStep, InfrastructureObject, MachineObject, MachinePoolObject } from "../api/kinds.ts";
import type { ClusterFamily } from "./describe.ts";

export const NOW = Date.parse("2026-01-01T00:10:00Z");
const T = "2026-01-01T00:00:00Z";
const API = "slipway.dev/v1alpha1";
const ready = (status: "True" | "False", reason: string, message = "", lastTransitionTime = "2026-01-01T00:09:15Z") => ({ type: "Ready", status, reason, message, lastTransitionTime });
const meta = (name: string, labels: Record<string, string> = {}) => ({ name, namespace: "default", creationTimestamp: T, labels: { "slipway.dev/cluster": "tree", ...labels } });
const machine = (name: string, role: "control-plane" | "worker", status: MachineObject["status"], pool?: string): MachineObject =>
  ({ apiVersion: API, kind: "Machine", metadata: meta(name, pool ? { "slipway.dev/pool": "east" } : {}), spec: { clusterName: "tree", role, connection: "east", machineType: "s1.large", ...(pool ? { pool } : {}) }, status }) as MachineObject;

export function family(): ClusterFamily {
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

/** The journal's clock for timeline tests: `at(s)` is s seconds after T0, in whole-second RFC 3339. */
export const T0 = Date.parse("2026-01-01T00:00:00Z");
export const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");

/** A journal step from `start` to `end` seconds (running without an end). */
export const step = (name: string, start: number, end?: number, outcome: ClusterStep["outcome"] = end === undefined ? "Running" : "Succeeded"): ClusterStep => ({
  name,
  startedAt: at(start),
  ...(end === undefined ? {} : { finishedAt: at(end) }),
  outcome,
});

/** A cluster created at T0 whose journal holds these steps. */
export function journalled(steps: ClusterStep[], phase = "Provisioning"): ClusterObject {
  return {
    apiVersion: "slipway.dev/v1alpha1",
    kind: "Cluster",
    metadata: { name: "q", creationTimestamp: at(0) },
    spec: { controlPlane: { connection: "east", machineType: "s1.medium" } },
    status: { phase: phase as "Provisioning", steps },
  } as ClusterObject;
}
