// Worker pools rolled to a new template end to end: a sim cloud in its own process, `slipway up` against
// it, kubectl on the control plane and on the cluster it makes. A change of a pool's machine type
// replaces its instances new ones first, without a worker node less than wanted; a machine type the
// cloud refuses is fixed by editing the spec, and the cluster recovers.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CloudResource, Instance } from "../src/simcloud/types.ts";
import { StopWaiting, eventually, kubectl, kubectlOk, removeDir, startSlipway, type RunningSlipway } from "./support/slipway.ts";
import { SIM_TOKEN, startSimCloud, type RunningSimCloud } from "./support/simcloud.ts";

interface ClusterView {
  metadata: { generation: number };
  status?: { phase?: string; reason?: string; message?: string; observedGeneration?: number; workers?: { ready: number; desired: number; updated?: number } };
}

interface OperationView {
  status?: { phase?: string; error?: { code: string; message: string }; recoveredTime?: string };
}

const REGION = "sim-east-1";
const ZONES = ["sim-east-1a", "sim-east-1b", "sim-east-1c"];

function manifest(name: string, machineType: string, replicas: number): string {
  return [
    `apiVersion: slipway.dev/v1alpha1\nkind: Connection\nmetadata:\n  name: east\nspec:\n  provider: sim\n  region: ${REGION}\n`,
    `apiVersion: slipway.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\nspec:\n  controlPlane:\n    connection: east\n    machineType: s1.medium\n` +
      `  workers:\n    - name: work\n      connection: east\n      machineType: ${machineType}\n      replicas: ${replicas}\n`,
  ].join("---\n");
}

const workerInstances = (resources: CloudResource[]) =>
  resources.filter((r): r is Instance => r.kind === "instance" && r.tags["slipway.dev/role"] === "worker" && !["terminated", "deleted"].includes(r.state));

describe("rolling worker pools", () => {
  let sim: RunningSimCloud;
  let plane: RunningSlipway;
  let kc: string;
  const ok = (...args: string[]) => kubectlOk(kc, args);
  const apply = (text: string) => void kubectlOk(kc, ["apply", "-f", "-"], text);
  const cluster = (name: string) => JSON.parse(ok("get", "cluster", name, "-o", "json")) as ClusterView;
  const operation = (name: string) => JSON.parse(ok("get", "operation", name, "-o", "json")) as OperationView;
  const waitOperation = (name: string, phase: string, timeoutMs = 60_000) =>
    eventually(() => {
      const op = operation(name);
      const now = op.status?.phase;
      if (now && now !== "InProgress" && now !== phase) throw new StopWaiting(`operation ${name} ended ${now}: ${JSON.stringify(op.status)}`);
      return now === phase && op;
    }, { timeoutMs, intervalMs: 250, what: `operation ${name} to be ${phase}` });
  const readyWorkerNodes = (name: string): string[] => {
    const file = join(plane.dataDir, `${name}.kubeconfig`);
    writeFileSync(file, Buffer.from(ok("get", "secret", `${name}-kubeconfig`, "-o", "jsonpath={.data.value}"), "base64"));
    const nodes = kubectl(file, ["get", "nodes", "--no-headers", "-l", "slipway.dev/pool"]);
    assert.equal(nodes.status, 0, nodes.stderr);
    return nodes.stdout.trim().split("\n").filter((line) => /\sReady\s/.test(line)).map((line) => line.split(/\s+/)[0]!);
  };

  before(async () => {
    sim = await startSimCloud({ profile: "instant", seed: 31 });
    plane = await startSlipway({ args: ["--sim-endpoint", sim.url, "--sim-token", SIM_TOKEN, "--poll-interval", "100ms"] });
    kc = plane.kubeconfig;
  });

  after(async () => {
    await plane.stop("SIGTERM");
    await sim.stop();
    removeDir(plane.dataDir);
  });

  it("replaces a pool's instances when its machine type changes, new ones first, never fewer Ready workers than wanted", async () => {
    apply(manifest("roll", "s1.small", 2));
    await waitOperation("roll-create-1", "Succeeded");
    const before = workerInstances(await sim.resourcesOf("default/roll"));
    assert.deepEqual(before.map((i) => i.machineType), ["s1.small", "s1.small"]);
    assert.equal(readyWorkerNodes("roll").length, 2);

    ok("patch", "cluster", "roll", "--type", "merge", "-p", JSON.stringify({ spec: { workers: [{ name: "work", connection: "east", machineType: "s1.medium", replicas: 2 }] } }));
    // Watch the workers while the pool rolls: never fewer than 2 Ready nodes, never more than 3 instances.
    let fewestReady = Number.POSITIVE_INFINITY;
    let mostInstances = 0;
    await eventually(async () => {
      fewestReady = Math.min(fewestReady, readyWorkerNodes("roll").length);
      mostInstances = Math.max(mostInstances, workerInstances(await sim.resourcesOf("default/roll")).length);
      return operation("roll-update-2").status?.phase === "Succeeded";
    }, { timeoutMs: 90_000, intervalMs: 100, what: "the roll to finish" });
    assert.ok(fewestReady >= 2, `at least 2 Ready worker nodes throughout (fewest seen: ${fewestReady})`);
    assert.ok(mostInstances <= 3, `at most one worker instance beyond the 2 wanted (most seen: ${mostInstances})`);

    const after = workerInstances(await sim.resourcesOf("default/roll"));
    assert.deepEqual(after.map((i) => i.machineType), ["s1.medium", "s1.medium"], "the pool's instances are of the new type");
    assert.ok(!after.some((i) => before.some((b) => b.id === i.id)), "every old instance was replaced");
    assert.equal(readyWorkerNodes("roll").length, 2);
    const status = cluster("roll").status;
    assert.deepEqual([status?.phase, status?.workers?.ready, status?.workers?.updated], ["Running", 2, 2]);
    assert.match(ok("get", "events", "--field-selector", "involvedObject.name=roll-work"), /RollingMachines/);
    ok("delete", "cluster", "roll", "--timeout=120s");
  });

  it("recovers from a machine type the cloud refuses once the spec names another", async () => {
    for (const zone of ZONES) await sim.admin.setCapacity(REGION, zone, "s1.large", 0);
    apply(manifest("picky", "s1.large", 2));
    const failed = await waitOperation("picky-create-1", "Failed");
    assert.equal(failed.status?.error?.code, "CreateMachineFailed");
    assert.match(failed.status?.error?.message ?? "", /insufficient s1\.large capacity/);
    const broken = cluster("picky").status;
    assert.deepEqual([broken?.phase, broken?.reason], ["Failed", "CreateMachineFailed"]);
    assert.deepEqual(workerInstances(await sim.resourcesOf("default/picky")), [], "the cloud made no worker instance");

    ok("patch", "cluster", "picky", "--type", "merge", "-p", JSON.stringify({ spec: { workers: [{ name: "work", connection: "east", machineType: "s1.small", replicas: 2 }] } }));
    await waitOperation("picky-update-2", "Succeeded", 90_000);
    const fixed = cluster("picky").status;
    assert.deepEqual([fixed?.phase, fixed?.workers?.ready, fixed?.workers?.updated], ["Running", 2, 2]);
    assert.deepEqual(workerInstances(await sim.resourcesOf("default/picky")).map((i) => i.machineType), ["s1.small", "s1.small"]);
    assert.equal(readyWorkerNodes("picky").length, 2);
    assert.deepEqual(
      ok("get", "machines", "-l", "slipway.dev/pool=picky-work", "-o", "jsonpath={.items[*].spec.machineType}").split(" "),
      ["s1.small", "s1.small"],
      "no machine of the refused type is left",
    );
    // The create failed for its own generation; the recovery came with another one, and is that one's.
    const create = operation("picky-create-1");
    assert.deepEqual([create.status?.phase, create.status?.recoveredTime], ["Failed", undefined]);
    ok("delete", "cluster", "picky", "--timeout=120s");
  });
});
